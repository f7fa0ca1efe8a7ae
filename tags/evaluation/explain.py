"""What a TAGS-DC model sees in a caption: per-word mismatch, corrections and the ITM score.

For (image, caption) pairs, one forward of the model with its ITM, word-discrimination (WoD)
and word-correction (WoC) heads gives

- the ITM score (probability that the caption matches the image);
- per token, the WoD head's mismatch probability ``softmax(wod_logits)[..., 0]`` (class 1 is
  "the token equals the positive's", the training label convention);
- per token, the WoC head's argmax token (what the model would write there).

Tokens are aggregated to the caption's words (``caption.split()``, so one entry per
whitespace-separated word, punctuation attached as written): a word's mismatch is the
largest of its pieces' mismatches, and its correction is the decoded WoC argmax of its
pieces when that differs from the word's own pieces (else ``None``). Words past the model's
text length have no tokens: their mismatch is ``None``.

:func:`token_accuracy` scores the heads on generated negatives (``tags generate`` output with
edits): WoD accuracy at threshold 0.5 over every labelled token, and WoC accuracy over every
labelled token and over the edited (refilled) tokens only.

The model is anything with TagsModel's ``forward(input_ids, attention_mask, heads=...,
**images)``: a :class:`~tags.modeling.TagsModel` or a backend's trainable module (BLIP with
its saved TAGS heads).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

#: WoD class that means "this token matches the positive caption"
MATCH_CLASS = 1


@dataclass
class WordExplanation:
    """One word of the caption: its character span, mismatch probability and correction."""

    word: str
    start: int
    end: int
    mismatch: float | None
    correction: str | None = None
    pieces: list[str] = field(default_factory=list)
    piece_mismatch: list[float] = field(default_factory=list)


@dataclass
class Explanation:
    """The model's reading of one (image, caption) pair."""

    caption: str
    itm_score: float
    words: list[WordExplanation]
    image: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def word_spans(caption: str) -> list[tuple[int, int]]:
    """Character spans of ``caption.split()``'s words, in order."""
    spans, cursor = [], 0
    for word in caption.split():
        start = caption.index(word, cursor)
        spans.append((start, start + len(word)))
        cursor = start + len(word)
    return spans


def _tokenize(tokenizer: Any, captions: Sequence[str], max_length: int) -> dict[str, Any]:
    return tokenizer(
        list(captions),
        padding=True,
        truncation=True,
        max_length=max_length,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_tensors="pt",
    )


def _words(
    caption: str,
    ids: list[int],
    offsets: list[tuple[int, int]],
    special: list[int],
    mismatch: list[float],
    corrected: list[int],
    tokenizer: Any,
) -> list[WordExplanation]:
    spans = word_spans(caption)
    pieces: list[list[int]] = [[] for _ in spans]
    for t, ((s, e), is_special) in enumerate(zip(offsets, special)):
        if is_special or e <= s:
            continue
        w = next((i for i, (a, b) in enumerate(spans) if a <= s < b), None)
        if w is not None:
            pieces[w].append(t)
    words = []
    for (a, b), tokens in zip(spans, pieces):
        own = [ids[t] for t in tokens]
        fixed = [corrected[t] for t in tokens]
        correction = None
        if tokens and fixed != own:
            pieces_text = tokenizer.convert_ids_to_tokens(fixed)
            correction = tokenizer.convert_tokens_to_string(pieces_text).strip()
        words.append(
            WordExplanation(
                caption[a:b],
                a,
                b,
                max(mismatch[t] for t in tokens) if tokens else None,
                correction,
                tokenizer.convert_ids_to_tokens(own),
                [mismatch[t] for t in tokens],
            )
        )
    return words


@torch.no_grad()
def explain(
    model: torch.nn.Module,
    tokenizer: Any,
    captions: Sequence[str],
    images: dict[str, torch.Tensor],
    max_length: int = 40,
    image_names: Sequence[str | None] | None = None,
) -> list[Explanation]:
    """Explanations of ``captions``, row-aligned with the collated ``images`` (a batch of one
    image is broadcast against every caption)."""
    enc = _tokenize(tokenizer, captions, max_length)
    device = next(model.parameters()).device
    # the WoC vocabulary projection runs on the caption's own tokens only
    read = enc["attention_mask"].bool() & ~enc["special_tokens_mask"].bool()
    out = model(
        input_ids=enc["input_ids"].to(device),
        attention_mask=enc["attention_mask"].to(device),
        heads=("itm", "wod", "woc"),
        masked_positions=read.to(device),
        **{k: v.to(device) for k, v in images.items()},
    )
    mismatch = torch.softmax(out.wod_logits.float(), dim=-1)[..., 1 - MATCH_CLASS].cpu()
    corrected = enc["input_ids"].clone()
    corrected[read] = out.woc_logits.argmax(dim=-1).cpu()
    scores = out.itm_scores.float().reshape(-1).cpu()
    names = list(image_names) if image_names is not None else [None] * len(captions)
    result = []
    for i, caption in enumerate(captions):
        length = int(enc["attention_mask"][i].sum())
        words = _words(
            caption,
            enc["input_ids"][i, :length].tolist(),
            [tuple(x) for x in enc["offset_mapping"][i, :length].tolist()],
            enc["special_tokens_mask"][i, :length].tolist(),
            mismatch[i, :length].tolist(),
            corrected[i, :length].tolist(),
            tokenizer,
        )
        score = float(scores[i] if scores.numel() > 1 else scores[0])
        result.append(Explanation(caption, score, words, names[i]))
    return result


