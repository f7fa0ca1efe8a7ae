"""A bad input found inside a ``DataLoader`` worker (``data.num_workers > 0``) is the
original one-line message, not the worker's traceback that PyTorch re-raises."""

from __future__ import annotations

import numpy as np
import yaml
from _training_utils import tiny_config

from tags.cli import main as cli_main
from tags.core.errors import user_message, worker_unwrapped
from tags.core.regions import FeaturesError
from tags.data import write_synthetic_dataset
from tags.training.config import to_dict


def _reraised(err: Exception) -> Exception:
    """``err`` as the main process sees it when a worker raised it."""
    from torch.utils.data._utils import ExceptionWrapper

    try:
        raise err
    except Exception:
        wrapper = ExceptionWrapper(where="in DataLoader worker process 0")
    try:
        wrapper.reraise()
    except Exception as again:
        return again
    raise AssertionError("reraise() did not raise")


def test_the_worker_traceback_is_cut_off():
    again = _reraised(FeaturesError("/data/3.npz: features hold NaN\nsecond line"))
    assert type(again) is FeaturesError and "Original Traceback" in str(again)
    assert worker_unwrapped(again) == "/data/3.npz: features hold NaN\nsecond line"
    assert user_message(again) == "/data/3.npz: features hold NaN; second line"
    plain = FeaturesError("Caught nothing: a message that only looks like one")
    assert worker_unwrapped(plain) == str(plain)


def test_train_with_workers_names_the_bad_file_in_one_line(tmp_path, capsys):
    paths = write_synthetic_dataset(tmp_path / "data", num_images=8, layout="karpathy")
    bad = tmp_path / "data" / "features" / "3.npz"
    arrays = dict(np.load(bad))
    arrays["features"][0, 0] = np.inf
    np.savez(bad, **arrays)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "run"))))
    data = [f"data.captions={paths['captions']}", f"data.features={paths['features']}"]
    capsys.readouterr()
    code = cli_main(["train", "--config", str(config), *data, "data.num_workers=2"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("tags train:")]
    assert code == 2 and len(lines) == 1, err
    assert lines[0] == f"tags train: {bad}: features hold NaN or infinite values; " + (
        "re-extract the region features of that image (or remove it from the captions)"
    )
    assert "Traceback" not in err and "DataLoader worker" not in err
    assert not (tmp_path / "run").exists()
