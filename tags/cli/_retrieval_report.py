"""The end of ``tags evaluate``'s retrieval runs (region features in :mod:`tags.cli.evaluate`,
raw images in :mod:`tags.cli._backend_evaluate`): the metrics table and the ``--out`` JSON."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tags.cli._model import typed_name
from tags.cli._outputs import write_json


def finish(
    result: Any,
    notes: list[str],
    seconds: float,
    accelerator: Any,
    args: argparse.Namespace,
    sources: dict[str, Any],
) -> int:
    """Print the metrics table and write ``--out`` (main process); ``sources`` names the
    inputs in the JSON report beside the model and captions."""
    from tags.evaluation.retrieval import format_table

    result.notes.extend(notes)
    if accelerator.is_main_process:
        print(format_table(result.metrics))
        print(f"({seconds:.1f}s)", file=sys.stderr)
        if args.out:
            report = result.to_dict() | {
                "model": typed_name(args.model),
                **{k: v for k, v in sources.items() if k == "backend"},
                "captions": str(args.captions),
                **{k: v for k, v in sources.items() if k != "backend"},
                "split": args.split,
                "num_processes": accelerator.num_processes,
                "seconds": round(seconds, 3),
            }
            write_json(args.out, report)
    accelerator.wait_for_everyone()
    return 0
