"""BLIP-ITM vs TagsModel at matched size, and image decoding vs consumption, in one run.

Both models are random and built at the same width/depth (hidden, layers, heads, FFN):

  * TagsModel: one single-stream encoder over [text ; R regions];
  * BLIP:      a ViT over (image_size / patch)^2 patches + a text encoder with
               cross-attention (BlipForImageTextRetrieval), so per pair it runs more layers.

Rows: pair scoring (no grad, one image against ``--pairs`` captions, the evaluation
pattern: BLIP runs its ViT once per image) and a training step (forward + backward of the
ITM logit on ``--pairs`` row-aligned pairs, one image each). Then the raw-image pipeline:
JPEG decode + the BLIP processor in a DataLoader (0 and ``--workers`` workers), images per
second, against the images per second one BLIP training step consumes. Ratios are computed
within the run, on the same machine.

    python scripts/benchmarks/backend_throughput.py [--hidden 256 --layers 4 --pairs 32]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import torch


def timed(fn, repeat: int) -> float:
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def build(args, root: Path):
    from transformers import (
        BertTokenizer,
        BlipConfig,
        BlipForImageTextRetrieval,
        BlipImageProcessor,
        BlipProcessor,
    )

    from tags.backends import load_backend
    from tags.modeling import TagsConfig, TagsModel
    from tags.modeling.assets import minilm_path

    tok = BertTokenizer.from_pretrained(str(minilm_path()))
    size = {
        "hidden_size": args.hidden,
        "num_hidden_layers": args.layers,
        "num_attention_heads": args.hidden // 64 or 1,
        "intermediate_size": 4 * args.hidden,
    }
    blip_cfg = BlipConfig(
        text_config={**size, "vocab_size": len(tok), "max_position_embeddings": 64},
        vision_config={
            **size,
            "image_size": args.image_size,
            "patch_size": args.patch,
            "initializer_range": 0.02,
        },
        image_text_hidden_size=args.hidden,
    )
    path = root / "blip"
    BlipForImageTextRetrieval(blip_cfg).save_pretrained(path)
    BlipProcessor(
        BlipImageProcessor(size={"height": args.image_size, "width": args.image_size}), tok
    ).save_pretrained(path)
    blip = load_backend(path)
    tags_model = TagsModel(
        TagsConfig(
            **size,
            vocab_size=len(tok),
            max_position_embeddings=64,
            region_feature_size=args.feature_size,
        )
    )
    return tok, blip, tags_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--regions", type=int, default=36, help="TagsModel regions per image")
    parser.add_argument("--feature-size", type=int, default=2048)
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--patch", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=32)
    parser.add_argument("--text-len", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--images", type=int, default=64, help="JPEGs decoded")
    parser.add_argument("--jpeg-size", type=int, default=480, help="JPEG side (pixels)")
    parser.add_argument("--num-workers", "--workers", dest="workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default=None, help="write the results as JSON")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers.utils import logging

    logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    root = Path(tempfile.mkdtemp(prefix="tags-bench-"))
    tok, blip, tags_model = build(args, root)
    n, length = args.pairs, args.text_len
    ids = torch.randint(1000, 2000, (n, length))
    ids[:, 0], ids[:, -1] = tok.cls_token_id, tok.sep_token_id
    text = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    feats = torch.randn(n, args.regions, args.feature_size)
    boxes = torch.tensor([0.1, 0.1, 0.6, 0.7]).expand(n, args.regions, 4).clone()
    regions = {"region_features": feats, "region_boxes": boxes}
    pixels = {"pixel_values": torch.randn(n, 3, args.image_size, args.image_size)}
    one_region = {k: v[:1] for k, v in regions.items()}
    one_pixel = {k: v[:1] for k, v in pixels.items()}
    from tags.backends import as_backend

    tags = as_backend(tags_model, tok)
    rows: dict[str, dict[str, float]] = {}

    def score(backend, image):
        backend.model.eval()
        with torch.no_grad():
            return timed(lambda: backend.score_pairs(text, image), args.repeat)

    def train_step(backend, image):
        backend.model.train()
        opt = torch.optim.SGD(backend.model.parameters(), lr=1e-4)

        def step():
            opt.zero_grad()
            backend.score_pairs(text, image).float().pow(2).mean().backward()
            opt.step()

        return timed(step, args.repeat)

    for name, backend, one, many in (
        ("tags", tags, one_region, regions),
        ("blip", blip, one_pixel, pixels),
    ):
        rows[name] = {
            "params_m": sum(p.numel() for p in backend.model.parameters()) / 1e6,
            "score_pairs_per_s": n / score(backend, one),
            "train_pairs_per_s": n / train_step(backend, many),
        }

    # raw images: decode + preprocess in DataLoader workers vs what a BLIP step consumes
    import numpy as np
    from PIL import Image

    from tags.data.images import ImageRecord, decode_images

    image_dir = root / "jpegs"
    image_dir.mkdir()
    rng = np.random.default_rng(0)
    records = []
    for k in range(args.images):
        array = rng.integers(0, 255, (args.jpeg_size, args.jpeg_size * 4 // 3, 3), dtype=np.uint8)
        Image.fromarray(array).save(image_dir / f"{k}.jpg", quality=90)
        records.append(ImageRecord(k, image_dir / f"{k}.jpg"))
    decode: dict[str, float] = {}
    for workers in sorted({0, args.workers}):
        _, _, stats = decode_images(records, blip.image_inputs, batch_size=16, num_workers=workers)
        decode[f"decode_images_per_s_{workers}_workers"] = stats.images_per_second
    consumed = rows["blip"]["train_pairs_per_s"]  # one image per pair in a training step
    best = max(decode.values())
    result = {
        "settings": vars(args),
        "torch_threads": torch.get_num_threads(),
        "models": rows,
        "ratios": {
            "blip_vs_tags_score": rows["blip"]["score_pairs_per_s"]
            / rows["tags"]["score_pairs_per_s"],
            "blip_vs_tags_train": rows["blip"]["train_pairs_per_s"]
            / rows["tags"]["train_pairs_per_s"],
            "decode_vs_blip_train_consumption": best / consumed,
        },
        "decode": decode,
    }
    print(f"{'model':6}{'params (M)':>12}{'score pairs/s':>16}{'train pairs/s':>16}")
    for name, row in rows.items():
        print(
            f"{name:6}{row['params_m']:12.1f}{row['score_pairs_per_s']:16.1f}"
            f"{row['train_pairs_per_s']:16.1f}"
        )
    for key, value in decode.items():
        print(f"{key}: {value:.1f}")
    for key, value in result["ratios"].items():
        print(f"{key}: {value:.2f}")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
