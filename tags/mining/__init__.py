"""Hard-negative mining strategies as interchangeable loss objectives.

``get_miner(name, **hparams)`` builds a registered miner; ``miner(scores, positive,
negative_mask, **extra)`` returns a :class:`MinerOutput` whose ``loss`` is per anchor.
See ``docs/mining.md``. Importing this package registers every built-in miner.

Layer: beside ``tags.evaluation``, below training. May import ``tags.core`` only.
"""

from tags.mining.aoq import AOQMiner, OfflineNegatives, build_offline_negatives
from tags.mining.base import Miner, MinerOutput
from tags.mining.fne import FNE_PRESETS, FNEMiner, FNEStatistics, right_anchor_similarities
from tags.mining.loss import MiningLoss, MiningLossOutput, create_loss
from tags.mining.memory import FeatureQueue, MomentumEncoder
from tags.mining.ndgl import NDGLMiner, ReferenceScores, load_reference_scores
from tags.mining.pairs import BatchPairs, DirectionPairs, batch_pairs, direction_pairs
from tags.mining.registry import create_miner, get_miner, list_miners, register_miner
from tags.mining.selhn import SelHNMiner
from tags.mining.triplet import AllNegativesMiner, HardestMiner, SemiHardMiner, TopKMiner

__all__ = [
    "FNE_PRESETS",
    "AOQMiner",
    "AllNegativesMiner",
    "BatchPairs",
    "DirectionPairs",
    "FNEMiner",
    "FNEStatistics",
    "FeatureQueue",
    "HardestMiner",
    "Miner",
    "MinerOutput",
    "MiningLoss",
    "MiningLossOutput",
    "MomentumEncoder",
    "NDGLMiner",
    "OfflineNegatives",
    "ReferenceScores",
    "SelHNMiner",
    "SemiHardMiner",
    "TopKMiner",
    "batch_pairs",
    "build_offline_negatives",
    "create_loss",
    "create_miner",
    "direction_pairs",
    "get_miner",
    "list_miners",
    "load_reference_scores",
    "register_miner",
    "right_anchor_similarities",
]
