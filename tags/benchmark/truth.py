"""Scene truth for free text: parse a caption back into a :class:`Claim` and check it.

The shapes benchmark knows every scene, so any caption written in its template grammar can
be judged exactly. :func:`caption_truth` says whether a caption (a positive, a synthetic
negative, a retrieved caption of another image) is ``"true"`` or ``"false"`` of a scene, or
``"ungrammatical"`` when it is not a sentence of the benchmark's grammar (wrong article,
unknown word, broken template). This measures false negatives that a caption-based filter
missed and negatives that a text-only model can spot by grammar alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from tags.benchmark.captions import LIST_TEMPLATE, RELATION_TEMPLATES, Claim, Mention, holds
from tags.benchmark.scenes import COLORS, RELATIONS, SHAPES, SIZES, Scene

Truth = Literal["true", "false", "ungrammatical"]
TRUTH_VALUES: tuple[Truth, ...] = ("true", "false", "ungrammatical")

_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4}
_MENTION = re.compile(
    r"(a|an) (?:(" + "|".join(SIZES) + r") )?(?:(" + "|".join(COLORS) + r") )?"
    r"(" + "|".join(SHAPES) + r")"
)
_RELATION = "|".join(re.escape(r) for r in RELATIONS)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (
        template,
        re.compile(
            "^"
            + re.escape(template)
            .replace(r"\{a\}", "(?P<a>.+?)")
            .replace(r"\{rel\}", f"(?P<rel>{_RELATION})")
            .replace(r"\{b\}", "(?P<b>.+)")
            + "$"
        ),
    )
    for template in RELATION_TEMPLATES
)
_LIST = re.compile(r"^(?P<n>\w+) shapes: (?P<items>.+)$")


def normalize(text: str) -> str:
    """Lower-case, single spaces, no space before ``,``/``:``, no final full stop."""
    text = " ".join(text.lower().split())
    text = re.sub(r"\s+([,:])", r"\1", text)
    return text.rstrip(" .")


def parse_mention(text: str) -> Mention | None:
    """``"a small red circle"`` -> ``Mention``; ``None`` unless exactly one well-formed mention."""
    match = _MENTION.fullmatch(text)
    if match is None:
        return None
    article, size, color, shape = match.groups()
    first = (size or color or shape)[0]
    if (article == "an") != (first in "aeiou"):
        return None
    return Mention(shape, color, size)


def parse_claim(text: str) -> Claim | None:
    """The claim a caption states, or ``None`` when it is outside the benchmark's grammar."""
    text = normalize(text)
    listed = _LIST.match(text)
    if listed is not None:
        count = _NUMBER_WORDS.get(listed["n"])
        parts = listed["items"].split(", ")
        if count is None or len(parts) < 1 or " and " not in parts[-1]:
            return None
        head, last = parts[-1].rsplit(" and ", 1)
        items = [*parts[:-1], head, last]
        mentions = [parse_mention(item) for item in items]
        if len(mentions) != count or any(m is None for m in mentions):
            return None
        return Claim(LIST_TEMPLATE, tuple(m for m in mentions if m is not None))
    # "there is a X above a Y" also matches "{a} {rel} {b}" with a = "there is a X": the
    # mention parser rejects that reading, so trying every template is unambiguous.
    for template, pattern in _PATTERNS:
        match = pattern.match(text)
        if match is None:
            continue
        a, b = parse_mention(match["a"]), parse_mention(match["b"])
        if a is not None and b is not None:
            return Claim(template, (a, b), match["rel"])
    return None


def caption_truth(text: str, scene: Scene) -> Truth:
    """``"true"``/``"false"`` of ``scene``, or ``"ungrammatical"`` outside the grammar."""
    claim = parse_claim(text)
    if claim is None:
        return "ungrammatical"
    return "true" if holds(claim, scene) else "false"


def truth_shares(values: Iterable[Truth]) -> dict[str, float]:
    """Share of each truth value (``true`` = missed false negatives) and the count ``n``."""
    values = list(values)
    n = len(values)
    shares: dict[str, float] = {t: (values.count(t) / n if n else 0.0) for t in TRUTH_VALUES}
    shares["n"] = float(n)
    return shares


__all__ = [
    "TRUTH_VALUES",
    "Truth",
    "caption_truth",
    "normalize",
    "parse_claim",
    "parse_mention",
    "truth_shares",
]
