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
        add_help=False,
    )
    p.add_argument("-h", "--help", action=TrainHelp, help="show this help message and exit")
    add_arguments(p)
    p.set_defaults(func=run)


def recipes_and_presets() -> str:
    """The epilog of ``tags train --help``: the registered recipes and presets, and where
    the config keys are documented."""
    from tags.training.presets import list_presets
    from tags.training.recipes import list_recipes

    return "\n".join(
        [
            "recipes (config key recipe:):",
            *(f"  {name}" for name in list_recipes()),
            "presets (config key preset: NAME, or the override preset=NAME):",
            *(f"  {name}" for name in list_presets()),
            "config keys and their defaults: docs/training.md, section 'Config schema'; "
            "--print-config shows a resolved config; shipped configs: scripts/configs/",
        ]
    )


class TrainHelp(argparse._HelpAction):
    """``-h``: the help with :func:`recipes_and_presets` above the docs line (the registries
    import torch, so they are read only when help is asked for)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        parser.epilog = recipes_and_presets() + ("\n\n" + parser.epilog if parser.epilog else "")
        super().__call__(parser, *args, **kwargs)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, help="YAML config (see scripts/configs/)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted config overrides")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument(
        "--allow-inexact-resume",
        action="store_true",
        help="resume even when the checkpoint's optimizer, gradient scaler or random states "
        "are missing or damaged: without them, named in a warning (the config key "
        "allow_inexact_resume=true); by default such a resume is refused",
    )


def run(args: argparse.Namespace) -> int:
    import yaml

    from tags.core.noise import quiet_tied_weights
    from tags.training import load_config, training_function
    from tags.training.config import to_dict
    from tags.training.loop import NonFiniteLossError

    # bad input (ConfigError, ImageError, FeaturesError, ...): one line, exit 2, printed by
    # tags.cli.run_command
    overrides = list(args.overrides)
    if getattr(args, "allow_inexact_resume", False):
        overrides.append("allow_inexact_resume=true")
    config = load_config(args.config, overrides)
    if args.print_config:
        print(yaml.safe_dump(to_dict(config), sort_keys=False), end="")
        return 0
    quiet_tied_weights()  # Accelerate's note on the decoders tied by design
    try:
        result = training_function(config)
    except NonFiniteLossError as err:
        print(f"tags train: {err}", file=sys.stderr)
        return 3
    print(f"done: step {result.state.step}, output in {result.output_dir}")
    return 0


__all__ = ["add_arguments", "register", "run"]
