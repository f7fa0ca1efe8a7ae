"""The evidence service's verb classes: what the relation and act operators both ask of a verb.

Postures and plain locomotion (:data:`STILL_POSTURES`, :data:`MOVING_VERBS`), verbs kept as
originals but never written (:data:`COLLOQUIAL_VERBS`), how often the writers of one image
may say two verbs of one act (:data:`CODESCRIBED_LIFT`), and whether a verb is a state
(:func:`is_state`, WordNet). Not an operator: ``replace_relation`` and ``replace_act``
import it.

May import: ``evidence``.
"""

from __future__ import annotations

import math

from tags.negatives.operators.evidence import SceneEvidence

#: Two posture or locomotion verbs whose image-group co-description lift (either way) is at
#: least this (log 2: said of one image twice as often as chance, ``+1`` smoothed) are not
#: exchanged: "running" / "jumping" (log 1.0 on Flickr30K dev), "jumping" / "flying" (1.2).
CODESCRIBED_LIFT = math.log(2.0)

#: Verbs kept as originals but never written as substitutes: "laying on" is how captions
#: often write "lying on" (a posture, in :data:`~tags.negatives.lexicon.EXCLUSIVE_VERBS`),
#: not standard English.
COLLOQUIAL_VERBS = frozenset({"lay"})

#: Verbs of a moving body and the still postures it cannot hold while moving: a moving
#: verb may become a still one in another frame (see ``replace_relation``).
MOVING_VERBS = frozenset({"walk", "run", "climb", "jog"})
STILL_POSTURES = frozenset({"sit", "stand", "lie", "kneel", "squat"})

#: WordNet verb classes of states, which go with any act ("holding" a horse while riding it,
#: "having" a bag while walking): never exclusive by image-group evidence.
STATE_CLASSES = frozenset({"verb.stative", "verb.possession"})


def is_state(evidence: SceneEvidence, verb: str) -> bool:
    """Whether a verb's first sense is a state or possession ("hold", "have", "keep")."""
    return evidence.wordnet.verb_class(verb) in STATE_CLASSES


__all__ = [
    "CODESCRIBED_LIFT",
    "COLLOQUIAL_VERBS",
    "MOVING_VERBS",
    "STATE_CLASSES",
    "STILL_POSTURES",
    "is_state",
]
