"""SugarCrepe (Hsieh et al. 2023, github.com/RAIVNLab/sugar-crepe): seven JSON files
``{id: {filename, caption, negative_caption}}`` over COCO val2017 images."""

from __future__ import annotations

from pathlib import Path

from tags.evaluation.suites._files import load_json, text
from tags.evaluation.suites.base import ImageRef, Suite, SuiteError, SuiteItem, register_suite

#: The paper's grouping of the seven subsets (Hsieh et al. 2023, Table 2).
GROUPS: dict[str, tuple[str, ...]] = {
    "REPLACE": ("replace_obj", "replace_att", "replace_rel"),
    "SWAP": ("swap_obj", "swap_att"),
    "ADD": ("add_obj", "add_att"),
}

SUBSETS = (
    "add_att",
    "add_obj",
    "replace_att",
    "replace_obj",
    "replace_rel",
    "swap_att",
    "swap_obj",
)


def _files(path: Path) -> tuple[list[Path], list[str]]:
    if path.is_file():
        return [path], []
    has_files = any((path / f"{s}.json").is_file() for s in SUBSETS)
    folder = path if has_files else path / "data"
    found = [folder / f"{s}.json" for s in SUBSETS if (folder / f"{s}.json").is_file()]
    missing = [s for s in SUBSETS if not (folder / f"{s}.json").is_file()]
    if not found:
        raise SuiteError(f"suite sugarcrepe: no {{{','.join(SUBSETS)}}}.json in {path}")
    return found, missing


@register_suite("sugarcrepe", "SugarCrepe: 7 JSON files (DIR or one file) + COCO val2017 images")
def read_sugarcrepe(path: Path) -> Suite:
    files, missing = _files(path)
    items = []
    for file in files:
        data = load_json(file, "sugarcrepe")
        if not isinstance(data, dict):
            raise SuiteError(f"suite sugarcrepe: {file} must map ids to objects")
        for key, record in data.items():
            where = f"{file}[{key!r}]"
            if not isinstance(record, dict):
                raise SuiteError(f"suite sugarcrepe: {where}: expected an object")
            items.append(
                SuiteItem(
                    (ImageRef(text(record, ("filename",), where, "sugarcrepe")),),
                    (
                        text(record, ("caption",), where, "sugarcrepe"),
                        text(record, ("negative_caption",), where, "sugarcrepe"),
                    ),
                    file.stem,
                    str(key),
                )
            )
    notes = [f"sugarcrepe: subsets not found, left out: {', '.join(missing)}"] if missing else []
    return Suite("sugarcrepe", "options", items, notes=notes)


__all__ = ["GROUPS", "SUBSETS", "read_sugarcrepe"]
