"""Training data: image-text pairs with region features, collation, negative pools.

- ``captions``: caption corpora (Karpathy JSON, SCAN precomp, JSONL) as image groups;
- ``dataset``: :class:`ImageTextDataset` (one item per caption) and :class:`EpochSampler`;
- ``collate``: :func:`pad_text`, :func:`pad_regions`, :class:`PairCollator`;
- ``negatives``: :class:`NegativePools`, fixed negative pools (``data.negatives``) from a
  ``tags generate`` JSONL, NegCLIP CSV, SugarCrepe JSON, Parquet or a ``datasets`` folder
  (a reader registry), matched to the training captions by :func:`load_negative_pools`;
- ``synthetic``: :func:`write_synthetic_dataset`, random features + captions for tests.

Layer: above backends. May import ``tags.backends``, ``tags.modeling``, ``parsers``,
``heads`` and ``tags.core``.
"""

from tags.data.captions import load_image_groups
from tags.data.collate import PairCollator, pad_regions, pad_text
from tags.data.dataset import EpochSampler, ImageTextDataset, build_dataset
from tags.data.negatives import NegativePools, load_negative_pools
from tags.data.synthetic import write_synthetic_dataset

__all__ = [
    "EpochSampler",
    "ImageTextDataset",
    "NegativePools",
    "PairCollator",
    "build_dataset",
    "load_image_groups",
    "load_negative_pools",
    "pad_regions",
    "pad_text",
    "write_synthetic_dataset",
]
