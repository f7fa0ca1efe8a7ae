"""The testbed's length-sorted chunks (tags/testbed/inputs.py, itm_pass.py): rows forwarded
in chunks of about one length give the logits, WoD/WoC terms and gradients of one forward of
every row, in row order; ``holds`` matches its permutation definition."""

import itertools

import numpy as np
import torch
from test_self_negatives import _args, _refilled

from tags.benchmark.captions import holds, sample_claims
from tags.benchmark.minimal_pairs import single_edits
from tags.benchmark.scenes import generate_scene
from tags.testbed import inputs, itm_pass
from tags.testbed.world import role_swap


def test_length_chunks_cover_every_row_once_shortest_first():
    rows = [[1] * n for n in (5, 2, 9, 2, 7, 3, 5)]
    chunks = inputs.length_chunks(rows, 3)
    assert [len(c) for c in chunks] == [3, 3, 1]
    assert sorted(k for c in chunks for k in c) == list(range(len(rows)))
    lengths = [len(rows[k]) for c in chunks for k in c]
    assert lengths == sorted(lengths)
    assert chunks[0] == [1, 3, 5]  # ties keep row order
    assert inputs.length_chunks(rows, 7) == inputs.length_chunks(rows, None) == [list(range(7))]


def _dc_batch():
    """A TAGS-DC batch with its chosen negatives appended as the last rows."""
    model, _, _, (batch, chosen, positives, _) = _refilled(_args("tags-dc", refill="typed"))
    best = [r for r in chosen if r.rank == 0]
    assert best and any(len(r.ids) == len(positives[r.row]) for r in best)
    return model, batch, best, positives


def _pass(monkeypatch, rows: int | None):
    model, batch, best, positives = _dc_batch()
    monkeypatch.setattr(inputs, "CPU_TRAINING_ROWS", rows)
    model.zero_grad()
    logits, words = itm_pass.itm_pass(model, batch, torch.device("cpu"), best, positives)
    (logits.sum() + words.loss()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logits, words, grads


def test_itm_pass_in_chunks_equals_one_forward(monkeypatch):
    whole, whole_words, whole_grads = _pass(monkeypatch, None)
    chunked, words, grads = _pass(monkeypatch, 4)  # 6 positives, 6 random, the negatives
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)
    assert len(words.same) == len(whole_words.same) > 0
    torch.testing.assert_close(words.loss(), whole_words.loss(), atol=1e-5, rtol=1e-5)
    assert grads.keys() == whole_grads.keys() and any("wod" in n for n in grads)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, whole_grads[name], atol=1e-5, rtol=1e-4)


def test_itm_logits_keep_row_order_across_chunks():
    model, batch, _, _ = _dc_batch()
    model.eval()
    tokens = [inputs.tokenize(t) for t in batch.texts]
    with torch.no_grad():
        whole = model(**inputs.to_device(batch, None, "cpu"))
        chunked = inputs.itm_logits(model, tokens, batch.scene_index, batch, "cpu", chunk=3)
    assert len({len(t) for t in tokens}) > 1  # the chunks reorder the rows
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)


def _holds_by_permutations(claim, scene) -> bool:
    objects = scene.objects
    if claim.relation is None and len(claim.mentions) != len(objects):
        return False
    for assignment in itertools.permutations(range(len(objects)), len(claim.mentions)):
        matched = all(m.matches(objects[i]) for m, i in zip(claim.mentions, assignment))
        if matched and (claim.relation is None or claim.relation in scene.related(*assignment[:2])):
            return True
    return False


def test_holds_is_some_assignment_of_distinct_objects():
    checked = true = 0
    for image in range(60):
        scene, other = (generate_scene(image + k, 5, 224, 2, 4) for k in (0, 1000))
        for claim in sample_claims(scene, np.random.default_rng([3, image]), 3):
            edits = [claim, *(e for *_, e in single_edits(claim)), role_swap(claim)]
            for edited, where in itertools.product(filter(None, edits), (scene, other)):
                got = holds(edited, where)
                assert got == _holds_by_permutations(edited, where), (edited.text, where)
                checked, true = checked + 1, true + got
    assert checked > 5000 and 100 < true < checked / 2
