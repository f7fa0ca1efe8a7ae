"""Build the built-in verb co-description table from grouped captions (Flickr30K dev).

Parses a SCAN precomp caption file (5 consecutive captions of one image) with this project's
parser and keeps only the image-group verb counts of :class:`~tags.negatives.scenes.SceneCounts`
(:data:`~tags.negatives.scenes.VERB_GROUP_FIELDS`): how often the writers of one image use two
verbs for it, the evidence of :meth:`~tags.negatives.scenes.SceneCounts.verbs_exclusive`. No
caption text is written, only aggregated counts of verb lemmas. The built-in background
``factual`` adds the table to every corpus (:mod:`tags.negatives.background`). Flickr30K dev
is not an evaluation corpus of this project (its test split is).

    python scripts/build_verb_codescription.py ../shared/data/flickr30k/dev_caps.txt
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from tqdm import tqdm

from tags.core.io import read_captions
from tags.negatives.background import VERB_TABLE
from tags.negatives.pipeline import default_parser
from tags.negatives.scenes import VERB_GROUP_FIELDS, SceneCounts


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("captions", help="precomp captions (5 lines an image), e.g. dev_caps.txt")
    cli.add_argument("--out", default=str(VERB_TABLE))
    args = cli.parse_args()
    if not Path(args.captions).is_file():
        raise SystemExit(
            f"{args.captions}: not found; pass precomp captions, e.g. ../shared/data/flickr30k/dev_caps.txt"
        )
    groups = [[c.text for c in g.captions] for g in read_captions(args.captions, "precomp")]
    texts = [" ".join(text.split()) for group in groups for text in group]
    graphs = iter(tqdm(default_parser().pipe(texts), total=len(texts)))
    counts = SceneCounts()
    for group in groups:
        counts.add_group([next(graphs) for _ in group])
    table = {name: counts.to_dict()[name] for name in VERB_GROUP_FIELDS}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 and no file name in the header: the same captions give the same bytes
    with (
        open(out, "wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as handle,
    ):
        handle.write(json.dumps(table, ensure_ascii=False).encode("utf-8"))
    verbs = len(counts.verb_grouped) - 1
    print(f"{len(texts)} captions, {verbs} verbs -> {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