# ---------------------------------------------------------------------- head accuracy
@dataclass
class TokenAccuracy:
    """Counts behind the WoD / WoC accuracies on generated negatives."""

    negatives: int = 0
    wod_tokens: int = 0
    wod_correct: int = 0
    woc_tokens: int = 0
    woc_correct: int = 0
    woc_edited_tokens: int = 0
    woc_edited_correct: int = 0

    def add(self, other: TokenAccuracy) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @staticmethod
    def _ratio(a: int, b: int) -> float | None:
        return 100.0 * a / b if b else None

    def summary(self) -> dict[str, Any]:
        return {
            "negatives": self.negatives,
            "wod_accuracy": self._ratio(self.wod_correct, self.wod_tokens),
            "woc_accuracy": self._ratio(self.woc_correct, self.woc_tokens),
            "woc_accuracy_edited": self._ratio(self.woc_edited_correct, self.woc_edited_tokens),
            "wod_tokens": self.wod_tokens,
            "woc_tokens": self.woc_tokens,
            "woc_edited_tokens": self.woc_edited_tokens,
        }


def label_records(
    records: Iterable[dict[str, Any]], tokenizer: Any, max_length: int
) -> list[tuple[list[int], list[int], list[int], list[bool]]]:
    """``(input_ids, wod_labels, woc_labels, edited)`` of ``tags generate`` records, from
    their texts and edits with ``tokenizer`` (cut to ``max_length``, keeping ``[SEP]``)."""
    from tags.core.types import Edit
    from tags.negatives import token_labels

    rows = []
    for record in records:
        edits = [Edit.from_dict(e) for e in record.get("edits", [])]
        lab = token_labels(record["positive"], record["negative"], edits, tokenizer)
        row = (lab.input_ids, lab.wod_labels, lab.woc_labels, lab.edited)
        if len(row[0]) > max_length:
            row = tuple([*x[: max_length - 1], x[-1]] for x in row)  # type: ignore[assignment]
        rows.append(row)
    return rows


@torch.no_grad()
def token_accuracy(
    model: torch.nn.Module,
    labelled: Sequence[tuple[list[int], list[int], list[int], list[bool]]],
    images: dict[str, torch.Tensor],
    pad_token_id: int = 0,
    threshold: float = 0.5,
) -> TokenAccuracy:
    """WoD accuracy (a token is predicted to match when P(match) >= ``threshold``) and WoC
    accuracy (argmax equals the positive's token) of one batch of labelled negatives,
    row-aligned with ``images``."""
    from tags.data import pad_text

    ids, mask = pad_text([r[0] for r in labelled], pad_token_id)
    width = ids.shape[1]

    def padded(column: int, fill: Any) -> torch.Tensor:
        return torch.tensor([list(r[column]) + [fill] * (width - len(r[column])) for r in labelled])

    wod, woc, edited = padded(1, -100), padded(2, -100), padded(3, False).bool()
    wod_on, woc_on = wod != -100, woc != -100
    device = next(model.parameters()).device
    out = model(
        input_ids=ids.to(device),
        attention_mask=mask.to(device),
        heads=("wod", "woc"),
        masked_positions=woc_on.to(device),  # WoC logits at the labelled tokens only
        **{k: v.to(device) for k, v in images.items()},
    )
    p_match = torch.softmax(out.wod_logits.float(), dim=-1)[..., MATCH_CLASS].cpu()
    predicted = (p_match >= threshold).long()
    right = out.woc_logits.argmax(dim=-1).cpu() == woc[woc_on]
    return TokenAccuracy(
        negatives=len(labelled),
        wod_tokens=int(wod_on.sum()),
        wod_correct=int((predicted == wod)[wod_on].sum()),
        woc_tokens=int(woc_on.sum()),
        woc_correct=int(right.sum()),
        woc_edited_tokens=int(edited[woc_on].sum()),
        woc_edited_correct=int(right[edited[woc_on]].sum()),
    )


__all__ = [
    "MATCH_CLASS",
    "Explanation",
    "TokenAccuracy",
    "WordExplanation",
    "explain",
    "label_records",
    "token_accuracy",
    "word_spans",
]
