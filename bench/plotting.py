"""What every ``foscar`` plot shares: resolution, figure width and the colour palette.

Plots are drawn on :class:`matplotlib.figure.Figure` objects (the Agg canvas: no display
needed) with a fixed width (:data:`FIGURE_WIDTH`; more data adds panels as rows, never
width) and one colour per series from :func:`palette`.
"""

from __future__ import annotations

from typing import Any

DPI = 120
FIGURE_WIDTH = 13.0  # inches


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
