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


#: Subprocess checks whose process is the point (a fresh interpreter, ``python -m``, stdin),
#: started with the session where a selected test needs them (``early_starts``); each is
#: the session fixture of that name: ``(argv, stdin)``, the test gets its CompletedProcess.
EARLY_COMMANDS = {
    # test_modeling: `import tags` in a fresh interpreter loads no torch; the names load lazily
    "fresh_import_of_tags": (
        [sys.executable, "-c",
         "import sys, tags; assert 'torch' not in sys.modules, 'torch imported eagerly'; "
         "from tags import TagsModel, TagsConfig; assert TagsModel.__name__ == 'TagsModel'"],
        b"",
    ),
    # test_cli_parse: `python -m tags.cli parse -` reads its captions from stdin
    "parse_json_from_stdin": (
        [sys.executable, "-m", "tags.cli", "parse", "-", "--format", "json"],
        b"a man riding a horse\n",
    ),
}  # fmt: skip


def _start_command(name: str, folder: Path) -> tuple[subprocess.Popen, Path]:
    argv, stdin = EARLY_COMMANDS[name]
    (folder / "stdin").write_bytes(stdin)
    files = [(folder / name).open(mode) for name, mode in (("stdin", "rb"), ("stdout", "wb"),
                                                           ("stderr", "wb"))]  # fmt: skip
    try:  # files, not pipes: nothing has to drain them meanwhile
        return subprocess.Popen(argv, stdin=files[0], stdout=files[1], stderr=files[2]), folder
    finally:
        for file in files:
            file.close()


def _early_command(name: str):
    @pytest.fixture(scope="session", name=name)
    def fixture(early_starts, tmp_path_factory) -> subprocess.CompletedProcess:
        process, folder = early_starts.pop(name, None) or _start_command(
            name, tmp_path_factory.mktemp(name)
        )
        process.wait(timeout=300)
        out, err = ((folder / f).read_text(errors="replace") for f in ("stdout", "stderr"))
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    return fixture


for _name in EARLY_COMMANDS:
    globals()[_name] = _early_command(_name)


@pytest.fixture(scope="session", autouse=True)
def early_starts(request, tmp_path_factory):
    """The session's slowest subprocess fixtures, started in the background with the first
    test where a selected test needs them: the two-process launch (``two_processes``), the
    fault-injection zygote (``zygote`` of ``test_faults``) and ``EARLY_COMMANDS``. Most tests run in one process on
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
    for name in EARLY_COMMANDS.keys() & needed:
        started[name] = _start_command(name, tmp_path_factory.mktemp(name))
    yield started
    for name in EARLY_COMMANDS.keys() & started.keys():
        started[name][0].kill()
        started[name][0].wait()
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
