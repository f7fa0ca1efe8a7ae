"""Run under ``python -m torch.distributed.run --nproc_per_node 2`` (gloo, CPU), alone or
as a job of ``jobs.py`` (its ``run``; the suite's ``two_processes`` launch).

Checks that every miner's per-anchor losses and the feature gradients of the distributed
computation (local anchors vs gathered candidates) equal one process on the concatenated
batch (FNE in its warm-up and in its sampled branch), that FNE statistics are reduced over
ranks and that the FNE queue receives the keys of all ranks; FNE over retrieved pools (the
cross-encoder's, issue 16): statistics and per-anchor draws of two processes equal one process.
Exits non-zero on the first mismatch.
"""

from __future__ import annotations

import torch
from accelerate import Accelerator
from torch.testing import assert_close

from tags.core.distributed import all_gather_no_grad, gather_with_grad, get_rank, get_world_size
from tags.mining import (
    FeatureQueue,
    MiningLoss,
    batch_pairs,
    get_miner,
    right_anchor_similarities,
)

N, D = 8, 5
IDS = torch.tensor([0, 0, 1, 2, 2, 3, 4, 4])  # pair 3 and 4 share an image across ranks


def global_data() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    img = torch.nn.functional.normalize(torch.randn(N, D, generator=g, dtype=torch.float64), dim=1)
    txt = torch.nn.functional.normalize(torch.randn(N, D, generator=g, dtype=torch.float64), dim=1)
    return {
        "img": img,
        "txt": txt,
        "off_txt": torch.randn(N, D, generator=g, dtype=torch.float64),
        "off_img": torch.randn(N, D, generator=g, dtype=torch.float64),
        "pair_i2t": torch.rand(N, generator=g, dtype=torch.float64),
        "pair_t2i": torch.rand(N, generator=g, dtype=torch.float64),
        "target": torch.randn(N, N, generator=g, dtype=torch.float64),
    }


def extras(name: str, data: dict, img: torch.Tensor, txt: torch.Tensor, rows: slice) -> tuple:
    """Per-direction extra inputs for anchors ``rows`` (functions of the features where the
    method scores them with the model, so gradients flow through them too)."""
    if name == "aoq":
        return (
            {
                "offline_scores": (img * data["off_txt"][rows]).sum(1),
                "pair_scores": data["pair_i2t"][rows],
            },
            {
                "offline_scores": (txt * data["off_img"][rows]).sum(1),
                "pair_scores": data["pair_t2i"][rows],
            },
        )
    if name == "ndgl":
        t = data["target"]
        diag = t.diagonal()
        return (
            {"target_scores": t[rows], "target_positive": diag[rows]},
            {"target_scores": t.t()[rows], "target_positive": diag[rows]},
        )
    return {}, {}


