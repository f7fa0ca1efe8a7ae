"""Results benchmark: every demo method x 3 seeds on the shapes benchmark (README table).

    python scripts/benchmarks/demo_results.py --out runs/results --num-workers 2
    python scripts/benchmarks/demo_results.py --methods hardest tags-dc --seeds 0 1 2
    python scripts/benchmarks/demo_results.py --methods hardest oracle --set steps=450 dc_steps=150

Each seed pre-trains one model (ITM + MLM + ITC), every method fine-tunes it with the same
budget (``tags.demo.budget``), and each run is evaluated on the test split. Finished runs
are cached under ``--out`` (re-running resumes). Prints the markdown table with mean ± std.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    from tags.demo.budget import BUDGETS, override_budget
    from tags.demo.methods import list_methods
    from tags.demo.results import run_results

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/results")
    parser.add_argument("--budget", default="small", choices=sorted(BUDGETS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=None, choices=list_methods())
    parser.add_argument(
        "--num-workers",
        "--jobs",
        dest="jobs",
        type=int,
        default=2,
        metavar="N",
        help="runs in parallel (--jobs: deprecated alias)",
    )
    parser.add_argument("--data", default=None, help="benchmark directory (cached)")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="FIELD=VALUE",
        help="override fields of the budget (steps=450 dc_steps=150 lr=1e-4 ...; use a new "
        "--out: finished runs are cached by folder)",
    )
    args = parser.parse_args()
    try:
        budget = override_budget(BUDGETS[args.budget], args.set)
    except ValueError as error:
        parser.error(f"--set {error}")
    payload = run_results(
        args.out,
        budget,
        tuple(args.seeds),
        tuple(args.methods) if args.methods else None,
        jobs=args.jobs,
        data_root=args.data,
    )
    print((Path(args.out) / "results.md").read_text())
    print(f"wall clock: {payload['wall_clock_s'] / 60:.1f} min")


if __name__ == "__main__":
    main()
