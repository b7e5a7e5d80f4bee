"""bpeforge._plot: the PNG files of a sweep and of an eval table, and the message without
matplotlib."""

from __future__ import annotations

import sys

import pytest

from bpeforge._eval import EvalRow
from bpeforge._plot import PlotUnavailable, plot_curves, plot_eval, plot_sweep
from bpeforge._sweep import SweepRow


def sweep_rows():
    rows = []
    for source, base in (("held-out", 1.7), ("code", 1.3)):
        previous = None
        for k, size in enumerate([512, 1024, 2048, 4096]):
            tokens = int(100_000 / (base + 0.45 * k))
            saved = None if previous is None else (previous - tokens) / previous * 100
            rows.append(SweepRow(source, size, 100_000, 95_000, tokens, 100_000 / tokens, tokens / 95_000, saved))
            previous = tokens
    return rows


def eval_rows(sizes):
    return [
        EvalRow(text, f"tok{size}-{i}", 1000, int(1000 / (1.5 + i * 0.3 + t)), 1000 / int(1000 / (1.5 + i * 0.3 + t)), 0.5, 0.0, 990, size)
        for t, text in enumerate(["news.txt", "code.py"])
        for i, size in enumerate(sizes)
    ]


def check_png(path, min_side=400):
    """A PNG file that an image library opens, of a size a reader can see."""
    Image = pytest.importorskip("PIL.Image")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert 10_000 < len(data) < 500_000
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
        assert width >= min_side and height >= min_side * 0.6
        # Not a blank canvas: lines and text in several colours.
        assert len(image.convert("RGB").getcolors(1 << 20) or []) > 20


def test_sweep_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    plot_sweep(sweep_rows(), tmp_path / "sweep.png", title="Bytes per token by vocabulary size: test")
    check_png(tmp_path / "sweep.png")


@pytest.mark.parametrize("sizes", [[8192, 50257, 100277], [32000, 32768, 32768]])
def test_eval_plot_is_a_png_whether_sizes_are_apart_or_not(tmp_path, sizes):
    pytest.importorskip("matplotlib")
    plot_eval(eval_rows(sizes), tmp_path / "eval.png")
    check_png(tmp_path / "eval.png")


def test_plotting_does_not_touch_pyplot(tmp_path):
    """The figure is drawn on its own canvas: no pyplot figure is left open in the caller."""
    pytest.importorskip("matplotlib")
    plot_sweep(sweep_rows(), tmp_path / "s.png", title="t")
    if "matplotlib.pyplot" in sys.modules:
        assert sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_without_matplotlib_the_message_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailable, match=r"plots need matplotlib: pip install 'bpeforge\[plot\]'"):
        plot_curves({"a": [(512, 2.0, None)]}, tmp_path / "x.png", title="t")
    assert issubclass(PlotUnavailable, ImportError)
    assert not (tmp_path / "x.png").exists()
