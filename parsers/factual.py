"""Reading FACTUAL scene-graph strings and CSV files.

The FACTUAL form lists tuples separated by ``" , "``:
``( subject , relation , object ) , ( entity , is , attribute ) , ( object )``.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from parsers.graph import Attribute, Entity, Relation, SceneGraph

_TUPLE = re.compile(r"\(([^()]*)\)")


def split_factual(text: str) -> list[tuple[str, ...]]:
    """Split a FACTUAL string into its tuples of stripped, lower-cased elements.

    Raises:
        ValueError: on text outside the tuples or on a tuple that is not 1 or 3 long.
    """
    tuples: list[tuple[str, ...]] = []
    rest = _TUPLE.sub(" ", text).replace(",", " ").strip()
    if rest:
        raise ValueError(f"not a FACTUAL scene graph (stray text {rest!r}): {text!r}")
    for body in _TUPLE.findall(text):
        parts = tuple(" ".join(p.split()).lower() for p in body.split(" , "))
        if len(parts) == 1 and "," in parts[0]:  # tolerate "( a,b,c )" spacing
            parts = tuple(" ".join(p.split()).lower() for p in parts[0].split(","))
        if len(parts) not in (1, 3) or not all(parts):
            raise ValueError(f"bad FACTUAL tuple {body!r} in {text!r}")
        tuples.append(parts)
    return tuples


def read_factual(text: str, caption: str = "") -> SceneGraph:
    """Build a :class:`SceneGraph` (without offsets) from a FACTUAL string.

    Entities are identified by name, as the string form cannot tell two same-named
    objects apart. ``( e , is , N )`` with a number becomes the entity's quantity.
    """
    graph = SceneGraph(caption=caption)
    index: dict[str, int] = {}
    quantities: dict[int, int] = {}

    def entity(name: str) -> int:
        if name not in index:
            index[name] = len(graph.entities)
            graph.entities.append(Entity(name=name, text=name))
        return index[name]

    for parts in split_factual(text):
        if len(parts) == 1:
            entity(parts[0])
            continue
        subj, pred, obj = parts
        s = entity(subj)
        if pred == "is":
            if obj.isdigit():
                quantities[s] = int(obj)
            else:
                graph.attributes.append(Attribute(entity=s, value=obj, text=obj))
        else:
            graph.relations.append(Relation(subject=s, predicate=pred, object=entity(obj)))
    for i, q in quantities.items():
        e = graph.entities[i]
        graph.entities[i] = Entity(name=e.name, text=e.text, quantity=q)
    return graph


@dataclass(frozen=True)
class FactualExample:
    caption: str
    scene_graph: str
    image_id: str = ""
    region_id: str = ""


def read_factual_csv(path: str | Path) -> list[FactualExample]:
    """Read a FACTUAL CSV (columns ``caption`` and ``scene_graph``; ids optional)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = {"caption", "scene_graph"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
        return [
            FactualExample(
                caption=row["caption"],
                scene_graph=row["scene_graph"],
                image_id=row.get("image_id", ""),
                region_id=row.get("region_id", ""),
            )
            for row in reader
        ]
