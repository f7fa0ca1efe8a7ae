"""Renderings of :class:`~tags.evaluation.explain.Explanation`: a console line and an HTML
page in the style of the TAGS paper's Figure 4 (words shaded by mismatch probability, the
WoC correction written above a word)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from tags.evaluation.explain import Explanation


def console_line(explanation: Explanation, threshold: float = 0.5) -> str:
    """``ITM 0.87 | a .02  red* .91 [blue]  car .05`` (``*``: mismatch >= ``threshold``)."""
    parts = []
    for w in explanation.words:
        if w.mismatch is None:
            parts.append(f"{w.word} -")
            continue
        mark = "*" if w.mismatch >= threshold else ""
        fix = f" [{w.correction}]" if w.correction else ""
        parts.append(f"{w.word}{mark} {w.mismatch:.2f}{fix}")
    return f"ITM {explanation.itm_score:.3f} | " + "  ".join(parts)


_STYLE = """
body { font-family: sans-serif; margin: 2em; }
.pair { margin: 1.2em 0; font-size: 1.25em; line-height: 2.6em; }
.meta { color: #555; font-size: 0.75em; }
.w { padding: 0.1em 0.15em; border-radius: 0.2em; }
ruby rt { color: #1a7f37; font-size: 0.6em; font-weight: bold; }
"""


def _word(word: str, mismatch: float | None, correction: str | None) -> str:
    text = html.escape(word)
    if mismatch is None:
        return f'<span class="w" title="not read (past the text length)">{text}</span>'
    shade = f"rgba(220, 40, 40, {mismatch:.3f})"
    span = (
        f'<span class="w" style="background: {shade}" title="mismatch {mismatch:.3f}">{text}</span>'
    )
    if correction:
        return f"<ruby>{span}<rt>{html.escape(correction)}</rt></ruby>"
    return span


def render_html(explanations: Sequence[Explanation], title: str = "tags explain") -> str:
    """A standalone HTML page: one block per pair, ITM score and image name above it."""
    blocks = []
    for e in explanations:
        words = " ".join(_word(w.word, w.mismatch, w.correction) for w in e.words)
        image = f" &middot; image {html.escape(str(e.image))}" if e.image is not None else ""
        blocks.append(
            f'<div class="pair"><div class="meta">ITM score {e.itm_score:.3f}{image}</div>'
            f"{words}</div>"
        )
    return (
        f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{_STYLE}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
        "<p class='meta'>Shade: the word-discrimination head's mismatch probability (white 0, "
        "red 1). Green above a word: the word-correction head's reading.</p>\n"
        + "\n".join(blocks)
        + "\n</body></html>\n"
    )


__all__ = ["console_line", "render_html"]
