"""What every ``foscar`` plot shares: resolution, figure width and the colour palette.

Plots are drawn on :class:`matplotlib.figure.Figure` objects (the Agg canvas: no display
needed) with a fixed width (:data:`FIGURE_WIDTH`; more data adds panels as rows, never
width) and one colour per series from :func:`palette`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DPI = 120
FIGURE_WIDTH = 13.0  # inches
PNG_COLORS = 256


def save_png(fig: Any, path: Path | str, dpi: int = DPI) -> Path:
    """Write ``fig`` to ``path`` as a 256-colour palette PNG; returns ``path``.

    matplotlib draws RGBA; the plots hold a few dozen colours plus anti-aliasing, so a
    median-cut palette of :data:`PNG_COLORS` colours (no dithering, Pillow) keeps them
    to the eye at about a third of the bytes. Small files keep ``results/`` (committed
    with every run) small enough to travel with the tree to the GPU machine.
    """
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    buf.seek(0)
    with Image.open(buf) as im:
        q = im.convert("RGB").quantize(PNG_COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    q.save(path, format="PNG", optimize=True)
    return Path(path)


def palette(n: int) -> list[Any]:
    """At least ``n`` distinct RGB(A) colours, red left out (red marks warnings).

    tab10 without its red, then tab20 without its red pair, then tab20 + tab20b +
    tab20c, then ``n`` evenly spaced hues: the colours never repeat.
    """
    from matplotlib import colormaps

    tab10 = [c for i, c in enumerate(colormaps["tab10"].colors) if i != 3]
    if n <= len(tab10):
        return tab10
    tab20 = [c for i, c in enumerate(colormaps["tab20"].colors) if i not in (6, 7)]
    if n <= len(tab20):
        return tab20
    more = tab20 + list(colormaps["tab20b"].colors) + list(colormaps["tab20c"].colors)
    if n <= len(more):
        return more
    hsv = colormaps["hsv"]
    return [hsv(i / n) for i in range(n)]