def reference(
    name: str, data: dict, **kw
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One process, concatenated batch, square-matrix path."""
    img = data["img"].clone().requires_grad_(True)
    txt = data["txt"].clone().requires_grad_(True)
    miner = get_miner(name, **kw)
    pairs = batch_pairs(img @ txt.t(), IDS)
    ex_i2t, ex_t2i = extras(name, data, img, txt, slice(None))
    l_i2t = miner(*pairs.i2t, **ex_i2t).loss
    l_t2i = miner(*pairs.t2i, **ex_t2i).loss
    (l_i2t.mean() + l_t2i.mean()).backward()
    return l_i2t.detach(), l_t2i.detach(), img.grad, txt.grad


def distributed(name: str, data: dict, **kw) -> tuple[torch.Tensor, ...]:
    rank, world = get_rank(), get_world_size()
    b = N // world
    rows = slice(rank * b, (rank + 1) * b)
    img = data["img"][rows].clone().requires_grad_(True)
    txt = data["txt"][rows].clone().requires_grad_(True)
    ex_i2t, ex_t2i = extras(name, data, img, txt, rows)
    loss_fn = MiningLoss(name, **kw)
    out = loss_fn(img, txt, IDS[rows], i2t_extra=ex_i2t, t2i_extra=ex_t2i)
    # loss_fn.loss is the local mean; divide by the world size so that the sum over ranks
    # (what gather_with_grad's backward differentiates) is the global mean.
    (out.loss / world).backward()
    l_i2t = all_gather_no_grad(out.i2t.loss.detach())
    l_t2i = all_gather_no_grad(out.t2i.loss.detach())
    return l_i2t, l_t2i, all_gather_no_grad(img.grad), all_gather_no_grad(txt.grad)


def check_miners(data: dict) -> None:
    cases = [
        ("all", {}),
        ("hardest", {}),
        ("semi_hard", {}),
        ("topk", {"k": 3}),
        ("selhn", {"eps": 0.3}),
        ("aoq", {}),
        ("ndgl", {"temperature": 0.5}),
        ("fne", {}),  # no statistics yet: hardest-negative warm-up
    ]
    for name, kw in cases:
        ref = reference(name, data, **kw)
        got = distributed(name, data, **kw)
        for what, r, g in zip(("i2t loss", "t2i loss", "image grad", "text grad"), ref, got):
            assert_close(
                g, r, rtol=1e-10, atol=1e-12, msg=lambda m, n=name, w=what: f"{n} {w}: {m}"
            )


def check_fne_statistics(data: dict) -> None:
    rank, world = get_rank(), get_world_size()
    b = N // world
    # captions close to their images, so that several pairs are "right" (win row and column)
    txt_all = torch.nn.functional.normalize(data["img"] + 0.3 * data["txt"], dim=1)
    full = data["img"] @ txt_all.t()
    pos, neg = right_anchor_similarities(full, IDS)  # single process, no reduction
    assert pos.numel() >= 3, "test data should have several right anchors"

    def sums(x: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            [torch.tensor(float(x.numel()), dtype=torch.float64), x.sum(), (x * x).sum()]
        )

    miner = get_miner("fne", min_count=1)
    local = slice(rank * b, (rank + 1) * b)
    img = gather_with_grad(data["img"][local])
    txt = gather_with_grad(txt_all[local])
    miner.observe(img @ txt.t(), IDS, anchors=torch.arange(rank * b, (rank + 1) * b))
    assert_close(miner.stats.pos, sums(pos))
    assert_close(miner.stats.neg, sums(neg))
    miner.observe(full, IDS, anchors=torch.arange(rank * b, (rank + 1) * b))  # same batch again
    assert_close(miner.stats.pos, 2 * sums(pos))
    assert miner.ready


def check_fne_sampled(data: dict) -> None:
    """FNE's sampled branch (statistics ready, per-anchor uniforms): two processes give the
    losses, draws and gradients of one process on the concatenated batch."""
    rank, world = get_rank(), get_world_size()
    b = N // world
    rows = slice(rank * b, (rank + 1) * b)
    txt_all = torch.nn.functional.normalize(data["img"] + 0.3 * data["txt"], dim=1)
    g = torch.Generator().manual_seed(7)
    u_i2t = torch.rand(N, generator=g, dtype=torch.float64)
    u_t2i = torch.rand(N, generator=g, dtype=torch.float64)
    kw = {"min_count": 1, "margin": 2.0, "threshold": 1.0}  # every negative kept, "easy" weight

    img = data["img"].clone().requires_grad_(True)
    txt = txt_all.clone().requires_grad_(True)
    miner = get_miner("fne", **kw)
    own = torch.arange(rank * b, (rank + 1) * b)
    miner.observe(img.detach() @ txt.detach().t(), IDS, anchors=own)  # summed over the ranks
    assert miner.ready
    pairs = batch_pairs(img @ txt.t(), IDS)
    ref_i2t = miner(*pairs.i2t, uniforms=u_i2t)
    ref_t2i = miner(*pairs.t2i, uniforms=u_t2i)
    (ref_i2t.loss.mean() + ref_t2i.loss.mean()).backward()
    assert (ref_i2t.branch == 1).all() and (ref_t2i.branch == 1).all()  # all sampled
    hardest = pairs.i2t.scores.masked_fill(~pairs.i2t.negative_mask, -2).argmax(1)
    assert (ref_i2t.index != hardest).any(), "draws should not all be the hardest"

    local_img = data["img"][rows].clone().requires_grad_(True)
    local_txt = txt_all[rows].clone().requires_grad_(True)
    loss_fn = MiningLoss("fne", **kw)
    full = gather_with_grad(local_img.detach()) @ gather_with_grad(local_txt.detach()).t()
    loss_fn.miner.observe(full, IDS, anchors=own)
    out = loss_fn(
        local_img, local_txt, IDS[rows],
        i2t_extra={"uniforms": u_i2t[rows]}, t2i_extra={"uniforms": u_t2i[rows]},
    )  # fmt: skip
    (out.loss / world).backward()
    assert_close(loss_fn.miner.stats.pos, miner.stats.pos)
    for what, r, got in (
        ("i2t index", ref_i2t.index, all_gather_no_grad(out.i2t.index)),
        ("t2i index", ref_t2i.index, all_gather_no_grad(out.t2i.index)),
        ("i2t loss", ref_i2t.loss.detach(), all_gather_no_grad(out.i2t.loss.detach())),
        ("t2i loss", ref_t2i.loss.detach(), all_gather_no_grad(out.t2i.loss.detach())),
        ("image grad", img.grad, all_gather_no_grad(local_img.grad)),
        ("text grad", txt.grad, all_gather_no_grad(local_txt.grad)),
    ):
        assert_close(got, r, rtol=1e-10, atol=1e-12, msg=lambda m, w=what: f"fne sampled {w}: {m}")


def check_queue(data: dict) -> None:
    rank, world = get_rank(), get_world_size()
    b = N // world
    dist_q = FeatureQueue(size=10, image_dim=D).double()
    for step in range(3):  # 3 x 8 keys into 10 slots: wraps around twice
        img = data["img"] + step
        txt = data["txt"] - step
        ids = IDS + 10 * step
        rows = slice(rank * b, (rank + 1) * b)
        dist_q.enqueue(img[rows], txt[rows], ids[rows])
    # one process enqueueing the concatenated batches would hold the last 10 keys:
    expected_img = torch.cat([data["img"] + s for s in range(3)])[-10:]
    expected_ids = torch.cat([IDS + 10 * s for s in range(3)])[-10:]
    got_img, _, got_ids = dist_q.contents()
    assert_close(got_img, expected_img)
    assert torch.equal(got_ids, expected_ids)
    assert int(dist_q.ptr) == (3 * N) % 10 and len(dist_q) == 10


def check_fne_pool() -> None:
    """Pool statistics all-reduced over the ranks (each holding half of the anchors) equal one
    process observing every anchor; the draws of each anchor (generator seeded by its global
    index) are the same."""
    from tags.mining.fne_pool import draw_from_pool, observe_pool, pool_right_anchors

    rank, world = get_rank(), get_world_size()
    b = N // world
    g = torch.Generator().manual_seed(5)
    pos = 0.7 + 0.3 * torch.rand(N, generator=g, dtype=torch.float64)
    i2t = 0.8 * torch.rand(N, 10, generator=g, dtype=torch.float64)
    t2i = 0.8 * torch.rand(N, 10, generator=g, dtype=torch.float64)
    mask = torch.rand(N, 10, generator=g) > 0.1

    def gens(rows: range) -> list[torch.Generator]:
        return [torch.Generator().manual_seed(100 + i) for i in rows]

    rows = slice(rank * b, (rank + 1) * b)
    single = get_miner("fne", min_count=1)
    # one process: its own (unreduced) sums over every anchor
    p, n = pool_right_anchors(pos, i2t, mask, t2i, mask)
    assert p.numel() >= 3, "test data should have several right anchors"
    single.stats.pos += single.stats._sums(p)
    single.stats.neg += single.stats._sums(n)
    dist_miner = get_miner("fne", min_count=1)
    observe_pool(dist_miner, pos[rows], i2t[rows], mask[rows], t2i[rows], mask[rows])
    assert_close(dist_miner.stats.pos, single.stats.pos)
    assert_close(dist_miner.stats.neg, single.stats.neg)
    assert dist_miner.ready
    ref = draw_from_pool(single, i2t, pos, mask, 4, gens(range(N)))
    got = draw_from_pool(dist_miner, i2t[rows], pos[rows], mask[rows], 4, gens(range(N))[rows])
    assert torch.equal(all_gather_no_grad(got.index), ref.index), "fne pool draws differ"
    assert (ref.branch == 1).any(), "some anchors should be in the sampled branch"


def run() -> Accelerator:
    """Every check above (raises on the first mismatch)."""
    accelerator = Accelerator(cpu=True)
    assert accelerator.num_processes == 2, f"expected 2 processes, got {accelerator.num_processes}"
    data = global_data()
    check_miners(data)
    check_fne_statistics(data)
    check_fne_sampled(data)
    check_queue(data)
    check_fne_pool()
    return accelerator


def main() -> None:
    accelerator = run()
    accelerator.wait_for_everyone()
    print(f"rank {accelerator.process_index}: OK", flush=True)
    # tear gloo down explicitly: exiting with a live process group can abort at shutdown
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
