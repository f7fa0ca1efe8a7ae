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


def test_demo_backend_blip_tiny_end_to_end_and_reuse(tmp_path, capfd):
    out = tmp_path / "demo"
    argv = ["demo", "--backend", "blip", "--budget", "tiny", "--out", str(out), "--jobs", "1"]
    assert main(argv) == 0
    assert "Removed shared tensor" not in capfd.readouterr().err  # decoders tied by design
    report = (out / "report.md").read_text()
    for label in ("BLIP pre-trained", "BLIP ITM + retrieved hard negatives", "BLIP TAGS-DC"):
        assert f"| {label}" in report
    payload = json.loads((out / "results.json").read_text())
    assert payload["pretrain"].startswith("trained")
    for method in ("pretrained", "itm-hardest", "tags-dc"):
        scores = payload["methods"][method]["scores"]
        assert 0 <= scores["mp"] <= 1 and scores["mp_pairs"] > 0
    # the pre-training recipe whose ITM head learns: an ITC stage, init std, random ITM draws
    key = json.loads((out / "pretrained" / "manifest.json").read_text())["key"]
    assert key["model"]["family"] == "blip" and key["model"]["init_std"] == 0.08
    assert key["train"]["itc_steps"] == 2 and key["train"]["itm_sampling"] == "random"
    assert (out / "pretrained" / "itc" / "model").is_dir()
    # both fine-tunings are finetune_config's cross variants; only TAGS-DC has synthetic
    # negatives (and trained on them) and an NSGDC phase with WoD/WoC
    runs = {m: json.loads((out / "runs" / m / "result.json").read_text()) for m in
            ("itm-hardest", "tags-dc")}  # fmt: skip
    for run in runs.values():
        assert run["config"]["recipe"] == "tags-dc"
        assert run["config"]["tags_dc"]["retrieval"]["pool_size"] == 3
    hardest, dc = runs["itm-hardest"]["config"], runs["tags-dc"]["config"]
    assert hardest["tags_dc"]["synthetic"]["source"] == "none"
    assert [p["name"] for p in hardest["phases"]] == ["main"]
    assert dc["tags_dc"]["synthetic"]["source"] == "dynamic"
    assert [p["name"] for p in dc["phases"]] == ["nsg", "nsgdc"]
    assert runs["tags-dc"]["last_metrics"]["synthetic/per_caption"] > 0
    # the ITM level terms beside the hinge: on the retrieved negatives in both, on the
    # synthetic ones in TAGS-DC only
    assert all(p["weights"]["itm_bce"] == 1.0 for p in hardest["phases"] + dc["phases"])
    assert "istm_bce" not in hardest["phases"][0]["weights"]
    assert all(p["weights"]["istm_bce"] == 1.0 for p in dc["phases"])
    shown = payload["methods"]["tags-dc"]["last_metrics"]
    assert {"loss/istm", "loss/istm_bce", "loss/itm_bce", "loss/wod", "loss/woc"} <= set(shown)
    baseline = payload["methods"]["itm-hardest"]["last_metrics"]
    assert "loss/itm_bce" in baseline and "loss/istm" not in baseline
    assert "loss/istm_bce" not in baseline
    assert "| BLIP TAGS-DC | " in report.split("Last logged step")[1]
    # a second run reuses the pre-trained model and both fine-tunings
    assert main(argv) == 0
    again = json.loads((out / "results.json").read_text())
    assert again["pretrain"] == "reused"
    for method in ("itm-hardest", "tags-dc"):
        assert again["methods"][method] == payload["methods"][method]
