"""``tags explain``: per-word mismatch probabilities (WoD head), corrections (WoC head) and
the ITM score of a TAGS-DC model for (image, caption) pairs; with ``--negatives``, the WoD
and WoC accuracy on generated negatives. See ``docs/evaluation.md``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tags.cli._flags import add_confine_to_root, add_device, add_out, add_overwrite, resolve_device
from tags.cli._model import model_ref
from tags.cli._types import positive_int
from tags.core.errors import CommandError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "explain",
        help="per-word mismatch, corrections and ITM score of a TAGS-DC model",
        description="Explain (image, caption) pairs with a TAGS-DC model (TagsModel, or BLIP "
        "with saved TAGS heads): the WoD head's mismatch probability per word, the WoC head's "
        "corrections and the ITM score, to the console, JSON (--json) and HTML (--html). "
        "--negatives FILE reports WoD/WoC accuracy on `tags generate` output instead.",
    )
    p.add_argument(
        "--model",
        required=True,
        type=model_ref,
        help="TagsModel or BLIP (with TAGS heads) directory, or a hub id in the local cache",
    )
    p.add_argument(
        "--tokenizer", default=None, type=model_ref, help="tokenizer directory (default: --model)"
    )
    what = p.add_argument_group("pairs (one of)")
    what.add_argument("--caption", action="append", default=None, help="a caption (repeatable)")
    what.add_argument(
        "--pairs", default=None, help='JSONL of {"image_id", "caption", "filename"?} lines'
    )
    what.add_argument(
        "--negatives", default=None, help="`tags generate` JSONL: WoD/WoC accuracy on it"
    )
    img = p.add_argument_group("images")
    img.add_argument("--image-id", default=None, help="the image of --caption")
    img.add_argument(
        "--features", default=None, help="region features: .npz file, .npz folder or _ims.npy"
    )
    img.add_argument("--images", default=None, help="image root (BLIP), or one image file")
    add_confine_to_root(img)
    img.add_argument(
        "--captions", default=None, help="--negatives: caption file naming the images' files"
    )
    add_out(p, "write the explanations (or accuracy) as JSON here", old="--json")
    p.add_argument("--html", default=None, help="write the highlighted captions here")
    add_overwrite(p, "an existing --out / --html")
    p.add_argument("--max-length", type=positive_int, default=40, help="text tokens read")
    p.add_argument("--batch-size", type=positive_int, default=32, help="pairs per forward")
    p.add_argument("--limit", type=positive_int, default=None, help="--negatives: only the first N")
    add_device(p)
    p.set_defaults(func=run)


# ---------------------------------------------------------------------- model and images
class Explainer:
    """The model's trainable module (ITM + WoD + WoC), its tokenizer and an image loader."""

    def __init__(self, args: argparse.Namespace) -> None:

        from tags.backends import BackendError, load_backend
        from tags.backends.heads import require_heads

        self.backend = load_backend(args.model)
        if args.tokenizer:
            from tags.backends.masked_lm import load_tokenizer

            self.backend.tokenizer = load_tokenizer(args.tokenizer)
        self.tokenizer = self.backend._tokenizer()
        if not self.backend.supports("token_states"):
            raise BackendError(
                f"the {self.backend.name} backend has no image-grounded token states, so no "
                "WoD/WoC heads: explain needs a TagsModel or BLIP (ITM) model"
            )
        # before trainable_module(), which would add missing heads with random weights
        require_heads(self.backend, ("itm", "wod", "woc"), "tags explain", args.model)
        device = resolve_device(args.device)
        self.backend.model.to(device).eval()
        self.module = self.backend.trainable_module().to(device).eval()
        self.max_length = min(args.max_length, self.backend.max_text_length)
        self.args = args
        self.store = self._store(args)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)

    def _store(self, args: argparse.Namespace) -> Any:
        if self.backend.image_kind == "regions":
            if not args.features:
                raise ValueError(f"a {self.backend.name} model reads region features: --features")
            path = Path(args.features)
            if path.suffix == ".npz" and path.is_file():
                return _SingleNpz(path)
            from tags.core.regions import open_regions

            return open_regions(path)
        if not args.images:
            raise ValueError(f"a {self.backend.name} model reads raw images: give --images")
        from tags.data.images import RawImageStore

        root = Path(args.images)
        store = RawImageStore(
            root.parent if root.is_file() else root,
            self.backend.image_inputs,
            confine=args.confine_to_root,
        )
        return _SingleImage(store, root.name) if root.is_file() else store

    def item(self, image_id: Any, filename: str | None) -> Any:
        """One image's item for :meth:`VLBackend.row_images`."""
        got = self.store.get(image_id, filename)
        if self.backend.image_kind != "regions":
            return got
        import torch

        return torch.from_numpy(got.features.copy()), torch.from_numpy(got.boxes.copy())

    def images(self, keys: list[tuple[Any, str | None]]) -> dict[str, Any]:
        """Row-aligned images of ``keys`` (each distinct image loaded once)."""
        distinct = list(dict.fromkeys(keys))
        items = [self.item(i, f) for i, f in distinct]
        return self.backend.row_images(items, [distinct.index(k) for k in keys])


