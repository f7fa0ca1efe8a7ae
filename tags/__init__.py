"""tags: hard negative captions for vision-language transformers.

Scene-graph parsing lives in the top-level :mod:`parsers` package, the task heads in
:mod:`heads`; this package holds the toolkit (modeling, negatives, mining, training,
evaluation and the ``tags`` command line).
"""

__version__ = "0.1.0"

from tags.core.lazy import lazy_exports

# Heavy (torch) exports load on first access, so `import tags` stays fast for the CLI.
__getattr__, __dir__ = lazy_exports(__name__, {"TagsConfig": "modeling", "TagsModel": "modeling"})
