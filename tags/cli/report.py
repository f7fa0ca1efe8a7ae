"""``tags report``: a model (and its starting checkpoint) on retrieval and compositional
suites in one run; one table (Markdown + JSON) with the before/after delta, and a plot."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from tags.cli._flags import (
    add_confine_to_root,
    add_device,
    add_out,
    add_overwrite,
    add_progress,
    resolve_device,
)
from tags.cli._model import model_ref, typed_name
from tags.cli._types import non_negative_int, positive_int
from tags.core.errors import CommandError
from tags.evaluation.bootstrap import DEFAULT_RESAMPLES


def register(subparsers: argparse._SubParsersAction) -> None:
    from tags.cli._suite_evaluate import add_suite_arguments

    p = subparsers.add_parser(
        "report",
        help="retrieval + compositional suites, model vs baseline, one table",
        description="Evaluate --model (and --baseline, e.g. the checkpoint it was fine-tuned "
        "from) on retrieval (--captions) and compositional suites (--suite) in one run. "
        "Writes OUT/report.md, OUT/report.json and OUT/report.png (grouped bars).",
    )
    p.add_argument(
        "--model",
        required=True,
        type=model_ref,
        help="model directory (any tags backend), or a hub id in the local cache",
    )
    p.add_argument(
        "--baseline",
        default=None,
        type=model_ref,
        help="starting checkpoint to compare against (folder or cached hub id)",
    )
    p.add_argument("--name", default=None, help="model column name (default: its folder)")
    p.add_argument("--baseline-name", default=None, help="baseline column name")
    p.add_argument(
        "--tokenizer",
        default=None,
        type=model_ref,
        help="tokenizer directory (default: the model's)",
    )
    p.add_argument("--captions", default=None, help="retrieval captions (as tags evaluate)")
    p.add_argument("--format", choices=("karpathy", "precomp", "jsonl"), default=None)
    p.add_argument("--split", default="test")
    p.add_argument("--protocol", choices=("full", "f30k-1k", "coco-1k", "coco-5k"), default="full")
    p.add_argument("--features", default=None, help="region features (TagsModel)")
    p.add_argument("--images", default=None, help="image root (pixel backends)")
    add_confine_to_root(p)
    add_suite_arguments(p)
    p.add_argument("--mode", choices=("cross", "dual", "two-stage"), default="cross")
    p.add_argument("--topk", type=positive_int, default=128, help="two-stage: candidates reranked")
    p.add_argument("--batch-size", type=positive_int, default=256)
    p.add_argument("--max-length", type=positive_int, default=None)
    p.add_argument(
        "--max-images", type=positive_int, default=None, help="retrieval: first N images"
    )
    p.add_argument(
        "--num-workers",
        type=non_negative_int,
        default=0,
        help="image loading workers (0: in this process)",
    )
    p.add_argument("--use-scores", action="store_true", help="sigmoid scores, not logits")
    p.add_argument(
        "--bootstrap",
        type=non_negative_int,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help="paired bootstrap resamples for the 95%% interval of every delta (items "
        "resampled, seed 0; 0: no intervals; default: %(default)s)",
    )
    add_device(p, cpu_alias=True)
    add_out(p, "output folder", required=True)
    add_overwrite(p, "the report.md / report.json of an earlier report in --out")
    add_progress(p)
    p.set_defaults(func=run)


def without_items(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``reports`` without the per-item values (suite outcomes, retrieval ranks) kept for
    the bootstrap: what report.json holds."""
    out = {}
    for role, report in reports.items():
        suites = {
            k: {f: v for f, v in s.items() if f != "outcomes"} for k, s in report["suites"].items()
        }
        out[role] = {k: v for k, v in report.items() if k != "retrieval_ranks"} | {"suites": suites}
    return out


