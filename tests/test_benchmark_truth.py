"""Scene truth of free text on the shapes benchmark: parsing back the template grammar."""

from __future__ import annotations

import numpy as np
import pytest

from tags.benchmark.captions import holds, sample_claims
from tags.benchmark.minimal_pairs import single_edits
from tags.benchmark.scenes import generate_scene
from tags.benchmark.truth import caption_truth, parse_claim, parse_mention, truth_shares


@pytest.fixture(scope="module")
def scenes_and_claims():
    out = []
    for image_id in range(40):
        scene = generate_scene(image_id, seed=3)
        claims = sample_claims(scene, np.random.default_rng(image_id), count=5)
        out.append((scene, claims))
    return out


def test_every_rendered_claim_parses_back_to_itself(scenes_and_claims):
    for scene, claims in scenes_and_claims:
        for claim in claims:
            assert parse_claim(claim.text) == claim
            assert caption_truth(claim.text, scene) == "true"


def test_single_edits_are_judged_by_the_scene(scenes_and_claims):
    judged = {"true": 0, "false": 0}
    for scene, claims in scenes_and_claims:
        for claim in claims:
            for _, _, _, edited in single_edits(claim):
                verdict = caption_truth(edited.text, scene)
                assert verdict == ("true" if holds(edited, scene) else "false")
                judged[verdict] += 1
    # both outcomes occur: some one-unit edits stay true of the scene (false negatives)
    assert judged["true"] > 0 and judged["false"] > judged["true"]


def test_case_spacing_and_full_stop_are_normalized(scenes_and_claims):
    scene, claims = scenes_and_claims[0]
    text = claims[0].text
    noisy = text.upper().replace(":", " :").replace(",", " ,") + " ."
    assert caption_truth(noisy, scene) == "true"


@pytest.mark.parametrize(
    "text",
    [
        "an yellow square above a red circle",  # article agreement
        "a small mate circle above a red square",  # unknown word
        "there shop a green diamond above a red square",  # broken template
        "a red circle to the four of a square",  # broken relation
        "a red circle above",  # missing object
        "three shapes: a red circle and a blue square",  # count disagrees with items
        "a red red circle above a square",
    ],
)
def test_broken_captions_are_ungrammatical(text):
    assert parse_claim(text) is None
    assert caption_truth(text, generate_scene(0)) == "ungrammatical"


def test_mentions_and_articles():
    m = parse_mention("an orange hexagon")
    assert (m.shape, m.color, m.size) == ("hexagon", "orange", None)
    assert parse_mention("a orange hexagon") is None
    assert parse_mention("a large orange hexagon").size == "large"


def test_truth_shares_counts():
    shares = truth_shares(["true", "false", "false", "ungrammatical"])
    assert shares == {"true": 0.25, "false": 0.5, "ungrammatical": 0.25, "n": 4.0}
    assert truth_shares([])["n"] == 0.0
