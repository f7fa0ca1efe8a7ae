"""Fault injection (``scripts/research/faults.py``): ``kill -9`` at seeded points of ``tags
generate`` and ``tags train`` then a resume (byte-identical output, bit-identical weights), a
full disk (nothing lost, nothing half written, one line), two runs on one output (exactly one
runs), and a table of bad inputs for every subcommand (exit 2, one line naming the file or
option, no traceback, nothing left behind). ``scripts/fault_campaign.py`` runs a larger
table. Every run is a child forked from one warm process, so the module takes seconds."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from _data import FLICKR_CAPTIONS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # research package
from research.faults import Kill, Zygote, one_line_problem, request, small_disk, tree

FAST = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress", "--num-workers", "1"]
TRAIN = [
    "train", "--config", str(Path(__file__).resolve().parents[1] / "scripts" / "configs" /
    "tiny_vse_cpu.yaml"), "tensorboard=false", "progress_bar=false", "save_every=2",
    "log_every=1",
]  # fmt: skip
SEED = random.Random(29)
#: kill points of generate: the N-th caption write (part of it written first), an atomic rename
GENERATE_KILLS = [
    Kill("write", SEED.randint(1, 12), SEED.choice([0.0, 0.4, 0.9])) for _ in range(2)
] + [Kill("replace", 1)]
#: kill points of train (6 steps, a checkpoint every 2): a log row, inside a checkpoint save
TRAIN_KILLS = [Kill("log", SEED.randint(2, 5)), Kill("checkpoint", 2)]


@pytest.fixture(scope="module")
def zygote(early_starts):
    """The zygote conftest started with the session (warming up meanwhile), or a new one."""
    with early_starts.pop("zygote", None) or Zygote() as warm:
        yield warm


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "caps.txt"
    path.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:40]) + "\n")
    return path


@pytest.fixture(scope="module")
def reference(zygote, corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reference") / "neg.jsonl"
    outcome = zygote.run(["generate", "--captions", corpus, "--out", out, *FAST])
    assert outcome.code == 0, outcome.stderr
    return out


@pytest.fixture(scope="module")
def trained(zygote, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("trained") / "run"
    outcome = zygote.run([*TRAIN, f"output_dir={run}"])
    assert outcome.code == 0, outcome.stderr
    return run


def generate(corpus: Path, out: Path, *more: str) -> list[str]:
    return ["generate", "--captions", str(corpus), "--out", str(out), *FAST, *more]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".lock")))


# ---------------------------------------------------------------------- kill -9 and resume
@pytest.mark.parametrize("kill", GENERATE_KILLS, ids=str)
def test_generate_killed_then_resumed_is_byte_identical(zygote, corpus, reference, tmp_path, kill):
    out = tmp_path / "neg.jsonl"
    assert zygote.run(generate(corpus, out), kill=kill).killed
    resumed = zygote.run(generate(corpus, out, "--resume"))
    assert resumed.code == 0, resumed.stderr
    assert out.read_bytes() == reference.read_bytes()
    assert leftovers(tmp_path) == []


def _weights(run: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(run / "model" / "model.safetensors")


def _losses(run: Path) -> list[tuple[int, float]]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss/total"]) for r in rows]


@pytest.mark.parametrize("kill", TRAIN_KILLS, ids=str)
def test_train_killed_then_resumed_has_identical_weights(zygote, trained, tmp_path, kill):
    run = tmp_path / "run"
    assert zygote.run([*TRAIN, f"output_dir={run}"], kill=kill).killed
    resumed = zygote.run([*TRAIN, f"output_dir={run}", "resume_from=latest"])
    assert resumed.code == 0, resumed.stderr
    straight, again = _weights(trained), _weights(run)
    assert straight.keys() == again.keys()
    assert all(bool((straight[k] == again[k]).all()) for k in straight)  # bit-identical
    assert _losses(run) == _losses(trained)  # every step logged once, the same losses


# ---------------------------------------------------------------------- stopped by a signal
@pytest.mark.parametrize("how", ["TERM", "HUP"])
def test_a_stopped_generate_removes_its_lock_and_a_killed_ones_does_not_block(
    zygote, corpus, reference, tmp_path, how
):
    """SIGTERM / SIGHUP: the run unwinds (exit 128 + N, one line), its lock file removed.
    SIGKILL leaves the file, unlocked: the next run takes it over and removes it."""
    import signal

    out = tmp_path / "neg.jsonl"
    stopped = zygote.run(generate(corpus, out), kill=Kill("write", 4, 0.4, how))
    assert stopped.code == 128 + getattr(signal, f"SIG{how}"), stopped.stderr
    assert f"terminated (SIG{how})" in stopped.stderr and "Traceback" not in stopped.stderr
    assert leftovers(tmp_path) == []
    assert zygote.run(generate(corpus, out, "--resume"), kill=Kill("write", 3)).killed
    assert leftovers(tmp_path) == ["neg.jsonl.lock"]  # SIGKILL: nothing can remove it
    refused = zygote.run(generate(corpus, out))  # not blocked: refused for the output only
    assert one_line_problem(refused, ["pass --resume"]) is None, refused.stderr
    assert leftovers(tmp_path) == []
    resumed = zygote.run(generate(corpus, out, "--resume"))
    assert resumed.code == 0, resumed.stderr
    assert out.read_bytes() == reference.read_bytes()


def test_a_lock_holder_unwinds_on_sigterm_and_its_forked_workers_do_not(tmp_path):
    """The handler is the holder's own: a forked worker (a generate pool process, which
    ``Pool.terminate`` stops with SIGTERM while it may wait for a task) keeps the default
    one, so it dies at once; the default is back when the lock is released."""
    import signal

    # a library may have left its own handler in this test process (ray.init does), which
    # the lock leaves alone: start from the default a `tags` process has, restore after
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        _lock_unwinds_on_sigterm(tmp_path)
    finally:
        signal.signal(signal.SIGTERM, before)


def _lock_unwinds_on_sigterm(tmp_path):
    import os
    import signal
    import time

    from tags.core.lock import OutputLock, Terminated

    with OutputLock(tmp_path / "out.lock"):
        pid = os.fork()
        if pid == 0:  # the worker: nothing but the check, then out
            os._exit(0 if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        with pytest.raises(Terminated) as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # (the handler raises at once)
        assert stop.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert not (tmp_path / "out.lock").exists()


def test_a_stopped_train_removes_its_lock_and_resumes_exactly(zygote, trained, tmp_path):
    run = tmp_path / "run"
    stopped = zygote.run([*TRAIN, f"output_dir={run}"], kill=Kill("log", 3, how="TERM"))
    assert stopped.code == 143 and "terminated (SIGTERM)" in stopped.stderr, stopped.stderr
    assert not (run / ".tags-train.lock").exists()
    resumed = zygote.run([*TRAIN, f"output_dir={run}", "resume_from=latest"])
    assert resumed.code == 0, resumed.stderr
    straight, again = _weights(trained), _weights(run)
    assert all(bool((straight[k] == again[k]).all()) for k in straight)
    assert _losses(run) == _losses(trained)


# ---------------------------------------------------------------------- a full disk
def _clean_partial(out: Path, reference: Path) -> None:
    """What a failed write leaves: whole captions of the reference, at most one cut."""
    data = out.read_bytes() if out.exists() else b""
    assert reference.read_bytes().startswith(data)
    for name in (".vocab.json", ".meta.json"):  # written atomically: whole or absent
        side = out.with_name(out.name + name)
        if side.exists():
            json.loads(side.read_text())


@pytest.mark.parametrize("where", ["vocabulary", "records"])
def test_generate_on_a_full_disk_is_one_line_and_resumes(
    zygote, corpus, reference, tmp_path, where
):
    """``RLIMIT_FSIZE`` (a write past it fails with EFBIG, as a full disk with ENOSPC)."""
    vocab = reference.with_name(reference.name + ".vocab.json").stat().st_size
    limit = vocab // 2 if where == "vocabulary" else reference.stat().st_size // 2
    assert limit > 4096 or where == "vocabulary"
    out = tmp_path / "neg.jsonl"
    failed = zygote.run(generate(corpus, out), fsize=limit)
    assert one_line_problem(failed, [str(tmp_path)]) is None, failed.stderr
    _clean_partial(out, reference)
    resumed = zygote.run(generate(corpus, out, "--resume"))
    assert resumed.code == 0, resumed.stderr
    assert out.read_bytes() == reference.read_bytes()
    assert leftovers(tmp_path) == []


def test_generate_on_a_full_tmpfs_is_one_line_and_resumes(zygote, corpus, reference, tmp_path):
    """A real ENOSPC: a tmpfs too small for the output (root only), grown, then --resume."""
    with small_disk(tmp_path / "disk", "64k") as disk:
        if disk is None:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        out = disk / "neg.jsonl"
        failed = zygote.run(generate(corpus, out))
        assert one_line_problem(failed, [str(disk)]) is None, failed.stderr
        assert "No space left on device" in failed.stderr
        _clean_partial(out, reference)
        import subprocess

        subprocess.run(["mount", "-o", "remount,size=8m", str(disk)], check=True)
        resumed = zygote.run(generate(corpus, out, "--resume"))
        assert resumed.code == 0, resumed.stderr
        assert out.read_bytes() == reference.read_bytes()


def test_train_on_a_full_disk_is_one_line_and_resumes(zygote, trained, tmp_path):
    run = tmp_path / "run"
    biggest = max(p.stat().st_size for p in (trained / "checkpoints").rglob("*") if p.is_file())
    failed = zygote.run([*TRAIN, f"output_dir={run}"], fsize=biggest // 2)
    assert one_line_problem(failed, [str(run)]) is None, failed.stderr
    resumed = zygote.run([*TRAIN, f"output_dir={run}", "resume_from=latest"])
    assert resumed.code == 0, resumed.stderr
    straight, again = _weights(trained), _weights(run)
    assert all(bool((straight[k] == again[k]).all()) for k in straight)


# ---------------------------------------------------------------------- concurrent runs
@pytest.mark.parametrize("spelling", ["same path", "symlink"])
def test_two_generate_runs_on_one_output_exactly_one_runs(
    zygote, corpus, reference, tmp_path, spelling
):
    out = tmp_path / "neg.jsonl"
    other = out
    if spelling == "symlink":
        other = tmp_path / "link.jsonl"
        other.symlink_to(out)
    first, second = zygote.run_many(
        [request(generate(corpus, path, "--overwrite"), hold=1.0) for path in (out, other)]
    )
    codes = sorted([first.code, second.code])
    assert codes == [0, 2], (first.stderr, second.stderr)
    refused = first if first.code == 2 else second
    assert one_line_problem(refused, ["in use by another run"]) is None, refused.stderr
    assert out.read_bytes() == reference.read_bytes()


# ---------------------------------------------------------------------- bad inputs
def _files(root: Path) -> dict[str, Path]:
    """The inputs the bad-input table points at."""
    files = {
        "missing": root / "missing.txt",
        "folder": root / "folder",
        "binary": root / "binary.bin",
        "empty": root / "empty.jsonl",
        "blocker": root / "blocker",  # a regular file where a folder is expected
        "yaml": root / "bad.yaml",
        "json": root / "bad.json",
        "csv": root / "bad.csv",
        "caps": root / "caps.txt",
        "nonegs": root / "nonegs.txt",  # captions with nothing to edit: no negative
    }
    files["folder"].mkdir()
    files["binary"].write_bytes(bytes(range(256)) * 4)
    files["empty"].write_text("")
    files["blocker"].write_text("x")
    files["yaml"].write_text("recipe: [unclosed\n")
    files["json"].write_text('{"images": 3}')
    files["csv"].write_text("caption,scene_graph\nonly one column\n")
    files["caps"].write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:10]) + "\n")
    files["nonegs"].write_text("hello\nyes\nok\nyes\nok\n")
    return files


#: (subcommand, command line with {name} for the _files paths, text the error line names)
BAD_INPUTS = [
    ("parse", "parse {missing}", "{missing}"),
    ("parse", "parse {caps} --out {blocker}/x.jsonl", "--out"),
    ("parse", "parse {binary} --strict --out {root}/p.jsonl", "{binary}"),
    ("generate", "generate --captions {folder} --out {root}/o.jsonl", "{folder}"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --plausibility-lm "
     "{missing} --num-workers 2", "--num-workers 2"),
    ("generate", "generate --captions {json} --out {root}/o.jsonl", "{json}"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --noun-classes {binary}",
     "--noun-classes"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --background {json}",
     "--background"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --background factual,{json}",
     "--background {json}"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --vocab {binary}", "{binary}"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --tokenizer {folder}",
     "--tokenizer {folder}"),
    ("generate", "generate --captions {nonegs} --out {root}/o.jsonl --export negclip-csv",
     "--export negclip-csv"),
    ("generate", "generate --captions {caps} --out {root}/o.jsonl --export sugarcrepe",
     "--export sugarcrepe"),
    ("generate", "generate --captions {caps} --count-only --vocab {json} --out {root}/c.json",
     "--vocab"),
    ("counts", "counts merge {missing} --out {root}/m.json", "{missing}"),
    ("counts", "counts merge {binary} --out {root}/m.json", "{binary}"),
    ("counts", "counts merge {json} {folder} --out {root}/m.json", "{folder}"),
    ("counts", "counts merge {json} --out {root}/m.json", "{json}"),
    ("counts", "counts merge {json} --out {blocker}/m.json", "--out"),
    ("counts", "counts store {missing} --out {root}/s.store", "{missing}"),
    ("counts", "counts store {binary} --out {root}/s.store", "{binary}"),
    ("counts", "counts store {json} --out {root}/s.store", "{json}"),
    ("counts", "counts store {folder} --out {root}/s.store", "{folder}"),
    ("counts", "counts store {json} --out {blocker}/s.store", "--out"),
    ("balance", "balance {missing} --out {root}/b.jsonl", "{missing}"),
    ("balance", "balance {binary} --out {root}/b.jsonl", "{binary}"),
    ("balance", "balance {caps} --out {root}/b.jsonl", "{caps}"),
    ("balance", "balance {caps} --out {folder}", "--out"),
    ("export", "export {missing} --format json", "{missing}"),
    ("export", "export {binary} --format json --out {root}/o.json", "{binary}"),
    ("export", "export {empty} --format json --out {root}/o.json", "{empty}"),
    ("export", "export {caps} --format negclip --out {folder}", "{folder}"),
    ("export", "export {caps} --format json --refine --out {root}/o.json", "--refine"),
    ("export", "export {caps} --format sugarcrepe --refine-seed 1 --out {root}/o.json",
     "--refine-seed"),
    ("train", "train --config {missing}", "{missing}"),
    ("train", "train --config {yaml}", "{yaml}"),
    ("evaluate", "evaluate --model {missing} --captions {caps} --features {folder}", "{missing}"),
    ("evaluate", "evaluate --model {folder} --suite shapes={folder} --out {blocker}/r.json",
     "--out"),
    ("evaluate", "evaluate --model {folder} --suite bogus={folder}", "--suite bogus"),
    ("report", "report --model {missing} --suite shapes={folder} --out {root}/report",
     "{missing}"),
    ("make-benchmark", "make-benchmark {blocker}", "{blocker}"),
    ("eval-parser", "eval-parser {csv}", "{csv}"),
    ("eval-parser", "eval-parser {missing}", "{missing}"),
    ("explain", "explain --model {missing} --caption dog", "{missing}"),
    ("explain", "explain --model {folder} --caption dog", "{folder}"),
    ("demo", "demo --out {blocker} --budget tiny", "{blocker}"),
    ("demo", "demo --world binding --backend clip --budget tiny", "--world shapes"),
    ("demo", "demo --data {folder} --budget tiny", "--data"),
]  # fmt: skip


def _fill(text: str, files: dict[str, Path], root: Path) -> str:
    return text.format(root=root, **{k: str(v) for k, v in files.items()})


def _command(case: object) -> str:
    return case.values[0] if hasattr(case, "values") else case[0]  # type: ignore[index]


@pytest.mark.parametrize(
    "command, line, named", BAD_INPUTS, ids=[f"{_command(c)}-{i}" for i, c in enumerate(BAD_INPUTS)]
)
def test_bad_inputs_are_one_line_and_leave_nothing(zygote, tmp_path, command, line, named):
    root = tmp_path / "work"
    root.mkdir()
    files = _files(root)
    before = tree(root)
    outcome = zygote.run(_fill(line, files, root).split(), cwd=root)
    assert one_line_problem(outcome, [_fill(named, files, root)]) is None, outcome.stderr
    assert tree(root) == before, sorted(set(tree(root)) ^ set(before))


def test_the_table_walks_every_subcommand():
    from tags.cli import COMMANDS

    assert {c.replace("_", "-") for c in COMMANDS} == {_command(c) for c in BAD_INPUTS}
