"""tags: hard negative captions for vision-language transformers.

Scene-graph parsing lives in the top-level :mod:`parsers` package, the task heads in
:mod:`heads`; this package holds the toolkit (modeling, negatives, mining, training,
evaluation and the ``tags`` command line).
"""

__version__ = "0.1.0"
