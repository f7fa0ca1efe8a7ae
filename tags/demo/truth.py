"""Truth audits of the demo's negatives on the shapes benchmark (``tags.benchmark.oracle``).

- training: :func:`enable_truth_audit` turns on ``tags_dc.synthetic.truth_audit`` for runs
  with synthetic negatives; :func:`training_truth` sums the logged shares up;
- generation: :func:`judge_samples` judges the sample negatives of the report.
"""

from __future__ import annotations

from typing import Any

TRUE, UNGRAMMATICAL, AUDITED = (
    "synthetic/true_share",
    "synthetic/ungrammatical_share",
    "synthetic/audited",
)


def enable_truth_audit(raw: dict[str, Any], scenes: Any) -> dict[str, Any]:
    """``raw`` (a TrainConfig mapping) with the truth audit on when it makes synthetic
    negatives (recipe ``tags-dc``, source other than ``none``)."""
    synthetic = raw.get("tags_dc", {}).get("synthetic", {})
    if raw.get("recipe") != "tags-dc" or synthetic.get("source", "dynamic") == "none":
        return raw
    out = {**raw, "tags_dc": {**raw["tags_dc"], "synthetic": dict(synthetic)}}
    out["tags_dc"]["synthetic"]["truth_audit"] = str(scenes)
    return out


def training_truth(rows: list[dict[str, Any]]) -> dict[str, float] | None:
    """Shares of true / ungrammatical synthetic negatives over a run's ``metrics.jsonl``
    rows (each row: window means; weighted by the negatives audited per step), and their
    type mix (``type_object`` ...) where logged, or ``None`` when nothing was audited."""
    rows = [r for r in rows if r.get(AUDITED)]
    weight = sum(r[AUDITED] for r in rows)
    if not weight:
        return None
    out = {
        "true": sum(r[TRUE] * r[AUDITED] for r in rows) / weight,
        "ungrammatical": sum(r[UNGRAMMATICAL] * r[AUDITED] for r in rows) / weight,
        "per_step": weight / len(rows),
    }
    for kind in ("object", "attribute", "relation"):  # the type mix, where it was logged
        key = f"synthetic/type_{kind}"
        typed = [r for r in rows if key in r]
        if typed:
            total = sum(r[AUDITED] for r in typed)
            out[f"type_{kind}"] = sum(r[key] * r[AUDITED] for r in typed) / total
    return out


def judge_samples(samples: list[dict[str, Any]], scenes: Any) -> dict[str, float]:
    """Add ``truth`` to every sample negative (in place); returns the pooled shares."""
    from tags.benchmark.oracle import TruthOracle
    from tags.benchmark.truth import truth_shares

    oracle = TruthOracle.from_path(scenes)
    values = []
    for sample in samples:
        for negative in sample["negatives"]:
            negative["truth"] = oracle.judge(sample["image_id"], negative["text"])
            values.append(negative["truth"])
    return truth_shares(values)


__all__ = ["enable_truth_audit", "judge_samples", "training_truth"]
