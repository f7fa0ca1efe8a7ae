"""Replace an act: an -ing verb said of its subject with nothing after it ("the boy is
running", "a woman sitting and smiling": FACTUAL's ``boy, is, running``) by another act
that excludes it ("the boy is sitting").

Only postures and plain locomotion are replaced and written (:data:`BODY_ACTS`: sit, stand,
lie, kneel, squat, walk, run, climb, jog, jump, dance): they need no place or gear and
exclude each other at one moment, while "surfing" is done standing and "playing" goes with
anything. Two acts exclude each other by the evidence verb relations use
(:mod:`~tags.negatives.operators.verbs`, as ``replace_relation``): both posture or locomotion verbs that
the writers of one image do not say of one act, or two acts they never say together
(``SceneCounts.verbs_exclusive``). The substitute is an act the corpus gives the subject (a
person: any person), not in the caption, and it fits every thing the caption names about as
well as the original (:meth:`SceneCounts.verb_lift`, at most ``MIN_VERB_FIT`` worse: "a man
with a dog walking" -> "jumping", not a posture never said with dogs).

An act stays when another act of the caption constrains it ("sitting and taking notes" ->
not "running"), when it describes its noun ("a smiling woman"), when something hangs on it
("walking uphill", "jumping to make a shot"); the planner drops any unit in an alternative
("standing or lying").
The edit is typed ``relation``, as SugarCrepe's ``replace_rel`` counts actions.

May import: ``proposals``, ``evidence``, ``context``, ``base``, ``registry`` and the evidence
service's helpers (``choices``, ``verbs``); never another operator module.
"""

from __future__ import annotations

from collections import Counter

from tags.negatives.lexicon import EXCLUSIVE_VERBS
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.choices import top_choices
from tags.negatives.operators.context import CaptionContext
from tags.negatives.operators.evidence import MIN_VERB_FIT, is_act
from tags.negatives.operators.proposals import Choice, PlannedUnit, Proposal
from tags.negatives.operators.registry import register_operator
from tags.negatives.operators.verbs import (
    CODESCRIBED_LIFT,
    COLLOQUIAL_VERBS,
    MOVING_VERBS,
    STILL_POSTURES,
    is_state,
)
from tags.negatives.scenes import normal, verb_lemma

#: The acts replaced and written: postures and plain locomotion, which need no place or gear
#: and exclude each other at one moment ("a man walking" -> "sitting"; not "skiing", which
#: needs snow, nor from "surfing", done standing).
BODY_ACTS = STILL_POSTURES | MOVING_VERBS | {"jump", "dance"}


def act_substitutes(context: CaptionContext, attribute) -> tuple[Choice, ...]:
    """The acts that may replace one bare act of the caption (see the module docstring)."""
    graph, evidence = context.graph, context.evidence
    scenes, refuse = evidence.scenes, evidence.refuse
    written = normal(graph.caption[slice(*attribute.span)])
    verb = verb_lemma(written)
    if verb not in BODY_ACTS:
        # "surfing", "skiing", "playing": done standing or sitting, or anything at all
        refuse("act:not_a_posture", unit=True)
        return ()
    if any(v != verb and not is_state(evidence, v) for v in context.verbs):
        # another act of the caption constrains this one ("sitting and taking notes" ->
        # not "running"; "running as she hits the ball" -> not "sitting")
        refuse("act:other_acts", unit=True)
        return ()
    name = context.names[attribute.entity]
    made = evidence.wordnet.is_artifact(name)  # "a car running": not a posture
    scene = sorted(set(context.names))  # the act must fit every thing the caption names
    weights: Counter = Counter()
    for other, count in sorted(evidence.acts_of(name).items()):
        lemma = verb_lemma(other)
        if count < evidence.min_count or lemma == verb or lemma in COLLOQUIAL_VERBS:
            continue
        if lemma not in BODY_ACTS or other in context.words:
            refuse("act:not_a_posture")
            continue  # "sitting and smiling" -> not "sitting and sitting"; not "skiing"
        codescribed = max(
            scenes.verb_codescription_lift(verb, lemma),
            scenes.verb_codescription_lift(lemma, verb),
        )
        posture = (
            verb in EXCLUSIVE_VERBS
            and lemma in EXCLUSIVE_VERBS
            and not made
            and codescribed < CODESCRIBED_LIFT
        )
        if not (posture or scenes.verbs_exclusive(verb, lemma)):
            refuse("act:verbs_not_exclusive")
            continue  # "smiling" / "laughing" may both hold
        if evidence.wordnet.related(verb, lemma, "v"):
            refuse("act:synonym")
            continue
        fit = min(
            (scenes.verb_lift(n, lemma) - scenes.verb_lift(n, verb, 1) for n in scene),
            default=0.0,
        )
        if fit < MIN_VERB_FIT:
            refuse("act:scene")
            continue  # "a man walking on a city street" -> not "surfing"
        weights[(other,)] += count**evidence.frequency_power
    return top_choices(weights)


#: Words after an act that start another clause or phrase, so the act stands alone.
_CLAUSE_STARTS = frozenset({"and", "while", "as", "with", "in", "on", "at", "near"})


def _ends_clause(graph, span) -> bool:
    """Whether nothing hangs on the act: it ends the caption or a clause, or a place or
    "with" phrase follows ("walking , ..." "sitting while ...", "standing in a park");
    not an adverb, particle or purpose ("walking uphill", "jumping to make a shot")."""
    following = [(s, e, t) for s, e, t in graph.tokens if s >= span[1]]
    if not following:
        return True
    start, end, tag = following[0]
    return tag in {",", ".", ":"} or graph.caption[start:end].lower() in _CLAUSE_STARTS


@register_operator("replace_act", rank=25)
class ReplaceAct(EditOperator):
    """Replace a bare act (an -ing attribute: "smiling", "running") by an exclusive one."""

    edit_types = ("relation",)

    def propose(self, context: CaptionContext) -> list[Proposal]:
        graph = context.graph
        out = []
        for index, attribute in enumerate(graph.attributes):
            span = attribute.span
            if span is None or graph.tags_in(span) != ["VBG"] or not is_act(attribute.value):
                continue
            head = graph.entities[attribute.entity].head_span
            if head is not None and span[1] <= head[0]:
                continue  # "a smiling woman": a description, not what she is doing
            if not _ends_clause(graph, span):
                continue  # "walking uphill", "jumping to make a shot": the act is tied to
                # what follows
            choices = act_substitutes(context, attribute)
            out.append(Proposal(PlannedUnit("relation", (span,), choices), (1, index, 1)))
        return out


__all__ = ["BODY_ACTS", "ReplaceAct", "act_substitutes"]
