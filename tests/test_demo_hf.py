"""``tags demo --backend clip`` on the tiny budget: benchmark with images, a pre-trained HF
CLIP, plain and NegCLIP-style fine-tunings, the report; a re-run reuses everything."""

from __future__ import annotations

import json

from tags.cli import main


def test_demo_backend_clip_tiny_end_to_end_and_reuse(tmp_path):
    out = tmp_path / "demo"
    argv = ["demo", "--backend", "clip", "--budget", "tiny", "--out", str(out), "--jobs", "1"]
    assert main(argv) == 0
    report = (out / "report.md").read_text()
    for label in ("CLIP pre-trained", "CLIP plain", "CLIP + tags negatives (NegCLIP-style)"):
        assert f"| {label}" in report
    payload = json.loads((out / "results.json").read_text())
    assert payload["pretrain"].startswith("trained")
    for method in ("pretrained", "plain", "negclip"):
        scores = payload["methods"][method]["scores"]
        assert 0 <= scores["mp"] <= 1 and scores["mp_pairs"] > 0
    # the NegCLIP-style run trained on the generated negatives as extra text columns
    run = json.loads((out / "runs" / "negclip" / "result.json").read_text())
    assert run["config"]["vse"]["synthetic_negatives"] == 2
    assert run["config"]["data"]["negatives"].endswith(".relation-first.jsonl")
    assert "contrastive/pos_beats_synthetic" in run["last_metrics"]
    plain = json.loads((out / "runs" / "plain" / "result.json").read_text())
    assert "contrastive/pos_beats_synthetic" not in plain["last_metrics"]
    assert payload["samples"] and payload["samples"][0]["negatives"]
    assert all(len(sample["negatives"]) <= 2 for sample in payload["samples"])  # the used ones
    # a second run reuses the pre-trained model and both fine-tunings
    assert main(argv) == 0
    again = json.loads((out / "results.json").read_text())
    assert again["pretrain"] == "reused"
    for method in ("plain", "negclip"):
        assert again["methods"][method] == payload["methods"][method]
