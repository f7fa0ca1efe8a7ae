"""SmolLM2-135M (mean token NLL, offline) as a held-out judge of a `tags export --refine`
folder on a seeded sample of each subset (the CPU scores about 9 texts/s): the share of
pairs whose positive it prefers (ties one half), in the sample and in its kept pairs.

    python -m scripts.research.refine_smollm2_sample NEG.jsonl OUT_sugarcrepe/ [N]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import torch

from tags.evaluation.refine import accuracy, lm_gaps
from tags.negatives.exports import read_records, subset_of
from tags.negatives.plausibility import CausalLM


def main() -> None:
    source, folder = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 600
    torch.set_num_threads(1)
    records = list(read_records(source))
    lm = CausalLM("smollm2")
    for name in ("replace_obj", "replace_att"):
        pairs = [(r["positive"], r["negative"]) for r in records if subset_of(r["edits"]) == name]
        items = json.loads(Path(folder, f"{name}.json").read_text(encoding="utf-8")).values()
        kept = {(v["caption"], v["negative_caption"]) for v in items}
        sample = random.Random(0).sample(pairs, min(n, len(pairs)))
        gaps = lm_gaps(sample, np.zeros(len(sample), int), "smollm2", lm)
        mask = np.array([p in kept for p in sample])
        print(
            f"{name}: sample {len(sample)}, kept {mask.sum()}; smollm2 before "
            f"{accuracy(gaps):.3f} after {accuracy(gaps[mask]):.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
