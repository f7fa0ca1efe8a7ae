"""Retrieval metrics on hand-made matrices: ranks, ties, medr/meanr, RSum, k-fold averaging."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tags.evaluation import (
    METRIC_KEYS,
    fold_bounds,
    i2t_ranks,
    kfold_metrics,
    retrieval_metrics,
    t2i_ranks,
)

# 3 images, 10 texts; image 0 has 1 caption (text 1), image 1 has 7, image 2 has 2; the
# captions of an image are not adjacent.
TXT2IMG = [1, 0, 1, 1, 2, 1, 1, 2, 1, 1]
SIMS = [
    [0.5, 0.5, 0.5, 0.1, 0.7, 0.0, 0.0, 0.0, 0.0, 0.05],
    [0.1, 0.9, 0.2, 0.3, 0.8, 0.0, 0.0, 0.7, 0.6, 0.05],
    [0.95, 0.2, 0.3, 0.4, 0.9, 0.0, 0.1, 0.2, 0.35, 0.0],
]


def test_ranks_of_a_hand_made_matrix_with_ties():
    # row 0: text 4 is higher, text 0 ties at a lower index (counts), text 2 ties at a
    # higher index (does not): rank 2 (optimistic would say 1, pessimistic 3)
    # row 1: texts 1, 4, 7 beat its best caption (text 8): rank 3
    # row 2: text 0 beats its best caption (text 4): rank 1
    assert i2t_ranks(SIMS, TXT2IMG).tolist() == [2, 3, 1]
    # column 5 = [0, 0, 0], image 1: image 0 ties at a lower index -> 1
    # column 6 = [0, 0, 0.1], image 1: image 2 higher, image 0 tied lower -> 2
    # column 9 = [0.05, 0.05, 0], image 1: image 0 tied lower -> 1
    assert t2i_ranks(SIMS, TXT2IMG).tolist() == [2, 1, 2, 1, 0, 1, 2, 1, 0, 1]


def test_metrics_of_a_hand_made_matrix():
    metrics = retrieval_metrics(SIMS, TXT2IMG)
    assert list(metrics) == list(METRIC_KEYS)
    expected = {
        "i2t_r1": 0.0,
        "i2t_r5": 100.0,
        "i2t_r10": 100.0,
        "t2i_r1": 20.0,  # ranks [2,1,2,1,0,1,2,1,0,1]: two zeros out of ten
        "t2i_r5": 100.0,
        "t2i_r10": 100.0,
        "rsum": 420.0,
        "i2t_medr": 3.0,  # median of [2, 3, 1] = 2 -> 3
        "i2t_meanr": 3.0,  # mean 2 -> 3
        "t2i_medr": 2.0,  # median of [0,0,1,1,1,1,1,2,2,2] = 1 -> 2
        "t2i_meanr": 2.1,  # mean 1.1 -> 2.1
    }
    assert metrics == pytest.approx(expected)


def test_torch_and_numpy_inputs_agree():
    reference = retrieval_metrics(np.array(SIMS), np.array(TXT2IMG))
    assert retrieval_metrics(torch.tensor(SIMS), torch.tensor(TXT2IMG)) == reference
    assert retrieval_metrics(torch.tensor(SIMS, dtype=torch.bfloat16), TXT2IMG)["rsum"] > 0


# 12 images; image 0 has 1 caption, image 1 has 7, the others 2 each (28 texts).
COUNTS = [1, 7] + [2] * 10
I2T_TARGET = [0, 1, 4, 5, 9, 10, 15, 0, 2, 20, 3, 7]
T2I_TARGET = [
    0,
    5,
    10,
    3,
    8,
    1,
    6,
    11,
    4,
    9,
    2,
    7,
    0,
    5,
    10,
    3,
    8,
    1,
    6,
    11,
    4,
    9,
    2,
    7,
    0,
    5,
    10,
    3,
]


def built_matrices() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row matrix with image i's best caption at rank I2T_TARGET[i] (its other captions
    score lowest), column matrix with caption j's image at rank T2I_TARGET[j]."""
    txt2img = np.repeat(np.arange(12), COUNTS)
    rows = np.zeros((12, 28))
    for i, rank in enumerate(I2T_TARGET):
        gt = np.flatnonzero(txt2img == i)
        rows[i, gt] = -1.0
        rows[i, gt[-1]] = 0.5
        rows[i, np.flatnonzero(txt2img != i)[:rank]] = 1.0
    cols = np.zeros((12, 28))
    for j, rank in enumerate(T2I_TARGET):
        cols[txt2img[j], j] = 0.5
        cols[np.flatnonzero(np.arange(12) != txt2img[j])[:rank], j] = 1.0
    return rows, cols, txt2img