def distinct_suffixes(paths: list[str]) -> list[str] | None:
    """The shortest trailing parts of ``paths`` that tell them apart (``runs/a/model``,
    ``runs/b/model`` -> ``a/model``, ``b/model``); folders are compared by their absolute
    path, so ``model`` and ``../x/model`` differ too. ``None`` when the paths are equal."""
    parts = []
    for path in paths:
        p = Path(path).expanduser()
        p = p.resolve() if p.exists() else p
        parts.append([x for x in p.parts if x != p.anchor] or [str(p)])
    for k in range(1, max(len(x) for x in parts) + 1):
        labels = ["/".join(x[-k:]) for x in parts]
        if len(set(labels)) == len(labels):
            return labels
    return None


def column_names(paths: dict[str, str], given: dict[str, str | None]) -> dict[str, str]:
    """A column name per role: ``--name`` / ``--baseline-name`` when given, else the
    folder's name, else (two folders of the same name) the shortest distinguishing path
    suffix, else ``role: name``."""
    roles = list(paths)
    typed = {r: typed_name(paths[r]) for r in roles}
    names = {r: given.get(r) or Path(typed[r]).name or typed[r] for r in roles}
    auto = [r for r in roles if not given.get(r)]
    if len(set(names.values())) == len(names) or not auto:
        return names if len(set(names.values())) == len(names) else _by_role(names)
    suffixes = distinct_suffixes([typed[r] for r in roles])
    if suffixes is not None:
        names = {r: given.get(r) or s for r, s in zip(roles, suffixes)}
    return names if len(set(names.values())) == len(names) else _by_role(names)


def _by_role(names: dict[str, str]) -> dict[str, str]:
    return {k: f"{k}: {v}" for k, v in names.items()}


def retrieval(backend: Any, args: argparse.Namespace) -> Any:
    """The :class:`~tags.evaluation.retrieval.RetrievalResult` of ``backend`` on
    ``--captions`` (region features or raw images), its notes including the loader's."""
    from tags.evaluation.retrieval import evaluate_retrieval

    common = {"fmt": args.format, "split": args.split, "limit_images": args.max_images}
    if backend.image_kind == "regions":
        from tags.evaluation.io import load_retrieval_split

        if args.features is None:
            raise ValueError(f"--captions with a {backend.name} model needs --features")
        length = args.max_length or backend.max_text_length
        images, texts, notes = load_retrieval_split(
            args.captions, args.features, backend.tokenizer, max_length=length, **common
        )
    else:
        from tags.evaluation.images import load_image_retrieval_split

        if args.images is None:
            raise ValueError(f"--captions with a {backend.name} model needs --images")
        images, texts, notes = load_image_retrieval_split(
            args.captions, args.images, backend, max_length=args.max_length,
            num_workers=args.num_workers, confine_to_root=args.confine_to_root, **common,
        )  # fmt: skip
    result = evaluate_retrieval(
        backend, images, texts, args.protocol, args.mode, topk=args.topk,
        batch_size=args.batch_size, use_logits=not args.use_scores,
    )  # fmt: skip
    result.notes = notes + result.notes
    return result


def evaluate_one(path: str, args: argparse.Namespace, device: str) -> dict[str, Any]:
    """``{"retrieval", "suites", "notes", "seconds", "backend"}`` of one model directory."""
    from tags.cli._suite_evaluate import load_model, suite_options
    from tags.evaluation.retrieval import format_table
    from tags.evaluation.suites.base import SuiteSpec
    from tags.evaluation.suites.runner import run_suites

    start = time.perf_counter()
    backend = load_model(path, args.tokenizer, device)
    out: dict[str, Any] = {"backend": backend.name, "retrieval": None, "notes": []}
    if args.captions:
        result = retrieval(backend, args)
        out["retrieval"], out["notes"] = result.metrics, result.notes
        out["retrieval_ranks"] = result.ranks  # per query, for the bootstrap intervals
        print(format_table(out["retrieval"]))
    out["suites"] = run_suites(backend, SuiteSpec.parse_many(args.suite), suite_options(args))
    out["seconds"] = round(time.perf_counter() - start, 3)
    return out


