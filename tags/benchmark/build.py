"""Write the benchmark to disk (Karpathy JSON, per-image ``.npz`` regions, optional PNGs,
scene graphs, test minimal pairs) and reuse an earlier build with the same arguments."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tags.benchmark.captions import Claim, sample_claims
from tags.benchmark.config import SPLITS, BenchmarkConfig
from tags.benchmark.efficientnet import packaged_weights
from tags.benchmark.features import Featurizer, crop_regions, make_featurizer, region_boxes
from tags.benchmark.minimal_pairs import sample_minimal_pairs, write_pairs
from tags.benchmark.render import render_scene
from tags.benchmark.scenes import Scene, generate_scene
from tags.core.errors import first_line, reading

# v2: minimal pairs drawn by the ``balanced`` sampler by default (no text prior); v1 builds
# (``uniform`` pairs) still load: :func:`pair_sampler_of` says which a build holds
FORMAT = "tags-benchmark/2"
FORMATS = ("tags-benchmark/1", FORMAT)
CAPTIONS_FILE = "dataset_shapes.json"
SCENES_FILE = "scenes.jsonl"
PAIRS_FILE = "test_minimal_pairs.jsonl"
MANIFEST_FILE = "manifest.json"
FEATURES_DIR = "features"
IMAGES_DIR = "images"


@dataclass
class BenchmarkPaths:
    root: Path
    captions: Path
    features: Path
    scenes: Path
    pairs: Path
    manifest: Path
    images: Path | None = None

    @classmethod
    def under(cls, root: str | Path, save_images: bool) -> BenchmarkPaths:
        root = Path(root)
        return cls(
            root,
            root / CAPTIONS_FILE,
            root / FEATURES_DIR,
            root / SCENES_FILE,
            root / PAIRS_FILE,
            root / MANIFEST_FILE,
            root / IMAGES_DIR if save_images else None,
        )


@dataclass
class BuildResult:
    paths: BenchmarkPaths
    reused: bool
    seconds: float
    featurizer: str
    counts: dict[str, int] = field(default_factory=dict)


def resolve_featurizer(name: str) -> str:
    """``auto`` -> ``efficientnet`` when its weights are installed, else ``random``."""
    if name == "auto":
        return "efficientnet" if packaged_weights() is not None else "random"
    return name


def content_hash(root: Path) -> str:
    """SHA-256 over every output file (relative path and bytes) except the manifest."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST_FILE):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _cache_key(config: BenchmarkConfig) -> dict[str, Any]:
    return {**asdict(config), "featurizer": resolve_featurizer(config.featurizer)}


def cached_manifest(root: str | Path, config: BenchmarkConfig) -> dict[str, Any] | None:
    """The manifest of a complete, unmodified build with these arguments, else None (a
    manifest cut short by a killed build too: it is rebuilt). A ``manifest.json`` that is
    not UTF-8 text or not a JSON object was not written by tags: a ``ValueError`` naming it
    (it is not replaced without ``--overwrite``)."""
    path = Path(root) / MANIFEST_FILE
    if not path.is_file():
        return None
    hint = "choose another directory, or pass --overwrite to rebuild the benchmark there"
    with reading(f"{path}", hint, ValueError):
        text = path.read_text(encoding="utf-8")
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(manifest, dict):
        raise ValueError(
            f"{path}: holds a JSON {type(manifest).__name__}, not a tags benchmark manifest; {hint}"
        )
    if manifest.get("format") != FORMAT or manifest.get("config") != _cache_key(config):
        return None
    return manifest if manifest.get("content_hash") == content_hash(Path(root)) else None


def read_manifest(root: str | Path) -> dict[str, Any]:
    """A build's ``manifest.json``; ValueError naming the file when missing or unreadable,
    or when it is not a tags benchmark manifest of a known version."""
    path = Path(root) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(
            f"{path} not found: build the benchmark with tags make-benchmark"
        ) from None
    except (OSError, ValueError) as err:  # JSON and UTF-8 errors are ValueErrors
        raise ValueError(f"{path}: unreadable benchmark manifest ({first_line(err)})") from None
    if not isinstance(manifest, dict) or manifest.get("format") not in FORMATS:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise ValueError(f"{path}: format {found!r} is not one of {', '.join(FORMATS)}")
    return manifest


def pair_sampler_of(manifest: dict[str, Any]) -> str:
    """The minimal-pair sampler a build used: ``uniform`` for v1 builds (before the
    ``balanced`` sampler existed), else its config's ``pair_sampler``."""
    return str(manifest.get("config", {}).get("pair_sampler", "uniform"))


def benchmark_version(manifest: dict[str, Any]) -> str:
    """``"v2 (balanced pairs)"``, ``"v1 (uniform pairs: relation words carry a text
    prior)"``: for reports and warnings."""
    version = str(manifest.get("format", FORMAT)).rsplit("/", 1)[-1]
    sampler = pair_sampler_of(manifest)
    note = ": relation words carry a text prior" if sampler == "uniform" else ""
    return f"v{version} ({sampler} pairs{note})"


def _chunks(n: int, size: int) -> Iterator[range]:
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


def _karpathy_entry(
    image_id: int, split: str, claims: list[Claim], per_image: int
) -> dict[str, Any]:
    first = image_id * per_image
    sentences = [
        {
            "raw": c.text,
            "tokens": c.text.replace(":", "").replace(",", "").split(),
            "sentid": first + k,
            "imgid": image_id,
        }
        for k, c in enumerate(claims)
    ]
    return {
        "imgid": image_id,
        "filename": f"{image_id}.png",
        "split": split,
        "sentids": [s["sentid"] for s in sentences],
        "sentences": sentences,
    }


