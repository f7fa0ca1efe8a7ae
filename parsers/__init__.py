"""Caption -> scene graph parsing (spaCy rules), the SceneGraph data model, FACTUAL I/O.

Layer: the bottom, beside ``heads``: imports nothing of ``tags`` (spaCy and the
standard library).
"""

from parsers.factual import FactualExample, read_factual, read_factual_csv, split_factual
from parsers.graph import Attribute, Entity, Relation, SceneGraph, char_span_to_token_indices

__all__ = [
    "Attribute",
    "Entity",
    "FactualExample",
    "Relation",
    "SceneGraph",
    "SceneGraphParser",
    "char_span_to_token_indices",
    "read_factual",
    "read_factual_csv",
    "split_factual",
]


def __getattr__(name: str):
    # The parser pulls in spaCy; load it only when asked for.
    if name == "SceneGraphParser":
        from parsers.scene_graph_parser import SceneGraphParser

        return SceneGraphParser
    raise AttributeError(f"module 'parsers' has no attribute {name!r}")
