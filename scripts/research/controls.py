"""Hidden controls of a blind read: captions no reader may pass, and captions still true.

A read sheet mixes the negatives under test with these controls; a reader who passes a broken
control or fails a still-true one is not reading carefully (``scripts/benchmarks/blind_read.py``).
"""

from __future__ import annotations

_PERSONS = {"man", "woman", "boy", "girl", "dog", "child", "people", "men", "women", "person"}


def broken_control(caption: str, kind: int) -> str:
    """``caption`` broken in way ``kind`` (0-4): a nonsense noun, a dropped, doubled or
    swapped word, or a dangling "the of"."""
    words = caption.split()
    middle = len(words) // 2
    if kind == 0:
        index = next((i for i, w in enumerate(words) if w.lower() in _PERSONS), 1)
        words[index] = "brick"
    elif kind == 1:
        del words[middle]
    elif kind == 2:
        words.insert(middle, words[middle])
    elif kind == 3:
        words[middle], words[middle + 1] = words[middle + 1], words[middle]
    else:  # a dangling article and preposition: never a fair caption, whatever the
        # last word was ("sleeping" in its place made "are shoveling" a fair negative)
        words[-2 if words[-1] == "." else -1] = "the of"
    return " ".join(words)


def still_true_control(caption: str, kind: int) -> str:
    """``caption`` reworded so that it stays true (article changes, "Here, ...")."""
    words = caption.split()
    if words[0] in ("A", "An") and kind % 2 == 0:
        return " ".join(["The", *words[1:]])
    if words[0] == "The" and len(words) > 1:
        return " ".join(["An" if words[1][0].lower() in "aeiou" else "A", *words[1:]])
    return "Here, " + caption[0].lower() + caption[1:]


__all__ = ["broken_control", "still_true_control"]
