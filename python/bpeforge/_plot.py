"""Plots of compression against vocabulary size: ``bpeforge sweep`` (``sweep.png``),
``bpeforge eval --plot`` and parity-aware training (``parity.png``).

One figure: bytes per token (higher is better compression) against the vocabulary size on a
log2 axis, one line per text (source), each point marked and labelled with its value, and, for
``eval``, with the tokenizer's name. Drawn with matplotlib, an optional extra (``pip install
'bpeforge[plot]'``); without it :class:`PlotUnavailable` (an ImportError) says so. The figure is
drawn through matplotlib's object interface on the Agg canvas, not ``pyplot``, so that it
neither needs a display nor changes the backend or figures of the program that calls it.

Rows are read by their fields (``text``/``source``, ``tokenizer``, ``vocab_size``,
``bytes_per_token``), so this module imports nothing else of the package.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = ["INSTALL_HINT", "PlotUnavailable", "import_matplotlib", "plot_curves", "plot_eval", "plot_parity", "plot_sweep"]

INSTALL_HINT = "pip install 'bpeforge[plot]'"
"""What to install for plots (matplotlib)."""

# A point: (vocabulary size, bytes per token, label or None).
Point = Tuple[int, float, Optional[str]]


class PlotUnavailable(ImportError):
    """matplotlib is not installed, so no plot can be drawn; the message says what to install."""


def import_matplotlib() -> Any:
    """The ``matplotlib`` module, or :class:`PlotUnavailable` saying how to install it."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401 - checked here, used below
    except ImportError:
        raise PlotUnavailable(f"plots need matplotlib: {INSTALL_HINT} (or pip install matplotlib)") from None
    return matplotlib


def size_label(n: int) -> str:
    """A vocabulary size as an axis shows it, in full (mixing ``64K`` with ``32,768`` reads badly).

    >>> size_label(512), size_label(65536), size_label(100277)
    ('512', '65,536', '100,277')
    """
    return f"{n:,}"


def plot_curves(
    curves: Mapping[str, Sequence[Point]],
    path: Union[str, "os.PathLike[str]"],
    *,
    title: str,
    tick_labels: Optional[Mapping[int, str]] = None,
    gains: bool = False,
    by_size: bool = True,
    x_label: Optional[str] = None,
) -> None:
    """Draws ``curves`` (line name -> points ``(vocabulary size, bytes per token, label)``) into
    the PNG file ``path``: one line per name, its points marked and labelled with their bytes
    per token and, when given, their label. ``tick_labels``: the x axis is marked at these
    sizes, with these labels (else at powers of two). ``gains``: under each segment of a line,
    how many fewer tokens the larger size needs (bytes per token up by r: tokens down by
    1 - 1/r). ``by_size=False``: the x values are the places of tokenizers in a row (0, 1, ...)
    rather than sizes, on a linear axis, each named by ``tick_labels``. ``x_label``: the x values
    are those quantities (named so on the axis), on a linear axis."""
    import_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    figure = Figure(figsize=(8, 5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    sizes = sorted({size for points in curves.values() for size, _, _ in points})
    # At each x, the line with the highest value is labelled above its point, the others below
    # it, so that the labels of close lines do not sit on each other or on the other line.
    highest = {x: max(y for points in curves.values() for px, y, _ in points if px == x) for x in sizes}
    for name, points in curves.items():
        ordered = sorted(points, key=lambda p: p[0])
        xs = [p[0] for p in ordered]
        ys = [p[1] for p in ordered]
        (line,) = ax.plot(xs, ys, marker="o", markersize=6, linewidth=2, label=name)
        colour = line.get_color()
        for x, y, label in ordered:
            text = f"{y:.2f}" if label is None else f"{label}\n{y:.2f}"
            above = y >= highest[x]
            ax.annotate(
                text, (x, y), textcoords="offset points", xytext=(0, 8 if above else -9), ha="center",
                va="bottom" if above else "top", fontsize=8, color=colour,
            )
        if gains:
            for (x0, y0, _), (x1, y1, _) in zip(ordered, ordered[1:]):
                saved = (1 - y0 / y1) * 100
                ax.annotate(
                    f"{-saved:+.1f}% tokens", ((x0 * x1) ** 0.5, (y0 + y1) / 2), textcoords="offset points", xytext=(4, -6),
                    ha="left", va="top", fontsize=7.5, color="dimgray", style="italic",
                )
    if by_size:
        ax.set_xscale("log", base=2)
    if tick_labels is not None:
        ax.xaxis.set_major_locator(FixedLocator(sorted(tick_labels)))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: tick_labels.get(int(round(x)), "")))
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(int(round(x)))))
    # Room for the labels above the points and half a step of the axis either side.
    lo, hi = (min(sizes), max(sizes)) if sizes else (256, 512)
    if x_label is not None:
        margin = max(hi - lo, 1) * 0.08
        ax.set_xlim(lo - margin, hi + margin)
    else:
        ax.set_xlim(*((lo / 2**0.35, hi * 2**0.35) if by_size else (lo - 0.5, hi + 0.5)))
    ys_all = [y for points in curves.values() for _, y, _ in points]
    if ys_all:
        y_lo, y_hi = min(ys_all), max(ys_all)
        pad = max(y_hi - y_lo, 0.2) * 0.15
        ax.set_ylim(y_lo - pad, y_hi + 2.2 * pad)
    ax.set_xlabel(x_label or ("vocabulary size (tokens, log scale)" if by_size else "tokenizer and vocabulary size, smallest first"))
    ax.set_ylabel("bytes per token (higher: fewer tokens)")
    ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(title="text" if len(curves) > 1 else None, loc="lower right", fontsize=9)
    import io as _io

    from ._files import write_file

    png = _io.BytesIO()
    figure.savefig(png, format="png")
    write_file(path, png.getvalue())  # atomically, never through a symlink planted at a temporary name


