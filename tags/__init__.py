"""tags: hard negative captions for vision-language transformers.

Scene-graph parsing lives in the top-level :mod:`parsers` package, the task heads in
:mod:`heads`; this package holds the toolkit (modeling, negatives, mining, training,
evaluation and the ``tags`` command line).
"""

__version__ = "0.1.0"

# Heavy (torch) exports load on first access, so `import tags` stays fast for the CLI.
_LAZY_EXPORTS = {"TagsConfig": "tags.modeling", "TagsModel": "tags.modeling"}


def __getattr__(name: str):
    if name in _LAZY_EXPORTS:
        import importlib

        return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
