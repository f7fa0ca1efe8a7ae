"""Research code shared by the drivers under ``scripts/``, kept out of the ``tags`` package
(as ``open_clip_train`` beside ``open_clip``): it may import ``tags``, never the reverse.

- :mod:`.faults`: fault injection for ``tags`` commands (a warm fork server), used by
  ``scripts/fault_campaign.py`` and ``tests/test_faults.py``;
- :mod:`.finetune_table`: the HF fine-tuning comparison's tables, goal check and README
  block (``scripts/benchmarks/hf_finetune.py``);
- :mod:`.finetune_probes`: that comparison's extra scores: the training negatives ranked
  below their caption, and the minimal pairs exported and scored as SugarCrepe;
- :mod:`.hf_tiny`: tiny random Hugging Face checkpoints (BLIP, CLIP, a causal LM) for the
  campaign and the tests;
- :mod:`.quality`: the text-only measures of ``scripts/benchmarks/negative_quality.py``;
- :mod:`.controls`: the hidden controls of ``scripts/benchmarks/blind_read.py``.
- :mod:`.headroom`: the shapes benchmark's headroom gate (a driver itself: fresh scenes every
  step, plain vs oracle negatives, learning curves per minimal-pair kind).

The tests import it too (``tests/conftest.py`` puts ``scripts/`` on ``sys.path``).

A driver puts ``scripts/`` on ``sys.path`` in one line and imports ``research.<module>``.
"""
