"""Fault injection for ``tags`` commands, shared by ``scripts/fault_campaign.py`` and
``tests/test_faults.py``.

A :class:`Zygote` is a ``tags`` process started once, with its modules imported and the
generate engine warmed, that runs no torch op itself; :meth:`Zygote.run` forks a child of it
for each ``tags ARGV`` (no interpreter start, one torch thread), with optional faults:

- ``kill``: a :class:`Kill` point: the child sends itself ``SIGKILL`` (or ``how``: ``TERM``,
  ``HUP``) at the N-th call of a function (a caption write of ``tags generate``, optionally
  after writing part of it; an atomic rename; a training log row; a checkpoint's custom
  state);
- ``fsize``: ``RLIMIT_FSIZE`` bytes with ``SIGXFSZ`` ignored: a write past it fails with
  ``EFBIG``, as a full disk fails with ``ENOSPC``;
- ``hold``: seconds the child sleeps once its output is locked (concurrency tests).

:func:`one_line_problem` checks the contract every user error meets: exit 2, one line on stderr
naming the file or option, no traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Kill:
    """``SIGKILL`` (``how``: ``SIG<how>``) at call ``at`` (1-based) of ``target``; for
    ``"write"`` (a caption's records) ``part`` of the bytes are written first (a partial
    record)."""

    target: str  # write | replace | log | checkpoint
    at: int
    part: float = 0.0
    how: str = "KILL"  # KILL | TERM | HUP

    def __str__(self) -> str:
        text = f"Kill(target={self.target!r}, at={self.at}, part={self.part})"
        return text if self.how == "KILL" else f"{text} SIG{self.how}"


@dataclass
class Outcome:
    code: int | None  # exit status (None: killed by a signal)
    signal: int | None
    stderr: str
    seconds: float

    @property
    def killed(self) -> bool:
        return self.signal == signal.SIGKILL


def _die(how: str = "KILL") -> None:
    os.kill(os.getpid(), getattr(signal, f"SIG{how}"))


def _counting(
    function: Callable[..., Any], at: int, before: Callable[..., None], how: str = "KILL"
) -> Callable:
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == at:
            before(*args, **kwargs)
            _die(how)  # SIGTERM / SIGHUP: the run's handler unwinds from here
        return function(*args, **kwargs)

    return wrapper


def _install(kill: Kill) -> None:
    """Patch the child so that it dies at ``kill``."""
    if kill.target == "write":
        from tags.core import io

        original = io.JsonlWriter.write

        def partial(self: Any, records: Any) -> None:
            records = list(records)
            text = "".join(__import__("json").dumps(r, ensure_ascii=False) + "\n" for r in records)
            if self.handle is not None and kill.part > 0:
                self.handle.write(text[: int(len(text) * kill.part)])
                self.handle.flush()

        io.JsonlWriter.write = _counting(original, kill.at, partial, kill.how)  # type: ignore[method-assign]
    elif kill.target == "replace":
        os.replace = _counting(os.replace, kill.at, lambda *a, **k: None, kill.how)  # type: ignore[assignment]
    elif kill.target == "log":
        from tags.training import loop

        original = loop.JsonlTracker.log
        loop.JsonlTracker.log = _counting(original, kill.at, lambda *a, **k: None, kill.how)  # type: ignore[method-assign]
    elif kill.target == "checkpoint":  # after accelerate's files, before tags_state.pt
        from tags.training import loop

        loop.save_custom_states = _counting(
            loop.save_custom_states, kill.at, lambda *a: None, kill.how
        )
    else:
        raise ValueError(f"unknown kill target {kill.target!r}")


def _hold(seconds: float) -> None:
    """Sleep once the output lock is taken (the run then holds it that long)."""
    from tags.core import lock

    original = lock.OutputLock.acquire

    def acquire(self: Any) -> Any:
        taken = original(self)
        time.sleep(seconds)
        return taken

    lock.OutputLock.acquire = acquire  # type: ignore[method-assign]


def _child(request: dict[str, Any], err_fd: int) -> None:
    """Run one request in this (forked) process and ``os._exit`` with its code."""
    code: Any = 70
    try:
        os.dup2(err_fd, 2)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        if request.get("dump"):
            import faulthandler

            faulthandler.dump_traceback_later(float(request["dump"]))
        if request.get("cwd"):
            os.chdir(request["cwd"])
        if request.get("kill"):
            kill = Kill(**request["kill"])
            if kill.how != "KILL":  # delivered as from a terminal, also when run under nohup
                signal.signal(getattr(signal, f"SIG{kill.how}"), signal.SIG_DFL)
            _install(kill)
        if request.get("hold"):
            _hold(float(request["hold"]))
        if request.get("fsize") is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize"], resource.RLIM_INFINITY))
        import torch

        torch.set_num_threads(1)  # tiny models: one thread is fastest, and the same in every run
        from tags.cli import main

        code = main(list(request["argv"]))
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)


#: Modules the zygote imports (importing runs no parallel torch op).
WARM_MODULES = (
    "tags.cli",
    "tags.training",
    "tags.training.loop",
    "tags.training.recipes",
    "tags.modeling",
    "tags.data",
    "transformers.models.bert.modeling_bert",
    "accelerate",
    "safetensors.torch",
)


def _serve() -> None:
    """The zygote: import (and warm) ``tags`` once without running any torch op, then fork a
    child per request (one JSON line on stdin: a list of requests run side by side) and
    answer with one JSON line of outcomes."""
    import json

    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import importlib

    for name in WARM_MODULES:  # imported once here, not in every child
        importlib.import_module(name)
    from tags.negatives.pipeline import default_parser

    default_parser()  # spaCy and its model, loaded once for every generate child
    _warm_generate()
    reply.write("ready\n")
    reply.flush()
    for line in sys.stdin:
        requests = json.loads(line)
        running = []
        for request in requests:
            err = tempfile.TemporaryFile("w+", encoding="utf-8")  # noqa: SIM115
            start = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                _child(request, err.fileno())
            running.append((pid, err, start, float(request.get("timeout", 300))))
        outcomes = []
        for pid, err, start, timeout in running:
            deadline = start + timeout
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if time.perf_counter() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    _, status = os.waitpid(pid, 0)
                    break
                time.sleep(0.01)
            err.seek(0)
            text = err.read()
            err.close()
            signalled = os.WIFSIGNALED(status)
            outcomes.append(
                {
                    "code": None if signalled else os.WEXITSTATUS(status),
                    "signal": os.WTERMSIG(status) if signalled else None,
                    "stderr": text,
                    "seconds": time.perf_counter() - start,
                }
            )
        reply.write(json.dumps(outcomes) + "\n")
        reply.flush()
    # stdin closed: nothing left to write, so skip the interpreter's slow teardown (seconds
    # of unloading torch, spaCy and WordNet) that the closing caller would wait for
    os._exit(0)


def _warm_generate() -> None:
    """One tiny ``tags generate`` in the zygote: WordNet, the built-in background and the
    planner's tables are then loaded once for every child (no torch op runs)."""
    from tags.cli import main

    with tempfile.TemporaryDirectory(prefix="tags-faults-") as tmp:
        captions = Path(tmp) / "caps.txt"
        captions.write_text("a red car parked next to a tall tree\n" * 5)
        saved = sys.stderr
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        try:
            out = str(Path(tmp) / "o.jsonl")
            main(["generate", "--captions", str(captions), "--out", out, "--no-progress",
                  "--num-workers", "1", "--k", "2", "--l", "2"])  # fmt: skip
        finally:
            sys.stderr.close()
            sys.stderr = saved


