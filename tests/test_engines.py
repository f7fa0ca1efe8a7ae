"""Engine-neutral generation: the batch function, the counting pass as map + merge, and
Hugging Face ``datasets`` / Ray Data runs, each checked against ``tags generate``."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from _data import FLICKR_CAPTIONS

from tags.cli import main
from tags.core.io import InputError, read_captions
from tags.negatives.batch import GenerateBatch
from tags.negatives.columns import caption_columns
from tags.negatives.counts import CountBatch, count_groups, merge_counts

# generation itself, unbalanced (the balance of a whole run: tests/test_balance.py)
FAST = ["--k", "5", "--l", "5", "--top-m", "8", "--no-progress", "--no-balance"]
SETTINGS = {"num_copies": 5, "num_samples": 5, "top_m": 8}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "test_caps.txt"
    path.write_text("\n".join(FLICKR_CAPTIONS.read_text().splitlines()[:60]) + "\n")
    return path


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    """``tags generate`` on the corpus; its vocabulary is ``OUT.vocab.json``."""
    out = tmp_path_factory.mktemp("reference") / "negatives.jsonl"
    assert main(["generate", "--captions", str(corpus), "--out", str(out), *FAST]) == 0
    return out


def vocab_of(out: Path) -> Path:
    return out.with_name(out.name + ".vocab.json")


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rows_of(columns: dict[str, list]) -> list[dict]:
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def sliced(columns: dict[str, list], size: int) -> list[dict[str, list]]:
    total = len(columns["image_id"])
    return [{k: v[i : i + size] for k, v in columns.items()} for i in range(0, total, size)]


def by_id(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["caption_id"], r["negative_index"]))


def test_batch_function_equals_tags_generate_for_any_batching(reference, corpus):
    expected = read(reference)
    assert len({r["caption_id"] for r in expected}) >= 15
    columns = caption_columns(corpus)
    fn = GenerateBatch(vocab_of(reference), **SETTINGS)
    for size in (1, 7, len(columns["image_id"])):
        out = [row for batch in sliced(columns, size) for row in rows_of(fn(batch))]
        assert out == expected, f"batches of {size} images"
    # batches in another order: each caption's negatives stay the same
    batches = sliced(columns, 4)[::-1]
    assert by_id([row for b in batches for row in rows_of(fn(b))]) == by_id(expected)
    # the pickled function carries settings and the path only, and gives the same rows
    blob = pickle.dumps(fn)
    assert len(blob) < 2000
    copy = pickle.loads(blob)
    assert rows_of(copy(columns)) == expected
    # one engine per process and counts file: the copy and a new instance share it
    assert (
        copy.generator()
        is fn.generator()
        is GenerateBatch(vocab_of(reference), **SETTINGS).generator()
    )
    # another seed is another output
    assert rows_of(GenerateBatch(vocab_of(reference), **SETTINGS, seed=1)(columns)) != expected


def test_pandas_and_pyarrow_batches_give_the_same_rows(reference, corpus):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    columns = caption_columns(corpus)
    fn = GenerateBatch(vocab_of(reference), **SETTINGS)
    expected = read(reference)
    frame = fn(pd.DataFrame(columns))
    assert isinstance(frame, pd.DataFrame)
    assert [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")] == expected
    table = fn(pa.table(columns))
    assert isinstance(table, pa.Table) and table.to_pylist() == expected
    # a batch without any negative keeps typed columns (engines concatenate the blocks)
    empty = fn(pa.table({"image_id": [9], "captions": [[""]], "caption_ids": [[99]]}))
    assert empty.num_rows == 0 and empty.schema == table.schema


def _plain(value):
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [_plain(v) for v in value] if isinstance(value, list) else value


def test_caption_rows_and_other_settings_equal_tags_generate(tmp_path):
    """One caption per image (caption rows), the multi-unit preset, role swaps, a seed."""
    lines = FLICKR_CAPTIONS.read_text().splitlines()[:40:2]
    captions = tmp_path / "caps.jsonl"
    captions.write_text(
        "".join(
            json.dumps({"image_id": f"im{i}", "caption": t}) + "\n" for i, t in enumerate(lines)
        )
    )
    out = tmp_path / "negatives.jsonl"
    options = ["--preset", "multi-unit", "--role-swaps", "--seed", "3"]
    assert main(["generate", "--captions", str(captions), "--out", str(out), *FAST, *options]) == 0
    expected = read(out)
    assert any(len(r["edits"]) > 1 for r in expected)  # multi-unit: several units edited
    rows = {
        "image_id": [f"im{i}" for i in range(len(lines))],
        "caption_id": list(range(len(lines))),
        "caption": lines,
    }
    settings = {**SETTINGS, "preset": "multi-unit", "role_swaps": True, "seed": 3}
    fn = GenerateBatch(vocab_of(out), **settings)
    assert [row for b in sliced(rows, 4) for row in rows_of(fn(b))] == expected
    with pytest.raises(InputError, match="masked LM"):
        GenerateBatch(vocab_of(out), preset="paper")(rows)
    # without the planner (--unconstrained), over the same counts
    loose = tmp_path / "unconstrained.jsonl"
    args = ["--captions", str(captions), "--out", str(loose), "--vocab", str(vocab_of(out))]
    assert main(["generate", *args, *FAST, "--unconstrained"]) == 0
    fn = GenerateBatch(vocab_of(out), **SETTINGS, unconstrained=True)
    assert rows_of(fn(rows)) == read(loose) != expected


def test_counting_pass_per_shard_merges_to_the_single_pass_file(reference, corpus, tmp_path):
    single = vocab_of(reference).read_bytes()
    groups = list(read_captions(corpus))
    assert count_groups(groups).to_dict() == json.loads(single)
    # uneven shards, saved and merged in another order: the same file byte for byte
    parts = []
    for i, (start, stop) in enumerate([(0, 2), (2, 9), (9, len(groups))]):
        count_groups(groups[start:stop]).save(tmp_path / f"part{i}.json")
        parts.append(tmp_path / f"part{i}.json")
    merge_counts(parts[::-1]).save(tmp_path / "merged.json")
    assert (tmp_path / "merged.json").read_bytes() == single
    # the engine map step: one JSON row per batch, summed
    columns = caption_columns(corpus)
    rows = [CountBatch()(batch)["counts"][0] for batch in sliced(columns, 5)]
    assert len(rows) == 3
    merge_counts(rows).save(tmp_path / "batches.json")
    assert (tmp_path / "batches.json").read_bytes() == single
    # one part left out is not the same counts
    merge_counts(parts[1:]).save(tmp_path / "short.json")
    assert (tmp_path / "short.json").read_bytes() != single


def test_sharded_counting_from_the_cli_merges_to_the_single_pass(reference, corpus, tmp_path, cli):
    """``tags generate --count-only --shard I/N`` per shard, then ``tags counts merge``: the
    file of one pass byte for byte, and generation from it equals ``tags generate``."""
    parts = []
    for i in range(3):
        part = tmp_path / f"counts-{i}.json"
        done = cli(
            "generate",
            "--captions",
            corpus,
            "--count-only",
            "--shard",
            f"{i}/3",
            "--out",
            part,
            "--num-workers",
            "1",
            "--no-progress",
        )
        assert done.returncode == 0, done.stderr
        assert f"shard {i}/3" in done.stderr and "tags counts merge" in done.stderr
        assert not part.with_name(part.name + ".meta.json").exists()  # counts only
        parts.append(part)
    assert len({p.read_bytes() for p in parts}) == 3  # three different parts
    merged = tmp_path / "merged.json"
    done = cli("counts", "merge", *parts[::-1], "--out", merged)
    assert done.returncode == 0, done.stderr
    assert merged.read_bytes() == vocab_of(reference).read_bytes()
    out = tmp_path / "negatives.jsonl"
    done = cli("generate", "--captions", corpus, "--vocab", merged, "--out", out, *FAST)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == reference.read_bytes()
    # refused: an existing --out, a part that is not counts, options that need negatives
    assert "exists; pass --overwrite" in cli("counts", "merge", *parts, "--out", merged).stderr
    (tmp_path / "bad.json").write_text("[1, 2]")
    done = cli("counts", "merge", parts[0], tmp_path / "bad.json", "--out", tmp_path / "m2.json")
    assert done.returncode == 2 and "bad.json" in done.stderr and "Traceback" not in done.stderr
    done = cli("generate", "--captions", corpus, "--count-only", "--resume", "--out", merged)
    assert done.returncode == 2 and "--count-only" in done.stderr and "--resume" in done.stderr


def test_bad_batches_and_counts_are_named(reference, tmp_path):
    fn = GenerateBatch(vocab_of(reference), **SETTINGS)
    with pytest.raises(InputError, match="'caption_ids' missing"):
        fn({"image_id": [1], "captions": [["a dog"]]})
    with pytest.raises(InputError, match="2 captions but 1 caption_ids"):
        fn({"image_id": [1], "captions": [["a dog", "a cat"]], "caption_ids": [[1]]})
    with pytest.raises(InputError, match="not found"):
        GenerateBatch(tmp_path / "nothing.json")({"image_id": [], "caption": [], "caption_id": []})
    (tmp_path / "a.json").write_text(json.dumps({"min_count": 2, "counts": {}}))
    (tmp_path / "b.json").write_text(json.dumps({"min_count": 1, "counts": {}}))
    with pytest.raises(InputError, match="counts part 1: min_count"):
        merge_counts([tmp_path / "a.json", tmp_path / "b.json"])


@pytest.mark.slow
def test_datasets_map_with_two_processes_equals_tags_generate(reference, corpus):
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict(caption_columns(corpus))
    fn = GenerateBatch(vocab_of(reference), **SETTINGS)
    out = dataset.map(
        fn, batched=True, batch_size=3, num_proc=2, remove_columns=dataset.column_names
    )
    assert out.to_list() == read(reference)


def test_datasets_rows_balanced_equal_a_balanced_tags_generate(reference, corpus, tmp_path):
    """``balance_dataset`` on the engine's rows gives the records of ``tags generate`` with
    its default balance (same counts and settings)."""
    datasets = pytest.importorskip("datasets")
    from tags.negatives.balance import balance_dataset

    balanced = tmp_path / "balanced.jsonl"
    plain = [a for a in FAST if a != "--no-balance"]
    args = ["generate", "--captions", str(corpus), "--vocab", str(vocab_of(reference))]
    assert main([*args, "--out", str(balanced), *plain]) == 0
    dataset = datasets.Dataset.from_dict(caption_columns(corpus))
    rows = dataset.map(
        GenerateBatch(vocab_of(reference), **SETTINGS), batched=True, batch_size=7,
        remove_columns=dataset.column_names,
    )  # fmt: skip
    expected = read(balanced)
    assert len(expected) < len(rows)  # the balance dropped some
    assert balance_dataset(rows).to_list() == expected


def test_datasets_map_from_a_counts_store_equals_tags_generate(reference, corpus, tmp_path):
    """A counts store (``tags counts store``) as the engines' counts: every worker process
    maps the one file (its pages shared through the page cache) instead of loading JSON, and
    the rows are tags generate's."""
    datasets = pytest.importorskip("datasets")
    store = tmp_path / "counts.store"
    assert main(["counts", "store", str(vocab_of(reference)), "--out", str(store)]) == 0
    dataset = datasets.Dataset.from_dict(caption_columns(corpus))
    fn = GenerateBatch(store, **SETTINGS)
    assert len(pickle.dumps(fn)) < 2000  # the path travels, not the counts
    out = dataset.map(
        fn, batched=True, batch_size=3, num_proc=2, remove_columns=dataset.column_names
    )
    assert out.to_list() == read(reference)


