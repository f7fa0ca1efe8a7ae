import os
import subprocess
import sys
from pathlib import Path

import pytest

# scripts/research: code the research drivers and the tests share (tiny HF models, fault
# injection, quality measures); tests import it as `research.<module>`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

# Nothing may reach a model hub from the tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch/OpenMP thread per test process (read when torch is first imported; subprocesses
# inherit it): the tests' matrices are tiny, so a second thread gains little on 2 idle cores,
# while on busy cores (several test runs at once) threads that wait for each other made
# training tests 10-100x slower. Set OMP_NUM_THREADS to choose otherwise.
os.environ.setdefault("OMP_NUM_THREADS", "1")


#: `tags make-benchmark` arguments of the shared rendered-image fixture (tiny, seconds)
SHAPES_ARGS = (
    "--train", "4", "--val", "0", "--test", "4", "--image-size", "64", "--crop-size", "32",
    "--featurizer", "random", "--save-images", "--threads", "1", "--quiet",
)  # fmt: skip


@pytest.fixture(scope="session")
def parser():
    """The default spaCy scene-graph parser, loaded once for the whole run."""
    from tags.negatives.pipeline import default_parser

    return default_parser()


@pytest.fixture(scope="session")
def shapes_benchmark(tmp_path_factory):
    """A tiny shapes benchmark rendered by ``tags make-benchmark --save-images``: 4 train and
    4 test images (64 px PNGs under ``images/``), 5 captions each in
    ``dataset_shapes.json`` (Karpathy layout), test minimal pairs. Returns its root."""
    from tags.cli import main

    root = tmp_path_factory.mktemp("shapes")
    assert main(["make-benchmark", str(root), *SHAPES_ARGS]) == 0
    return root


@pytest.fixture
def cli(capsys):
    """``cli(*argv)`` runs ``tags ARGV`` in this process (``tags.cli.main``) and returns a
    ``subprocess.CompletedProcess`` (``returncode``, ``stdout``, ``stderr``): the same checks
    as a ``python -m tags.cli`` subprocess without its start-up (Python, torch, spaCy and
    WordNet load once per test session). Use a real subprocess where the process boundary
    is the point (exit on a kill, locks between processes, ``python -m``, several
    processes, a fresh interpreter)."""
    from tags.cli import main

    def run(*argv: str) -> subprocess.CompletedProcess:
        capsys.readouterr()  # only this command's output
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse: usage errors, --help
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["tags", *map(str, argv)], code, out, err)

    return run


def _start_two_processes(root: Path):
    """The suite's two-process checks (torchrun, gloo, CPU) in one background launch
    (``_torchrun.start_jobs``): ``scoring`` (``test_evaluation_scoring``), ``mining``
    (``_dist_scripts/mining_dist.py``), ``train`` (``_dist_scripts/train_ddp.py``) and
    ``clip`` (``_dist_scripts/clip_ddp.py`` on a tiny CLIP and raw-image corpus, whose paths
    are ``launch.clip_paths``)."""
    from _hf_corpus import write_corpus
    from _torchrun import start_jobs
    from research.hf_tiny import make_clip

    tests = Path(__file__).resolve().parent
    scripts = tests / "_dist_scripts"
    clip_paths = (str(make_clip(root / "clip-model")), *map(str, write_corpus(root / "clip-data")))
    launch = start_jobs(
        root / "runs",
        [
            ("scoring", tests / "test_evaluation_scoring.py", "_distributed_checks", []),
            ("mining", scripts / "mining_dist.py", "run", []),
            ("train", scripts / "train_ddp.py", "run", ["{folder}"]),
            ("clip", scripts / "clip_ddp.py", "run", ["{folder}", *clip_paths]),
        ],
    )
    launch.clip_paths = clip_paths
    return launch


@pytest.fixture(scope="session", autouse=True)
def early_starts(request, tmp_path_factory):
    """The session's slowest subprocess fixtures, started in the background with the first
    test where a selected test needs them: the two-process launch (``two_processes``) and the
    fault-injection zygote (``zygote`` of ``test_faults``). Most tests run in one process on
    one core; these warm up and run on the other core meanwhile, so the tests that need them
    later find them done or warm. A fixture takes its object with ``early_starts.pop(name,
    None)`` (``None``: start it there); what no test took is stopped at the end."""
    needed = {name for item in request.session.items for name in item.fixturenames}
    started = {}
    if "two_processes" in needed:
        started["two_processes"] = _start_two_processes(tmp_path_factory.mktemp("two-processes"))
    if "zygote" in needed:
        from research.faults import Zygote

        started["zygote"] = Zygote(wait=False)
    yield started
    if "two_processes" in started:
        started["two_processes"].stop()
    if "zygote" in started:
        started["zygote"].close()


@pytest.fixture(scope="session")
def two_processes(early_starts, tmp_path_factory):
    """The two-process launch of ``_start_two_processes`` (a test asserts its own job with
    ``launch.check(name)``)."""
    launch = early_starts.pop("two_processes", None)
    if launch is None:
        launch = _start_two_processes(tmp_path_factory.mktemp("two-processes"))
    yield launch
    launch.stop()