def text_size(n_bytes: int) -> str:
    """A text's size for a legend.

    >>> text_size(950), text_size(276_000), text_size(12_400_000)
    ('950 B', '276 KB', '12.4 MB')
    """
    if n_bytes < 1000:
        return f"{n_bytes} B"
    if n_bytes < 1_000_000:
        return f"{n_bytes / 1000:.0f} KB"
    return f"{n_bytes / 1e6:,.1f} MB"


def plot_sweep(rows: Sequence[Any], path: Union[str, "os.PathLike[str]"], *, title: str) -> None:
    """Draws the rows of a sweep (:class:`bpeforge._sweep.SweepRow`: ``source``, ``vocab_size``,
    ``bytes``, ``bytes_per_token``) into ``path``: one line per source (named with its size),
    the sizes marked on the axis, and, for one or two sources, the tokens each size saves
    against the one before (for one source: the table has them for several)."""
    curves: Dict[str, List[Point]] = {}
    for r in rows:
        curves.setdefault(f"{r.source} ({text_size(r.bytes)})", []).append((r.vocab_size, r.bytes_per_token, None))
    sizes = sorted({r.vocab_size for r in rows})
    plot_curves(curves, path, title=title, tick_labels={s: size_label(s) for s in sizes}, gains=len(curves) == 1)


def well_apart(sizes: Sequence[int], ratio: float = 1.5) -> bool:
    """Whether sorted distinct ``sizes`` are each at least ``ratio`` times the one before: far
    enough apart on a log axis for a label each.

    >>> well_apart([8192, 50257, 100277]), well_apart([32000, 32768])
    (True, False)
    """
    return all(b >= a * ratio for a, b in zip(sizes, sizes[1:]))


def plot_eval(rows: Sequence[Any], path: Union[str, "os.PathLike[str]"], *, title: Optional[str] = None) -> None:
    """Draws the rows of :func:`bpeforge.evaluate` into ``path``: one line per text, a point per
    tokenizer. When the tokenizers' sizes are distinct and well apart, each is placed at its
    vocabulary size (a log axis marked with its name and size); else (two of one size, or
    sizes too close to tell apart) they stand side by side in order of size, each named."""
    names: Dict[str, int] = {}
    for r in rows:
        names.setdefault(r.tokenizer, r.vocab_size)
    order = sorted(names, key=lambda name: names[name])  # (a stable sort: equal sizes in the order given)
    sizes = [names[name] for name in order]
    by_size = len(set(sizes)) == len(sizes) and well_apart(sizes)
    place = {name: (names[name] if by_size else k) for k, name in enumerate(order)}
    curves: Dict[str, List[Point]] = {}
    for r in rows:
        curves.setdefault(r.text, []).append((place[r.tokenizer], r.bytes_per_token, None))
    if title is None:
        n_text = len(curves)
        title = f"Bytes per token of {len(order)} tokenizer{'s' if len(order) != 1 else ''} on {n_text} text{'s' if n_text != 1 else ''}"
    ticks = {place[name]: f"{name}\n{size_label(names[name])}" for name in order}
    plot_curves(curves, path, title=title, tick_labels=ticks, by_size=by_size)


def plot_parity(
    curves: Mapping[str, Tuple[Sequence[int], Optional[Sequence[int]]]],
    first_size: int,
    path: Union[str, "os.PathLike[str]"],
    *,
    title: str,
) -> None:
    """Draws parity-aware training's curves into ``path``: for each language, its length in
    tokens after each merge with parity (solid) and without (dashed, if given), as bytes per
    token (its first length over each) against the vocabulary size (``first_size`` before the
    first merge, one more each merge) on a log2 axis."""
    import_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    figure = Figure(figsize=(8, 5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()

    def points(lengths: Sequence[int]) -> Tuple[List[int], List[float]]:
        step = max(1, len(lengths) // 400)  # a few hundred points a line are enough to draw it
        keep = list(range(0, len(lengths), step)) + ([len(lengths) - 1] if (len(lengths) - 1) % step else [])
        return [first_size + k for k in keep], [lengths[0] / lengths[k] if lengths[k] else float("nan") for k in keep]

    for name, (parity, plain) in curves.items():
        xs, ys = points(parity)
        (line,) = ax.plot(xs, ys, linewidth=2, label=f"{name}: {ys[-1]:.2f}" if ys else name)
        if plain is not None:
            pxs, pys = points(plain)
            ax.plot(pxs, pys, linewidth=1.2, linestyle="--", color=line.get_color(), label=f"{name} without parity: {pys[-1]:.2f}" if pys else None)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(int(round(x)))))
    ax.set_xlabel("vocabulary size (tokens, log scale)")
    ax.set_ylabel("bytes per token (higher: fewer tokens)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    import io as _io

    from ._files import write_file

    png = _io.BytesIO()
    figure.savefig(png, format="png")
    write_file(path, png.getvalue())