def test_recalls_median_and_mean_on_a_built_matrix():
    rows, cols, txt2img = built_matrices()
    assert i2t_ranks(rows, txt2img).tolist() == I2T_TARGET
    assert t2i_ranks(cols, txt2img).tolist() == T2I_TARGET
    metrics = retrieval_metrics(rows, txt2img, t2i_sims=cols)
    expected = {
        "i2t_r1": 100 * 2 / 12,  # ranks 0, 0
        "i2t_r5": 100 * 6 / 12,  # 0 1 4 0 2 3
        "i2t_r10": 100 * 9 / 12,  # + 5 9 7
        "i2t_medr": 5.0,  # sorted ... 4, 5 ... -> median 4.5 -> floor 4 -> 5
        "i2t_meanr": 76 / 12 + 1,
        "t2i_r1": 100 * 3 / 28,
        "t2i_r5": 100 * 12 / 28,
        "t2i_r10": 100 * 23 / 28,
        "t2i_medr": 6.0,  # 14th and 15th smallest are both 5
        "t2i_meanr": 150 / 28 + 1,
    }
    expected["rsum"] = sum(expected[f"{d}_r{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
    assert metrics == pytest.approx(expected)


def test_tie_rule_is_a_stable_argsort_of_negated_scores():
    rng = np.random.default_rng(0)
    sims = rng.integers(0, 3, size=(9, 20)).astype(np.float32)  # many ties
    sims[sims == 0] = -np.inf  # infinite scores tie too
    txt2img = rng.permutation(np.arange(20) % 9)
    expected_i2t = []
    for i in range(9):
        order = np.argsort(-sims[i], kind="stable")
        expected_i2t.append(min(np.flatnonzero(np.isin(order, np.flatnonzero(txt2img == i)))))
    expected_t2i = [
        int(np.flatnonzero(np.argsort(-sims[:, j], kind="stable") == txt2img[j])[0])
        for j in range(20)
    ]
    assert i2t_ranks(sims, txt2img).tolist() == expected_i2t
    assert t2i_ranks(sims, txt2img).tolist() == expected_t2i


def test_ranks_are_chunk_independent(monkeypatch):
    rng = np.random.default_rng(1)
    sims = rng.normal(size=(13, 40))
    txt2img = rng.permutation(np.arange(40) % 13)
    whole = (i2t_ranks(sims, txt2img), t2i_ranks(sims, txt2img))
    monkeypatch.setattr("tags.evaluation.metrics._CHUNK_ELEMENTS", 50)  # ~1 row per chunk
    assert np.array_equal(i2t_ranks(sims, txt2img), whole[0])
    assert np.array_equal(t2i_ranks(sims, txt2img), whole[1])


# ---------------------------------------------------------------------- k-fold


def random_fold(rng: np.random.Generator, n_images: int) -> tuple[np.ndarray, np.ndarray]:
    counts = rng.integers(1, 8, size=n_images)  # 1..7 captions per image
    txt2img = rng.permutation(np.repeat(np.arange(n_images), counts))
    return rng.normal(size=(n_images, txt2img.size)), txt2img


def test_kfold_equals_the_mean_of_independently_built_folds():
    """Five folds built on their own, then assembled into one matrix (texts of all folds
    shuffled together, random scores between folds): kfold_metrics must see only each fold."""
    rng = np.random.default_rng(0)
    folds = [random_fold(rng, 4) for _ in range(5)]
    n_texts = sum(t.size for _, t in folds)
    position = rng.permutation(n_texts)  # where each fold's texts go in the big matrix
    big = rng.normal(size=(20, n_texts)) * 10
    txt2img = np.empty(n_texts, dtype=np.int64)
    offset = 0
    for f, (sims, t2i) in enumerate(folds):
        cols = position[offset : offset + t2i.size]
        offset += t2i.size
        big[4 * f : 4 * f + 4, cols] = sims
        txt2img[cols] = t2i + 4 * f
    per_fold = [retrieval_metrics(sims, t2i) for sims, t2i in folds]
    expected = {key: np.mean([m[key] for m in per_fold]) for key in METRIC_KEYS}
    assert kfold_metrics(big, txt2img, folds=5) == pytest.approx(expected)
    # the scores between folds do matter when the split is taken at once
    assert retrieval_metrics(big, txt2img) != pytest.approx(expected)


def test_kfold_with_uneven_captions_differs_from_five_per_image_arithmetic():
    rng = np.random.default_rng(3)
    sims, txt2img = random_fold(rng, 10)
    order = np.argsort(txt2img, kind="stable")  # contiguous captions, 1..7 per image
    sims, txt2img = sims[:, order], txt2img[order]
    result = kfold_metrics(sims, txt2img, folds=2)
    first = txt2img < 5
    expected = [
        retrieval_metrics(sims[:5][:, first], txt2img[first]),
        retrieval_metrics(sims[5:][:, ~first], txt2img[~first] - 5),
    ]
    assert result == pytest.approx({k: (expected[0][k] + expected[1][k]) / 2 for k in METRIC_KEYS})


def test_one_fold_is_the_whole_matrix_and_bounds_are_balanced():
    sims, txt2img = random_fold(np.random.default_rng(4), 7)
    assert kfold_metrics(sims, txt2img, folds=1) == retrieval_metrics(sims, txt2img)
    assert fold_bounds(5000, 5) == [(i * 1000, (i + 1) * 1000) for i in range(5)]
    assert fold_bounds(7, 3) == [(0, 3), (3, 5), (5, 7)]


@pytest.mark.parametrize(
    ("sims", "txt2img", "message"),
    [
        (np.zeros((2, 3)), [0, 1], "entries for 3 texts"),
        (np.zeros((2, 3)), [0, 1, 2], r"in \[0, 2\)"),
        (np.zeros((3, 3)), [0, 1, 1], "have no caption"),
        (np.full((2, 2), np.nan), [0, 1], "NaN"),
        (np.zeros(4), [0, 1, 2, 3], "n_images, n_texts"),
    ],
)
def test_bad_inputs_raise(sims, txt2img, message):
    with pytest.raises(ValueError, match=message):
        retrieval_metrics(sims, txt2img)
