"""NDGL: reference loading, margin KL and hardest-negative rectification by hand."""

import math

import numpy as np
import pytest
import torch

from tags.mining import ReferenceScores, batch_pairs, get_miner, load_reference_scores


def _softmax(xs):
    e = [math.exp(x) for x in xs]
    return [v / sum(e) for v in e]


def _kl(q, p):
    return sum(qi * math.log(qi / pi) for qi, pi in zip(q, p))


def test_load_reference_scores_mean_of_pt_npy_and_dict(tmp_path):
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    torch.save(a, tmp_path / "a.pt")
    np.save(tmp_path / "b.npy", np.array([[3.0, 0.0], [1.0, 0.0]], dtype=np.float32))
    torch.save({"scores": torch.tensor([[2.0, 1.0], [2.0, 2.0]])}, tmp_path / "c.pt")
    mean = load_reference_scores([tmp_path / "a.pt", tmp_path / "b.npy", tmp_path / "c.pt"])
    torch.testing.assert_close(mean, torch.tensor([[2.0, 1.0], [2.0, 2.0]]))
    np.save(tmp_path / "bad.npy", np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(ValueError):
        load_reference_scores([tmp_path / "a.pt", tmp_path / "bad.npy"])


def test_reference_batch_slicing():
    ref = ReferenceScores(torch.arange(20, dtype=torch.float32).reshape(4, 5))
    sub = ref.batch(torch.tensor([2, 0]), torch.tensor([4, 1]))
    assert sub.tolist() == [[14.0, 11.0], [4.0, 1.0]]
    pairs = batch_pairs(sub, [0, 1])
    assert pairs.i2t.positive.tolist() == [14.0, 1.0]


def test_exact_values():
    # anchor 0: predicted hardest = col 1 (.6), target hardest = col 2 (.7) -> rectification
    # anchor 1: both hardest at col 1 -> no rectification
    scores = torch.tensor([[0.75, 0.6, 0.2], [0.0, 0.5, 0.3]], dtype=torch.float64)
    pos = torch.tensor([0.75, 0.9], dtype=torch.float64)
    mask = torch.tensor([[False, True, True], [False, True, True]])
    target = torch.tensor([[0.9, 0.3, 0.7], [0.0, 0.6, 0.1]], dtype=torch.float64)
    t_pos = torch.tensor([0.9, 0.9], dtype=torch.float64)
    for temperature in (1.0, 0.5):
        miner = get_miner("ndgl", temperature=temperature, lambda_mr=2.0, lambda_hnr=3.0)
        out = miner(scores, pos, mask, target_scores=target, target_positive=t_pos)
        t = temperature
        kl0 = _kl(_softmax([0.6 / t, 0.2 / t]), _softmax([0.15 / t, 0.55 / t]))
        kl1 = _kl(_softmax([0.3 / t, 0.8 / t]), _softmax([0.4 / t, 0.6 / t]))
        online = [0.2 + 0.6 - 0.75, 0.0]  # hardest: .05 and [.2+.5-.9]+ = 0
        hnr = [0.01 + 0.6 - 0.2, 0.0]
        expected = [online[i] + 2.0 * kl + 3.0 * hnr[i] for i, kl in enumerate((kl0, kl1))]
        torch.testing.assert_close(
            out.extras["margin_kl"], torch.tensor([kl0, kl1], dtype=torch.float64)
        )
        torch.testing.assert_close(out.extras["hnr"], torch.tensor(hnr, dtype=torch.float64))
        torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))
        assert out.extras["target_index"].tolist() == [2, 1]


def test_hnr_gradient_pushes_target_hardest_up():
    # positive .9: the online hinge [.2 + .6 - .9]+ is 0, so only L_HNR has a gradient
    scores = torch.tensor([[0.9, 0.6, 0.2]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[False, True, True]])
    target = torch.tensor([[0.9, 0.3, 0.7]], dtype=torch.float64)
    miner = get_miner("ndgl", lambda_mr=0.0, lambda_hnr=1.0)
    out = miner(
        scores, scores[:, 0].detach(), mask, target_scores=target, target_positive=target[:, 0]
    )
    assert out.extras["online"].item() == 0.0
    out.loss.sum().backward()
    # d L_HNR / d s = +1 at the predicted hardest (col 1), -1 at the target hardest (col 2)
    assert scores.grad[0].tolist() == pytest.approx([0.0, 1.0, -1.0])


def test_masked_target_hardest_ignored_and_missing_inputs_raise():
    scores = torch.tensor([[0.5, 0.4, 0.1]], dtype=torch.float64)
    mask = torch.tensor([[False, True, True]])
    target = torch.tensor([[0.99, 0.2, 0.3]], dtype=torch.float64)  # col 0 is the positive
    out = get_miner("ndgl")(
        scores, scores[:, 0], mask, target_scores=target, target_positive=target[:, 0]
    )
    assert out.extras["target_index"].tolist() == [2]
    with pytest.raises(ValueError):
        get_miner("ndgl")(scores, scores[:, 0], mask)


def test_paper_lambdas_by_default_and_both_kl_directions():
    miner = get_miner("ndgl")
    assert (miner.lambda_mr, miner.lambda_hnr, miner.gamma) == (100.0, 0.5, 0.01)
    assert miner.kl_direction == "target||predicted"
    scores = torch.tensor([[0.75, 0.6, 0.2, 0.5]], dtype=torch.float64)
    mask = torch.tensor([[False, True, True, True]])
    target = torch.tensor([[0.9, 0.3, 0.7, 0.1]], dtype=torch.float64)
    args = dict(target_scores=target, target_positive=target[:, 0])
    p, q = _softmax([0.15, 0.55, 0.25]), _softmax([0.6, 0.2, 0.8])  # predicted, target margins
    forward = miner(scores, scores[:, 0], mask, **args)
    backward = get_miner("ndgl", kl_direction="predicted||target")(
        scores, scores[:, 0], mask, **args
    )
    assert forward.extras["margin_kl"].item() == pytest.approx(_kl(q, p))
    assert backward.extras["margin_kl"].item() == pytest.approx(_kl(p, q))
    assert _kl(q, p) != pytest.approx(_kl(p, q))
    online, hnr = 0.2 + 0.6 - 0.75, 0.01 + 0.6 - 0.2
    assert forward.loss.item() == pytest.approx(online + 100.0 * _kl(q, p) + 0.5 * hnr)
    with pytest.raises(ValueError, match="kl_direction"):
        get_miner("ndgl", kl_direction="sideways")
