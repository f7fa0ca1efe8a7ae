import os

import pytest

# Nothing may reach a model hub from the tests.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


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
