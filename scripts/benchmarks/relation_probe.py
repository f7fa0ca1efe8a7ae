"""Can the demo's backbone learn the benchmark's relations when it is asked to?

    python scripts/benchmarks/relation_probe.py --data runs/shapes --regions labels
    python scripts/benchmarks/relation_probe.py --data runs/shapes --regions cnn --boxes whole

Trains a scratch TagsModel of the demo's shape (hidden 128, 2 layers, init std 0.08) with
binary ITM only: every training caption against one scene-checked single-edit negative of
the requested types (:func:`tags.benchmark.oracle_negatives`) and, unless
``--no-random-negatives``, one caption of a random other image (without these easy negatives
the ITM loss stays at its prior from scratch: measured). Then scores the test split's
minimal pairs by the ITM logit (per type). ``--regions labels`` replaces each object's CNN
feature by a one-hot of its true shape, colour and size (the whole-image region gets its own
flag), so only relations are left to learn; ``--boxes whole`` gives every region the
whole-image box (a control: relations must then stay at chance).

``--negatives roles`` trains against role swaps instead (the two mentions of a relation
caption exchanged, false of the scene: :func:`tags.benchmark.split_role_pairs`), whose words
equal the positive's, so only the layout can separate them. ``--init DIR`` starts from a
trained TagsModel (e.g. a demo's pre-trained checkpoint; CNN regions) instead of scratch.
Both the test minimal pairs and the test split's role pairs are scored (``role``).

    python scripts/benchmarks/relation_probe.py --data runs/ladder900/data --regions cnn \
        --negatives roles --init runs/ladder900/seed0/pretrained/model --lr 2e-4
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def region_bank(data: Path, regions: str, boxes: str) -> dict[int, tuple]:
    """``image_id -> (features [R, D], boxes [R, 7])`` for every image of the benchmark."""
    import numpy as np
    import torch

    from tags.benchmark.oracle_negatives import read_scenes
    from tags.benchmark.scenes import COLORS, SHAPES, SIZES
    from tags.negatives import open_regions

    store = open_regions(data / "features")
    vocab = [*SHAPES, *COLORS, *SIZES]
    bank = {}
    for scene, _ in read_scenes(data / "scenes.jsonl"):
        stored = store.get(scene.image_id)
        feats = stored.features
        if regions == "labels":
            feats = np.zeros((len(stored.boxes), len(vocab) + 1), np.float32)
            for k, obj in enumerate(scene.objects):
                for value in (obj.shape, obj.color, obj.size):
                    feats[k, vocab.index(value)] = 1.0
            feats[len(scene.objects) :, -1] = 1.0
        box = stored.boxes.copy()
        if boxes == "whole":
            box[:] = np.array([0, 0, 1, 1, 1, 1, 1], np.float32)
        bank[scene.image_id] = (torch.from_numpy(feats).float(), torch.from_numpy(box).float())
    return bank


def main() -> None:
    import torch
    import torch.nn.functional as F

    from tags.backends.masked_lm import load_tokenizer
    from tags.backends.tags_model import load_tags_model
    from tags.benchmark import minimal_pair_accuracy, read_pairs, split_role_pairs
    from tags.benchmark.oracle_negatives import oracle_negatives
    from tags.data import pad_regions
    from tags.modeling import TagsConfig, TagsModel
    from tags.training.factory import resolve_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a built benchmark (tags make-benchmark)")
    parser.add_argument("--regions", choices=("cnn", "labels"), default="labels")
    parser.add_argument("--boxes", choices=("true", "whole"), default="true")
    parser.add_argument("--types", nargs="+", default=["attribute", "object", "relation"])
    parser.add_argument("--negatives", choices=("oracle", "roles"), default="oracle")
    parser.add_argument("--init", default=None, help="a TagsModel directory (default: scratch)")
    parser.add_argument("--no-random-negatives", action="store_true")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the result as JSON here")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    data = Path(args.data)
    seed = json.loads((data / "manifest.json").read_text())["config"]["seed"]
    if args.negatives == "roles":
        records = [
            {"image_id": p.image_id, "positive": p.caption, "negative": p.negative}
            for p in split_role_pairs(data / "scenes.jsonl", "train")
        ]
    else:
        records = [
            r
            for r in oracle_negatives(data / "scenes.jsonl", seed=seed)
            if r["edits"][0]["type"] in args.types
        ]
    if args.init and args.regions != "cnn":
        parser.error("--init needs --regions cnn (the checkpoint reads CNN features)")
    bank = region_bank(data, args.regions, args.boxes)
    feature_size = next(iter(bank.values()))[0].shape[1]
    if args.init:
        model, tokenizer = load_tags_model(args.init, "cpu")
    else:
        tokenizer = load_tokenizer(resolve_path("tiny-mlm"))
        model = TagsModel(
            TagsConfig(
                vocab_size=len(tokenizer),
                mask_token_id=tokenizer.mask_token_id,
                region_feature_size=feature_size,
                hidden_size=args.hidden,
                num_hidden_layers=args.layers,
                num_attention_heads=4,
                intermediate_size=2 * args.hidden,
                max_position_embeddings=64,
                max_regions=8,
                initializer_range=0.08,
                hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0,
            )
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    def logits(image_ids: list[int], texts: list[str]) -> torch.Tensor:
        enc = tokenizer(texts, padding=True, truncation=True, max_length=24, return_tensors="pt")
        feats, boxes, mask = pad_regions(
            [bank[i][0] for i in image_ids], [bank[i][1] for i in image_ids]
        )
        out = model(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            region_features=feats,
            region_boxes=boxes,
            region_mask=mask,
            heads="itm",
        )
        return out.itm_logits.reshape(-1)

    g = torch.Generator().manual_seed(args.seed)
    started = time.perf_counter()
    model.train()
    for step in range(1, args.steps + 1):
        picks = torch.randint(len(records), (args.batch_size,), generator=g).tolist()
        batch = [records[i] for i in picks]
        ids = [r["image_id"] for r in batch] * 2
        texts = [r["positive"] for r in batch] + [r["negative"] for r in batch]
        if not args.no_random_negatives:
            for r in batch:
                other = records[int(torch.randint(len(records), (1,), generator=g))]
                while other["image_id"] == r["image_id"]:
                    other = records[int(torch.randint(len(records), (1,), generator=g))]
                ids.append(r["image_id"])
                texts.append(other["positive"])
        target = torch.tensor([1.0] * len(batch) + [0.0] * (len(texts) - len(batch)))
        loss = F.binary_cross_entropy_with_logits(logits(ids, texts), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step}: loss {loss.item():.3f}", flush=True)
    model.eval()
    with torch.no_grad():
        pairs = [*read_pairs(data / "test_minimal_pairs.jsonl")]
        pairs += split_role_pairs(data / "scenes.jsonl", "test")
        accuracy = minimal_pair_accuracy(lambda i, t: logits(list(i), list(t)).tolist(), pairs)
        train_roles = split_role_pairs(data / "scenes.jsonl", "train")[:1000]
        accuracy["role_train"] = minimal_pair_accuracy(
            lambda i, t: logits(list(i), list(t)).tolist(), train_roles
        )["role"]
    result = {
        "args": vars(args),
        "train_pairs": len(records),
        "minimal_pairs": accuracy,
        "seconds": time.perf_counter() - started,
    }
    print(json.dumps(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
