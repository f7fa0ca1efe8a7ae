"""Scene-graph data model: entities, attributes and relations anchored in the caption.

Every element keeps character offsets into the caption, because negative generation later
masks and replaces exactly these spans. Offsets are half-open ``(start, end)`` pairs;
graphs read from gold FACTUAL strings carry no offsets (``None``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

CharSpan = tuple[int, int]

UNIT_TYPES = ("object", "attribute", "relation")


def _span(value: Sequence[int] | None) -> CharSpan | None:
    return None if value is None else (int(value[0]), int(value[1]))


def _spans(values: Iterable[Sequence[int]] | None) -> tuple[CharSpan, ...]:
    return tuple((int(s), int(e)) for s, e in values or ())


@dataclass(frozen=True)
class Entity:
    """An object mention.

    Attributes:
        name: canonical name, lemmatized head with its compound modifiers ("tree trunk").
        text: the head words as written in the caption ("tree trunks").
        head_span: characters of ``text`` (head noun with merged compounds).
        span: characters of the whole noun phrase (determiner, modifiers and head).
        quantity: counted number ("two dogs" -> 2), if any.
        quantity_span: characters of the number word.
    """

    name: str
    text: str | None = None
    head_span: CharSpan | None = None
    span: CharSpan | None = None
    quantity: int | None = None
    quantity_span: CharSpan | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entity:
        return cls(
            name=data["name"],
            text=data.get("text"),
            head_span=_span(data.get("head_span")),
            span=_span(data.get("span")),
            quantity=data.get("quantity"),
            quantity_span=_span(data.get("quantity_span")),
        )


@dataclass(frozen=True)
class Attribute:
    """A property of one entity (``entity`` indexes :attr:`SceneGraph.entities`)."""

    entity: int
    value: str
    text: str | None = None
    span: CharSpan | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attribute:
        return cls(data["entity"], data["value"], data.get("text"), _span(data.get("span")))


@dataclass(frozen=True)
class Relation:
    """``subject --predicate--> object`` between two entities.

    ``predicate`` is lemmatized ("sitting in" -> "sit in"); ``spans`` are the characters of
    the predicate words in the caption (several pieces when they are not contiguous, empty
    when the predicate is implied, e.g. a possessive's "have").
    """

    subject: int
    predicate: str
    object: int
    spans: tuple[CharSpan, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["spans"] = [list(s) for s in self.spans]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Relation:
        return cls(data["subject"], data["predicate"], data["object"], _spans(data.get("spans")))


@dataclass
class SceneGraph:
    """A caption's scene graph; elements refer to entities by index."""

    caption: str = ""
    entities: list[Entity] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    #: The caption's tokens as ``(start, end, Penn tag)`` (empty for graphs read from
    #: FACTUAL strings); negative generation reads them for number and verb form.
    tokens: list[tuple[int, int, str]] = field(default_factory=list)

    # ------------------------------------------------------------------ views
    def __len__(self) -> int:
        return len(self.entities)

    def is_empty(self) -> bool:
        return not self.entities

    def tags_in(self, span: CharSpan) -> list[str]:
        """Penn tags of the tokens inside ``span`` (empty without :attr:`tokens`)."""
        start, end = span
        return [tag for s, e, tag in self.tokens if s >= start and e <= end and e > s]

    def attributes_of(self, entity: int) -> list[Attribute]:
        return [a for a in self.attributes if a.entity == entity]

    def units(self) -> list[tuple[str, tuple[CharSpan, ...]]]:
        """Maskable units as ``(type, char spans)``: objects, attributes, relations.

        Quantities count as attributes. Units without offsets are left out.
        """
        out: list[tuple[str, tuple[CharSpan, ...]]] = []
        for ent in self.entities:
            if ent.head_span is not None:
                out.append(("object", (ent.head_span,)))
            if ent.quantity_span is not None:
                out.append(("attribute", (ent.quantity_span,)))
        out.extend(("attribute", (a.span,)) for a in self.attributes if a.span is not None)
        out.extend(("relation", r.spans) for r in self.relations if r.spans)
        return out

    # ------------------------------------------------------------ FACTUAL form
    def to_factual(self) -> str:
        """The FACTUAL string: ``( s , r , o ) , ( e , is , attr ) , ( obj )``.

        Objects are written by their canonical ``name``. Relations first, then attributes
        (quantities as ``is , N``), then entities that take part in neither.
        """
        parts: list[str] = []
        used: set[int] = set()
        for rel in self.relations:
            s, o = self.entities[rel.subject], self.entities[rel.object]
            parts.append(f"( {_surface(s)} , {rel.predicate} , {_surface(o)} )")
            used.update((rel.subject, rel.object))
        for i, ent in enumerate(self.entities):
            if ent.quantity is not None and ent.quantity > 1:
                parts.append(f"( {_surface(ent)} , is , {ent.quantity} )")
                used.add(i)
        for attr in self.attributes:
            parts.append(f"( {_surface(self.entities[attr.entity])} , is , {attr.value} )")
            used.add(attr.entity)
        seen: set[str] = set()
        for i, ent in enumerate(self.entities):
            name = _surface(ent)
            if i not in used and name not in seen:
                parts.append(f"( {name} )")
                seen.add(name)
        return " , ".join(parts)

    # ---------------------------------------------------------------- JSON form
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "caption": self.caption,
            "entities": [e.to_dict() for e in self.entities],
            "attributes": [a.to_dict() for a in self.attributes],
            "relations": [r.to_dict() for r in self.relations],
        }
        if self.tokens:
            data["tokens"] = [list(t) for t in self.tokens]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SceneGraph:
        return cls(
            caption=data.get("caption", ""),
            entities=[Entity.from_dict(e) for e in data.get("entities", [])],
            attributes=[Attribute.from_dict(a) for a in data.get("attributes", [])],
            relations=[Relation.from_dict(r) for r in data.get("relations", [])],
            tokens=[(int(s), int(e), str(t)) for s, e, t in data.get("tokens", [])],
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> SceneGraph:
        return cls.from_dict(json.loads(text))


def _surface(entity: Entity) -> str:
    return entity.name.lower()


def char_span_to_token_indices(span: CharSpan, offsets: Sequence[tuple[int, int]]) -> list[int]:
    """Indices of the tokens whose ``(start, end)`` offsets overlap ``span``.

    ``offsets`` is what a fast tokenizer returns with ``return_offsets_mapping=True``;
    special tokens with ``(0, 0)`` offsets never match.
    """
    start, end = span
    return [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
