"""A tokenizer that maps every word to one id (all unknown) is refused when training starts,
naming its directory; a usable one passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from _training_utils import tiny_config

from tags.cli import main as cli_main
from tags.training.config import ConfigError, to_dict
from tags.training.loop import CHECKPOINTS
from tags.training.tokenizer_check import check_tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def unknown_only_tokenizer(path: Path) -> Path:
    """A fast tokenizer whose vocabulary holds only the special tokens: every word is UNK."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    model = models.WordLevel({t: i for i, t in enumerate(SPECIALS)}, unk_token="[UNK]")
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    fast.save_pretrained(path)
    return path


def test_an_all_unknown_tokenizer_is_refused_naming_it(tmp_path, capsys):
    tokenizer = unknown_only_tokenizer(tmp_path / "tok")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(to_dict(tiny_config("vse", tmp_path / "run"))))
    capsys.readouterr()
    code = cli_main(["train", "--config", str(config), f"model.tokenizer={tokenizer}"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("tags train:")]
    assert len(lines) == 1, err
    assert f"model.tokenizer {tokenizer}: this tokenizer maps" in lines[0]
    assert "100% of them the unknown token" in lines[0]
    run = tmp_path / "run"
    assert not any((run / name).exists() for name in ("config.yaml", "metrics.jsonl", CHECKPOINTS))


class _OneId:
    """Every word one id, and no unknown token: caught by the distinct-id count."""

    unk_token_id = None

    def __call__(self, texts, add_special_tokens=False):
        return {"input_ids": [[7] * len(t.split()) for t in texts]}


def test_one_id_for_every_word_is_refused():
    texts = ["a dog runs on the grass", "two men ride a red bike", "a cat sleeps"]
    with pytest.raises(ConfigError, match=r"tok: .* to 1 distinct ids, 0% of them"):
        check_tokenizer(_OneId(), texts, "tok")


def test_a_real_tokenizer_passes():
    from tags.backends.masked_lm import load_tokenizer
    from tags.modeling import tiny_mlm_path

    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("tiny-mlm not installed")
    texts = ["a dog runs on the grass", "two men ride a red bike", "a cat sleeps on a mat"]
    check_tokenizer(load_tokenizer(path), texts, "tiny-mlm")
