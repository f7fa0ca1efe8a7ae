"""Edit kinds: what a negative changes, read from its edits (``tags generate --kinds``).

``attribute`` (a colour, size, material, state or count; pluralize included), ``person``
(a person noun by another: gender or age, "a man" -> "a woman"), ``object`` (any other
thing), ``relation`` (a verb or preposition), ``swap`` (two units of the caption exchanged)
and ``add`` (an inserted attribute or object). Blind readers judged the kinds very
differently (docs/generate.md, measured quality): attribute and person edits read good
far more often than other objects and relations, so a suite that must be clearly false can
keep only those, at a cost in coverage.

A pure function of a candidate's edits: the same in every engine, shard and resume. Edits
that only agree with another (operation ``agree``, a pronoun after a person's gender
change) are not a kind of their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tags.core.edits import unit_edits
from tags.negatives.lexicon import AGE_COUNTERPARTS, GENDERED_NOUNS, PEOPLE_WORDS, PERSON_NOUNS

#: Every edit kind, in the order the docs list them.
EDIT_KINDS = ("attribute", "person", "object", "relation", "swap", "add")

#: The head words a person edit replaces and writes ("a man", "children").
_PERSON_WORDS = PERSON_NOUNS | GENDERED_NOUNS | PEOPLE_WORDS | frozenset(AGE_COUNTERPARTS)


def _head(text: str) -> str:
    words = text.lower().split()
    return words[-1].strip(".,;:!?'\"") if words else ""


def edit_kind(edit: Any) -> str:
    """The kind (:data:`EDIT_KINDS`) of one edit (an :class:`~tags.core.types.Edit` or its
    dict)."""
    get = edit.get if isinstance(edit, dict) else lambda key: getattr(edit, key)
    operation, kind = get("operation"), get("type")
    if operation in ("swap", "add"):
        return operation
    if kind == "object" and {_head(get("original")), _head(get("replacement"))} <= _PERSON_WORDS:
        return "person"
    return kind


def kinds_of(edits: Iterable[Any]) -> frozenset[str]:
    """The kinds of a negative's unit edits (pronouns that follow are not counted)."""
    return frozenset(edit_kind(e) for e in unit_edits(edits))


def parse_kinds(text: str | Iterable[str]) -> tuple[str, ...]:
    """Kinds from ``"attribute,person"`` (or a list), sorted and deduplicated;
    :class:`ValueError` naming the kinds for an unknown one or for none."""
    items = text.split(",") if isinstance(text, str) else list(text)
    found = sorted({item.strip().lower() for item in items if item.strip()})
    unknown = [k for k in found if k not in EDIT_KINDS]
    if unknown or not found:
        what = f"unknown kind {', '.join(map(repr, unknown))}" if unknown else "no kind given"
        raise ValueError(f"{what}: choose from {', '.join(EDIT_KINDS)}")
    return tuple(found)


__all__ = ["EDIT_KINDS", "edit_kind", "kinds_of", "parse_kinds"]
