"""``tags demo``: the built-in default job (for now: parse the bundled sample captions)."""

from __future__ import annotations

import argparse
from importlib import resources


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the built-in demo",
        description="Parse the bundled sample captions and print their scene graphs.",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from parsers.scene_graph_parser import SceneGraphParser

    captions = resources.files("tags.resources").joinpath("sample_captions.txt").read_text()
    lines = [line for line in captions.splitlines() if line.strip()]
    parser = SceneGraphParser()
    for graph in parser.parse_batch(lines):
        print(graph.caption)
        print(f"    {graph.to_factual()}")
    print(f"\n{len(lines)} captions parsed; try `tags parse FILE --format json` on your own.")
    return 0
