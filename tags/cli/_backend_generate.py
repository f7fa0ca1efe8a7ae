"""``tags generate --model DIR --images ROOT``: negatives ranked against the real image.

The model directory is any pixel backend (:mod:`tags.backends`): candidates are filtered
as usual and the top-m kept by the model's own pair score with the image (BLIP: ITM; CLIP /
SigLIP: the scaled cosine). Refills come from the model's MLM head when it has one (a BLIP
trained with ``tags-dc`` keeps it beside the model), else from the corpus vocabulary
(``--vocab``), as without a model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def backend_components(
    args: argparse.Namespace, parser: Any, out: Path, state: Any, planning: Callable
) -> dict[str, Any]:
    """Refiller, pair scorer, images, label tokenizer and edit planner for a pixel backend
    (``planning``: the CLI's vocabulary-and-planner builder, shared with TagsModel runs)."""
    from tags.backends import BackendError, load_backend
    from tags.backends.heads import require_heads
    from tags.backends.masked_lm import load_tokenizer
    from tags.core.io import ErrorPolicy, read_captions
    from tags.data.images import RawImageStore
    from tags.negatives.refill import MLMRefiller, VocabularyRefiller

    if not args.model:
        raise ValueError("--images needs --model (a BLIP, CLIP or SigLIP directory)")
    if args.features:
        raise ValueError("give --features (TagsModel) or --images (pixel models), not both")
    device = args.device or (state.device if state is not None else None)
    try:
        backend = load_backend(args.model)
    except BackendError as err:
        raise ValueError(str(err)) from err
    if backend.image_kind != "pixels":
        raise ValueError(f"{args.model}: a {backend.name} model reads --features, not --images")
    # the heads read below: ITM ranks (CLIP/SigLIP rank by their cosine), MLM refills
    needed = [name for name in ("itm", "mlm") if backend.supports(name)]
    require_heads(backend, needed, "tags generate --model", args.model)
    if device is not None:
        backend.model.to(device)
    backend.model.eval()
    images = RawImageStore(
        args.images, backend.image_inputs, args.allow_outside_root, args.confine_to_root
    )
    # every caption's image name checked before anything is written (a name outside the root)
    images.check_names(
        read_captions(args.captions, args.format, on_error=ErrorPolicy("skip"), split=args.split)
    )
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer else backend.tokenizer
    vocabulary, planner = planning(
        args, parser, out, state, needs_vocab=not backend.supports("mlm")
    )
    if backend.supports("mlm"):
        mlm = backend.masked_lm_adapter(backend.tokenizer, backend.device)
        refiller = MLMRefiller(
            mlm, backend.tokenizer, num_samples=args.l, temperature=args.temperature
        )
        source = "its MLM head"
    else:
        refiller = VocabularyRefiller(vocabulary, num_samples=args.l)
        source = "the corpus vocabulary (the model has no MLM head)"
    print(
        f"{backend.name} model: refills from {source}; top-{args.top_m} by its pair score "
        "against the real image",
        file=sys.stderr,
    )
    return {
        "refiller": refiller,
        "scorer": backend.pair_scorer(backend.tokenizer, backend.device),
        "regions": images,
        "label_tokenizer": tokenizer,
        "planner": planner,
    }