def test_datasets_cache_key_follows_the_counts_file(reference, tmp_path):
    """datasets keys its map cache by the pickled function: a counts file rebuilt at the
    same path must change that key, or a rerun would reuse negatives of the old counts."""
    hasher = pytest.importorskip("datasets.fingerprint").Hasher
    counts = tmp_path / "counts.json"
    counts.write_bytes(vocab_of(reference).read_bytes())
    before = hasher.hash(GenerateBatch(counts, **SETTINGS))
    assert hasher.hash(GenerateBatch(counts, **SETTINGS)) == before
    counts.write_bytes(vocab_of(reference).read_bytes() + b" ")
    assert hasher.hash(GenerateBatch(counts, **SETTINGS)) != before


def ray_rows(counts_file: str, corpus_file: str) -> list[dict]:
    """Ray Data's rows for the corpus, with the counts broadcast once (``ray.put``)."""
    import pyarrow as pa
    import ray

    from tags.negatives.vocabulary import SceneGraphVocabulary

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        counts = ray.put(SceneGraphVocabulary.load(Path(counts_file)))  # broadcast once
        rows = rows_of(caption_columns(Path(corpus_file)))
        dataset = ray.data.from_items(rows, override_num_blocks=4)  # work for both actors
        out = dataset.map_batches(
            GenerateBatch,
            fn_constructor_args=(counts,),
            fn_constructor_kwargs=SETTINGS,
            concurrency=2,
            batch_size=4,
            batch_format="pyarrow",
        )
        return pa.concat_tables(ray.get(out.to_arrow_refs())).to_pylist()
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_ray_map_batches_on_two_cpus_equals_tags_generate(reference, corpus, tmp_path):
    pytest.importorskip("ray", reason="Ray Data is the optional extra: pip install tags[ray]")
    pytest.importorskip("pyarrow")
    # Ray runs in its own interpreter: ray.shutdown() leaves gRPC threads behind, and a
    # process holding them can deadlock when a later test forks workers.
    script = (
        "import json, sys\n"
        "from test_engines import ray_rows\n"
        "json.dump(ray_rows(sys.argv[1], sys.argv[2]), open(sys.argv[3], 'w'))\n"
    )
    out = tmp_path / "rows.json"
    tests = Path(__file__).parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", script, str(vocab_of(reference)), str(corpus), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert by_id(json.loads(out.read_text())) == by_id(read(reference))