_OWNED = {MANIFEST_FILE, CAPTIONS_FILE, SCENES_FILE, PAIRS_FILE, FEATURES_DIR, IMAGES_DIR}


def _check_owned(root: Path) -> None:
    """Refuse to write into a directory that holds anything but benchmark outputs."""
    if not root.is_dir() or (root / MANIFEST_FILE).is_file():
        return
    foreign = sorted(p.name for p in root.iterdir() if p.name not in _OWNED)
    if foreign:
        raise ValueError(
            f"{root} is not a benchmark directory (holds {', '.join(foreign[:3])}); "
            "choose an empty or new directory, or pass force=True / --force"
        )


def _clear(paths: BenchmarkPaths) -> None:
    for sub in (paths.features, paths.root / IMAGES_DIR):
        if sub.is_dir():
            shutil.rmtree(sub)
    for file in (paths.manifest, paths.captions, paths.scenes, paths.pairs):
        file.unlink(missing_ok=True)


def build_benchmark(
    root: str | Path,
    config: BenchmarkConfig | None = None,
    featurizer: Featurizer | None = None,
    force: bool = False,
    threads: int | None = None,
    batch_size: int = 256,
    chunk_images: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> BuildResult:
    """Build (or reuse) the benchmark under ``root``.

    ``featurizer`` overrides ``config.featurizer`` (its ``name`` goes into the manifest);
    ``threads`` sets ``torch.set_num_threads``; ``progress(done, total)`` is called per chunk.
    """
    config = config or BenchmarkConfig()
    paths = BenchmarkPaths.under(root, config.save_images)
    start = time.perf_counter()
    if not force:
        _check_owned(paths.root)
    if not force and featurizer is None:
        manifest = cached_manifest(paths.root, config)
        if manifest is not None:
            return BuildResult(
                paths,
                True,
                time.perf_counter() - start,
                manifest["featurizer"]["name"],
                manifest["counts"],
            )
    previous_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _build(paths, config, featurizer, batch_size, chunk_images, progress, start)
    finally:
        torch.set_num_threads(previous_threads)


def _build(
    paths: BenchmarkPaths,
    config: BenchmarkConfig,
    featurizer: Featurizer | None,
    batch_size: int,
    chunk_images: int,
    progress: Callable[[int, int], None] | None,
    start: float,
) -> BuildResult:
    if featurizer is None:
        featurizer = make_featurizer(
            resolve_featurizer(config.featurizer), batch_size, config.crop_size, config.seed
        )
    paths.root.mkdir(parents=True, exist_ok=True)
    _clear(paths)
    paths.features.mkdir()
    if paths.images is not None:
        paths.images.mkdir()

    entries: list[dict[str, Any]] = []
    test_items: list[tuple[Scene, list[Claim]]] = []
    with open(paths.scenes, "w", encoding="utf-8") as scenes_out:
        for ids in _chunks(config.num_images, chunk_images):
            scenes: list[Scene] = []
            crops, boxes = [], []
            for image_id in ids:
                scene = generate_scene(
                    image_id, config.seed, config.image_size, config.min_objects, config.max_objects
                )
                split = config.split_of(image_id)
                claims = sample_claims(
                    scene,
                    np.random.default_rng([config.seed, image_id, 1]),
                    config.captions_per_image,
                )
                if split == "test":
                    test_items.append((scene, claims))
                entries.append(_karpathy_entry(image_id, split, claims, config.captions_per_image))
                record = {
                    "image_id": image_id,
                    "split": split,
                    "scene": scene.to_dict(),
                    "captions": [c.to_dict() for c in claims],
                }
                scenes_out.write(json.dumps(record) + "\n")
                image = render_scene(scene)
                if paths.images is not None:
                    image.save(paths.images / f"{image_id}.png", optimize=False)
                box = region_boxes(scene, config.whole_image)
                crops.append(crop_regions(image, box, config.crop_size))
                boxes.append(box)
                scenes.append(scene)
            features = featurizer(np.concatenate(crops))
            offset = 0
            for scene, box in zip(scenes, boxes, strict=True):
                np.savez(
                    paths.features / f"{scene.image_id}.npz",
                    features=features[offset : offset + len(box)],
                    boxes=box,
                    image_w=np.float32(scene.width),
                    image_h=np.float32(scene.height),
                )
                offset += len(box)
            if progress is not None:
                progress(ids.stop, config.num_images)

    paths.captions.write_text(json.dumps({"dataset": "tags-shapes", "images": entries}))
    pairs = sample_minimal_pairs(
        test_items, config.seed, config.pairs_per_type, config.pair_sampler
    )
    write_pairs(pairs, paths.pairs)
    counts = {split: getattr(config, split) for split in SPLITS}
    counts.update(captions=len(entries) * config.captions_per_image, minimal_pairs=len(pairs))
    seconds = time.perf_counter() - start
    manifest = {
        "format": FORMAT,
        "config": _cache_key(config),
        "featurizer": {"name": featurizer.name, "dim": int(featurizer.dim)},
        "counts": counts,
        "build_seconds": round(seconds, 2),
        "torch_threads": torch.get_num_threads(),
        "content_hash": content_hash(paths.root),
    }
    paths.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
    return BuildResult(paths, False, seconds, featurizer.name, counts)


__all__ = [
    "BenchmarkConfig",
    "BenchmarkPaths",
    "BuildResult",
    "benchmark_version",
    "build_benchmark",
    "cached_manifest",
    "content_hash",
    "pair_sampler_of",
    "read_manifest",
    "resolve_featurizer",
]