class Zygote:
    """A warm ``tags`` process that forks one child per run (see the module docstring).

    Forking the test process itself is not safe once it has run torch ops (OpenMP's
    threads do not survive a fork: the child hangs); the zygote runs none."""

    def __init__(self, *, wait: bool = True) -> None:
        """Start the zygote; ``wait=False`` returns while it warms up (the first run waits),
        so a caller can do other work meanwhile."""
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": _pythonpath()}
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.ready = False
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until the zygote has warmed up."""
        if self.ready:
            return
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if first.strip() != "ready":
            raise RuntimeError(f"the fault-injection zygote did not start: {first!r}")
        self.ready = True

    def run_many(self, requests: Sequence[dict[str, Any]]) -> list[Outcome]:
        """Run ``requests`` side by side: each ``{"argv": [...], "kill": {...}, "fsize":
        N, "hold": S, "cwd": DIR, "timeout": S}``."""
        import json

        self.wait_ready()
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(list(requests)) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the fault-injection zygote died")
        return [Outcome(**o) for o in json.loads(answer)]

    def run(
        self,
        argv: Sequence[str],
        *,
        kill: Kill | None = None,
        fsize: int | None = None,
        hold: float = 0.0,
        cwd: str | Path | None = None,
        timeout: float = 300.0,
    ) -> Outcome:
        """``tags ARGV`` in a fresh child with the given faults: its exit and stderr."""
        return self.run_many([request(argv, kill=kill, fsize=fsize, hold=hold, cwd=cwd,
                                      timeout=timeout)])[0]  # fmt: skip

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def request(
    argv: Sequence[str],
    *,
    kill: Kill | None = None,
    fsize: int | None = None,
    hold: float = 0.0,
    cwd: str | Path | None = None,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """One run for :meth:`Zygote.run_many`."""
    return {
        "argv": [str(a) for a in argv],
        "kill": dataclasses.asdict(kill) if kill else None,
        "fsize": fsize,
        "hold": hold,
        "cwd": str(cwd) if cwd else None,
        "timeout": timeout,
        "dump": os.environ.get("TAGS_FAULTS_DUMP"),
    }


def _pythonpath() -> str:
    scripts = Path(__file__).resolve().parents[1]  # the repository's scripts/
    parts = [str(scripts.parent), str(scripts), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


def error_lines(stderr: str) -> list[str]:
    """The lines of ``stderr`` that report an error (``error: ...`` or ``tags CMD: ...``)."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("error:") or (line.startswith("tags ") and ": " in line)
    ]


def one_line_problem(outcome: Outcome, names: Sequence[str]) -> str | None:
    """Why ``outcome`` is not a clean user error (exit 2, no traceback, one error line that
    names one of ``names``), or ``None``."""
    if "Traceback (most recent call last)" in outcome.stderr:
        return "traceback"
    if outcome.code != 2:
        return f"exit {outcome.code if outcome.signal is None else f'signal {outcome.signal}'}"
    lines = error_lines(outcome.stderr)
    if len(lines) != 1:
        return f"{len(lines)} error lines"
    if names and not any(name in lines[0] for name in names):
        return "wrong or no file named"
    return None


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative) with its bytes (``None`` for a folder)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@contextlib.contextmanager
def small_disk(path: Path, size: str = "64k") -> Iterator[Path | None]:
    """A ``size`` tmpfs mounted at ``path`` (root only; ``None`` where mounting fails)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        yield None
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


__all__ = [
    "Kill",
    "Outcome",
    "Zygote",
    "error_lines",
    "one_line_problem",
    "request",
    "small_disk",
    "tree",
]


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    _serve()