def write_report(
    out_dir: Path,
    reports: dict[str, dict[str, Any]],
    names: dict[str, str],
    settings: dict,
    resamples: int = 0,
) -> list[dict]:
    """``report.md``, ``report.json`` and ``report.png`` in ``out_dir``; returns the rows.
    ``resamples`` > 0: paired bootstrap intervals of the deltas (seed 0)."""
    from tags.evaluation.suites.report import bar_plot, compare, markdown_table

    rows = compare(reports["model"], reports.get("baseline"), resamples=resamples)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = bar_plot(
        rows, out_dir / "report.png", f"{names['model']} vs {names.get('baseline', '-')}",
        (names.get("baseline", "baseline"), names["model"]),
    )  # fmt: skip
    table = markdown_table(rows, names["model"], names.get("baseline", "baseline"))
    notes = sorted({n for r in reports.values() for n in r["notes"]} | {
        n if n.startswith(f"{label}:") else f"{label}: {n}"  # (a reader's note names it)
        for r in reports.values() for label, s in r["suites"].items() for n in s["notes"]
    })  # fmt: skip
    lines = [
        f"# {names['model']}" + (f" vs {names['baseline']}" if "baseline" in names else ""),
        "",
        "Percent, higher is better (RSum: sum of six recalls). Suites: a caption wins only "
        "when it scores strictly above the others (ties count as failures)."
        + (
            f" Δ 95% CI: paired bootstrap over the items (queries for retrieval), {resamples} "
            "resamples, seed 0."
            if resamples and "baseline" in reports
            else ""
        ),
        "",
        "Settings: " + ", ".join(f"{k} `{v}`" for k, v in settings.items() if v is not None),
        "",
        table,
        "",
        f"![bars]({plot.name})",
    ]
    if notes:
        lines += ["", "Notes:", "", *(f"- {n}" for n in notes)]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    payload = {
        "names": names,
        "settings": settings,
        "rows": rows,
        "reports": without_items(reports),
    }
    (out_dir / "report.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return rows


def run(args: argparse.Namespace) -> int:
    from tags.cli._outputs import dir_problem
    from tags.cli._suite_evaluate import suite_errors
    from tags.core.errors import as_command_error
    from tags.core.progress import bars
    from tags.evaluation.suites.report import markdown_table

    if not args.captions and not args.suite:
        raise CommandError("give --captions (retrieval) and/or --suite")
    problem = dir_problem(args.out)  # before evaluating anything
    earlier = [Path(args.out) / f for f in ("report.md", "report.json")]
    if problem is None and not args.overwrite and any(f.exists() for f in earlier):
        problem = f"--out {args.out} holds an earlier report; pass --overwrite to replace it"
    if problem is not None:
        raise CommandError(f"{problem}")
    device = resolve_device(args.device)
    paths = {"model": args.model}
    if args.baseline:
        paths = {"baseline": args.baseline, **paths}
    names = column_names(paths, {"model": args.name, "baseline": args.baseline_name})
    reports = {}
    try:
        for role, path in paths.items():
            print(f"== {role}: {typed_name(path)}")
            with bars(args.progress):
                reports[role] = evaluate_one(path, args, device)
    except suite_errors() as err:
        raise as_command_error(err) from None  # one line, exit 2 (tags.cli.run_command)
    settings = {
        "model": typed_name(args.model), "baseline": args.baseline and typed_name(args.baseline),
        "captions": args.captions,
        "split": args.split if args.captions else None,
        "protocol": args.protocol if args.captions else None, "mode": args.mode,
        "suites": ", ".join(args.suite) or None,
    }  # fmt: skip
    rows = write_report(Path(args.out), reports, names, settings, args.bootstrap)
    print(markdown_table(rows, names["model"], names.get("baseline", "baseline")))
    print(f"wrote {Path(args.out) / 'report.md'}", file=sys.stderr)
    return 0
