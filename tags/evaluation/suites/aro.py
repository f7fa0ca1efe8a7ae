"""ARO (Yuksekgonul et al. 2023, github.com/mertyg/vision-language-models-are-bows).

- VG-Relation / VG-Attribution: ``visual_genome_{relation,attribution}.json``, a list of
  ``{image_path, bbox_x, bbox_y, bbox_w, bbox_h, true_caption, false_caption}`` plus
  ``relation_name`` (VG-R) or ``attributes`` (VG-A, a pair); the image is cropped to the box
  and the images live in ``images/`` beside the file (as the official loader expects).
- COCO-Order / Flickr-Order: each test caption against four word-order perturbations of
  itself, the original first (see :mod:`.order`).
"""

from __future__ import annotations

from pathlib import Path

from tags.evaluation.suites._files import find_file, first_of, folder_of, iter_records, text
from tags.evaluation.suites.base import ImageRef, Suite, SuiteError, SuiteItem, register_suite

BOX_KEYS = ("bbox_x", "bbox_y", "bbox_w", "bbox_h")
#: the official VG-Attribution table keeps attribute pairs with at least 25 items
VGA_MIN_COUNT = 25


def _box(record: dict, where: str, suite: str) -> tuple[float, float, float, float] | None:
    if not any(k in record for k in BOX_KEYS):
        return None
    try:
        x, y, w, h = (float(first_of(record, (k,), where, suite)) for k in BOX_KEYS)
    except (TypeError, ValueError):
        raise SuiteError(f"suite {suite}: {where}: bbox_x/y/w/h must be numbers") from None
    return x, y, w, h


def _read_vg(path: Path, suite: str, file_name: str, subset_of) -> Suite:
    file = find_file(path, (file_name,), suite)
    items = []
    for where, record in iter_records(file, suite):
        image = ImageRef(text(record, ("image_path",), where, suite), _box(record, where, suite))
        captions = (
            text(record, ("true_caption",), where, suite),
            text(record, ("false_caption",), where, suite),
        )
        items.append(SuiteItem((image,), captions, subset_of(record, where), str(len(items))))
    return Suite(suite, "options", items, image_root=folder_of(file, "images"))


@register_suite("vg-relation", "ARO VG-Relation: visual_genome_relation.json + images/")
def read_vg_relation(path: Path) -> Suite:
    return _read_vg(
        path,
        "vg-relation",
        "visual_genome_relation.json",
        lambda r, where: text(r, ("relation_name",), where, "vg-relation"),
    )


@register_suite("vg-attribution", "ARO VG-Attribution: visual_genome_attribution.json + images/")
def read_vg_attribution(path: Path) -> Suite:
    def subset(record: dict, where: str) -> str:
        attributes = first_of(record, ("attributes",), where, "vg-attribution")
        if not isinstance(attributes, list) or len(attributes) != 2:
            raise SuiteError(f"suite vg-attribution: {where}: 'attributes' must be a pair")
        return f"{attributes[0]}_{attributes[1]}"

    suite = _read_vg(path, "vg-attribution", "visual_genome_attribution.json", subset)
    suite.macro_min_count = VGA_MIN_COUNT
    return suite


def _read_order(path: Path, suite: str, annotation: str) -> Suite:
    from tags.evaluation.suites.order import order_options

    file = find_file(path, (f"{suite}.json", f"{suite}.jsonl", annotation), suite)
    items, to_perturb = [], []
    for where, record in iter_records(file, suite):
        image = ImageRef(text(record, ("image", "image_path", "filename"), where, suite))
        options = record.get("caption_options")
        if options is not None:
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                raise SuiteError(f"suite {suite}: {where}: caption_options must be strings")
            items.append(SuiteItem((image,), tuple(options), "order", str(len(items))))
            continue
        captions = first_of(record, ("caption",), where, suite)
        captions = [captions] if isinstance(captions, str) else captions
        to_perturb += [(image, c) for c in captions]
    notes = []
    if to_perturb:
        rows = order_options([c for _, c in to_perturb])
        items += [
            SuiteItem((image,), tuple(opts), "order", str(len(items) + n))
            for n, ((image, _), opts) in enumerate(zip(to_perturb, rows))
        ]
        notes.append(
            f"{suite}: perturbations made here from {file.name} (seed 0), as the ARO loader "
            "does at run time; numbers vary slightly with the seed"
        )
    return Suite(suite, "options", items, notes=notes)


@register_suite("coco-order", "ARO COCO-Order: caption_options JSON(L), or coco_karpathy_test.json")
def read_coco_order(path: Path) -> Suite:
    return _read_order(path, "coco-order", "coco_karpathy_test.json")


@register_suite("flickr-order", "ARO Flickr-Order: caption_options JSON(L), or flickr30k_test.json")
def read_flickr_order(path: Path) -> Suite:
    return _read_order(path, "flickr-order", "flickr30k_test.json")


__all__ = [
    "VGA_MIN_COUNT",
    "read_coco_order",
    "read_flickr_order",
    "read_vg_attribution",
    "read_vg_relation",
]
