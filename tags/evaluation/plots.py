"""A tiny line-plot helper drawn with Pillow (no matplotlib)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw

Series = dict[str, Sequence[tuple[float, float]]]
COLORS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189),
          (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
          (0, 0, 128), (128, 0, 0)]  # fmt: skip
BACKGROUND = (255, 255, 255)


def _range(values: list[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if hi - lo < 1e-12:
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    return lo, hi


#: pixels right of the plot for the legend (a line sample and up to 22 characters), at
#: most a third of the image
_LEGEND_WIDTH = 180


def line_plot(
    series: Series,
    path: str | Path,
    title: str = "",
    size: tuple[int, int] = (640, 360),
    xlabel: str = "step",
) -> Path:
    """Draw one polyline per series (name -> ``(x, y)`` points; non-finite points are
    skipped) with axes, min/max tick labels and a legend beside the plot (never over a
    line); save a PNG at ``path``."""
    width, height = size
    left, right, top, bottom = 60, min(_LEGEND_WIDTH, width // 3), 30, 40
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    clean = {
        name: [(float(x), float(y)) for x, y in points if math.isfinite(x) and math.isfinite(y)]
        for name, points in series.items()
    }
    points_all = [p for points in clean.values() for p in points]
    draw.text((left, 8), title, fill=(0, 0, 0))
    x0, y0, x1, y1 = left, top, width - right, height - bottom
    draw.rectangle((x0, y0, x1, y1), outline=(0, 0, 0))
    if points_all:
        xmin, xmax = _range([p[0] for p in points_all])
        ymin, ymax = _range([p[1] for p in points_all])

        def to_px(x: float, y: float) -> tuple[float, float]:
            px = x0 + (x - xmin) / (xmax - xmin) * (x1 - x0)
            py = y1 - (y - ymin) / (ymax - ymin) * (y1 - y0)
            return px, py

        draw.text((4, y0), f"{ymax:.3g}", fill=(0, 0, 0))
        draw.text((4, y1 - 10), f"{ymin:.3g}", fill=(0, 0, 0))
        draw.text((x0, y1 + 4), f"{xmin:.3g}", fill=(0, 0, 0))
        draw.text((x1 - 30, y1 + 4), f"{xmax:.3g}", fill=(0, 0, 0))
        draw.text(((x0 + x1) // 2 - 10, y1 + 4), xlabel, fill=(0, 0, 0))
        for i, (name, points) in enumerate(clean.items()):
            color = COLORS[i % len(COLORS)]
            pixels = [to_px(x, y) for x, y in sorted(points)]
            if len(pixels) == 1:
                px, py = pixels[0]
                draw.ellipse((px - 2, py - 2, px + 2, py + 2), fill=color)
            elif pixels:
                draw.line(pixels, fill=color, width=2)
            ly = y0 + 6 + 14 * i
            draw.line((x1 + 10, ly + 5, x1 + 30, ly + 5), fill=color, width=2)
            draw.text((x1 + 35, ly), name[:22], fill=(0, 0, 0))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


__all__ = ["line_plot"]