class _SingleNpz:
    """One ``.npz`` file as a region store (whatever the image id)."""

    def __init__(self, path: Path) -> None:
        from tags.core.regions import NpzRegions

        self.inner, self.name = NpzRegions(path.parent), path.stem

    def get(self, image_id: Any, filename: str | None = None, position: int | None = None) -> Any:
        return self.inner.get(self.name)


class _SingleImage:
    def __init__(self, store: Any, name: str) -> None:
        self.store, self.name = store, name

    def get(self, image_id: Any, filename: str | None = None, position: int | None = None) -> Any:
        return self.store.get(image_id, self.name)


# ---------------------------------------------------------------------- inputs
def _pairs(args: argparse.Namespace) -> list[tuple[Any, str | None, str]]:
    """``(image_id, filename, caption)`` of ``--caption`` or ``--pairs``."""
    if args.caption:
        return [(args.image_id or "0", None, c) for c in args.caption]
    from tags.core.io import json_lines

    out = []
    hint = 'pass a JSONL of {"image_id", "caption", "filename"?} lines'
    name = f"--pairs {args.pairs}"
    for number, rec in json_lines(args.pairs, hint, name):  # not UTF-8 / JSON: file and line
        if not isinstance(rec, dict) or "image_id" not in rec or "caption" not in rec:
            raise ValueError(f"{name}:{number}: expected an object with image_id and caption")
        out.append((rec["image_id"], rec.get("filename"), rec["caption"]))
    return out


def _batches(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), max(1, size)):
        yield items[start : start + size]


# ---------------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    from tags.backends import BackendError
    from tags.core.errors import as_command_error
    from tags.core.regions import MissingFeaturesError

    chosen = [x for x in (args.caption, args.pairs, args.negatives) if x]
    if len(chosen) != 1:
        raise CommandError("give one of --caption, --pairs or --negatives")
    from tags.cli._outputs import check_out

    check_out(args.out, overwrite=args.overwrite)
    check_out(args.html, "--html", overwrite=args.overwrite)
    try:
        explainer = Explainer(args)
        if args.negatives:
            return _accuracy(explainer, args)
        return _explain(explainer, args)
    except (OSError, ValueError, BackendError, MissingFeaturesError) as err:
        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)


def _explain(explainer: Explainer, args: argparse.Namespace) -> int:
    from tags.evaluation.explain import explain
    from tags.evaluation.highlight import console_line, render_html

    pairs = _pairs(args)
    start = time.perf_counter()
    results = []
    for batch in _batches(pairs, args.batch_size):
        images = explainer.images([(i, f) for i, f, _ in batch])
        results += explain(
            explainer.module,
            explainer.tokenizer,
            [c for _, _, c in batch],
            images,
            explainer.max_length,
            [str(f or i) for i, f, _ in batch],
        )
    elapsed = time.perf_counter() - start
    for result in results:
        print(console_line(result))
    if args.out:
        Path(args.out).write_text(json.dumps([r.to_dict() for r in results], indent=1) + "\n")
    if args.html:
        Path(args.html).write_text(render_html(results))
    print(
        f"explained {len(results)} pairs in {elapsed:.2f}s "
        f"({1000 * elapsed / max(1, len(results)):.1f} ms per caption)",
        file=sys.stderr,
    )
    return 0


def _accuracy(explainer: Explainer, args: argparse.Namespace) -> int:
    from tags.evaluation.explain import TokenAccuracy, label_records, token_accuracy
    from tags.negatives.exports import image_paths, read_records

    records = list(read_records(args.negatives, labels=True))[: args.limit]
    if not records:
        raise ValueError(f"{args.negatives}: no records")
    names = {}
    if args.captions:  # a file that is not captions: one line naming --captions
        from tags.core.errors import reading

        hint = "pass the caption file the negatives came from (Karpathy JSON or JSONL)"
        with reading(f"--captions {args.captions}", hint, CommandError):
            names = image_paths(args.captions)
    total = TokenAccuracy()
    start = time.perf_counter()
    for batch in _batches(records, args.batch_size):
        labelled = label_records(batch, explainer.tokenizer, explainer.max_length)
        keys = [(r["image_id"], names.get(str(r["image_id"]))) for r in batch]
        total.add(
            token_accuracy(explainer.module, labelled, explainer.images(keys), explainer.pad_id)
        )
    summary = total.summary()
    summary["seconds"] = round(time.perf_counter() - start, 3)

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}%"

    print(
        f"{summary['negatives']} negatives: WoD accuracy {pct(summary['wod_accuracy'])} "
        f"({summary['wod_tokens']} tokens, threshold 0.5); WoC accuracy "
        f"{pct(summary['woc_accuracy'])} ({summary['woc_tokens']} tokens), on edited tokens "
        f"{pct(summary['woc_accuracy_edited'])} ({summary['woc_edited_tokens']})"
    )
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 0
