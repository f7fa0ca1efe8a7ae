"""Forked workers: results in input order, bounded in-flight work, and a dead worker
raising instead of leaving the parent waiting forever."""

from __future__ import annotations

import os

import pytest

from parsers.forking import WorkerDiedError, fork_map


def _square(x: int) -> int:
    return x * x


def _die_on_three(x: int) -> int:
    if x == 3:
        os._exit(9)  # as the out-of-memory killer would end it
    return x


def _pid(x: int) -> int:
    return os.getpid()


def test_results_come_back_in_input_order():
    assert list(fork_map(_square, range(40), 2)) == [x * x for x in range(40)]


def test_work_runs_in_forked_workers():
    pids = set(fork_map(_pid, range(8), 2))
    assert pids and os.getpid() not in pids and len(pids) <= 2


def test_a_dead_worker_raises_instead_of_hanging():
    with pytest.raises(WorkerDiedError, match="worker process died"):
        list(fork_map(_die_on_three, range(10), 2))


def test_inputs_are_drawn_lazily():
    drawn = []

    def items():
        for i in range(1000):
            drawn.append(i)
            yield i

    results = fork_map(_square, items(), 2, in_flight=2)
    assert next(results) == 0
    assert len(drawn) <= 2 * 2 + 2  # not the whole stream
    results.close()


def test_processes_must_be_positive():
    with pytest.raises(ValueError, match="processes"):
        list(fork_map(_square, [1], 0))


def _dying_worker(batch):
    os._exit(9)


def test_generate_stops_in_one_line_when_a_worker_dies(cli, tmp_path, monkeypatch):
    from _data import FLICKR_CAPTIONS

    monkeypatch.setattr("tags.negatives.pipeline._worker_run", _dying_worker)
    captions = tmp_path / "caps.txt"
    captions.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:20]) + "\n")
    out = tmp_path / "negatives.jsonl"
    done = cli("generate", "--captions", captions, "--out", out, "--num-workers", "2",
               "--no-progress")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "worker process died" in done.stderr and "--resume" in done.stderr
    assert "Traceback" not in done.stderr
