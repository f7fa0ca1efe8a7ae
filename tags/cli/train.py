"""``tags train``: train with a YAML config and dotted ``key=value`` overrides.

Runs in one process as is; for several GPUs use ``accelerate launch scripts/train.py`` (or
``accelerate launch -m tags.cli train ...``) with the same arguments. See ``docs/training.md``.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train image-text matching with hard negatives (tags-dc, vse)",
        description="Train with Accelerate from a YAML config. Overrides use dotted keys, "
        "e.g. phases.0.lr=1e-5 vse.miner.name=selhn resume_from=latest. The resolved "
        "config is written to output_dir/config.yaml.",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="YAML config (see scripts/configs/)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted config overrides")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def run(args: argparse.Namespace) -> int:
    import yaml

    from tags.training import load_config, training_function
    from tags.training.config import to_dict
    from tags.training.loop import NonFiniteLossError

    # bad input (ConfigError, ImageError, FeaturesError, ...): one line, exit 2, printed by
    # tags.cli.run_command
    config = load_config(args.config, args.overrides)
    if args.print_config:
        print(yaml.safe_dump(to_dict(config), sort_keys=False), end="")
        return 0
    try:
        result = training_function(config)
    except NonFiniteLossError as err:
        print(f"tags train: {err}", file=sys.stderr)
        return 3
    print(f"done: step {result.state.step}, output in {result.output_dir}")
    return 0


__all__ = ["add_arguments", "register", "run"]
