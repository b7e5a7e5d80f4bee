"""bpeforge._progress: the console progress of training (log lines per percent of the merges,
quiet off a terminal)."""

import io
import re

import bpeforge
from bpeforge._progress import ConsoleProgress, merge_line


def test_merge_line_format():
    assert merge_line(501, 50025, (69, 120), 756, 166814) == (
        "Progress: 1% (501/50025 merges) - Last merge: (69, 120) -> 756 (frequency: 166814)"
    )


def test_console_progress_logs_each_percent_once():
    out = io.StringIO()
    p = ConsoleProgress(file=out, bars=False, log=True)
    trainer = bpeforge.Trainer(bpeforge._patterns.resolve_pattern(None))
    texts = [f"w{i} w{i * 7} w{i * 13}" for i in range(3000)]
    trainer.train_from_iterator(texts, 256 + 400, progress=p)
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Read 3,000 documents")
    assert lines[1] == "Starting BPE training: 400 merges to compute"
    pct = [int(m.group(1)) for m in map(re.compile(r"Progress: (\d+)% \(\d+/400 merges\)").match, lines) if m]
    assert pct == sorted(set(pct)) and pct[-1] == 100 and len(pct) == 100
    assert lines[-1].startswith("Finished training: 400 merges")


def test_console_progress_is_quiet_off_a_terminal():
    out = io.StringIO()
    p = ConsoleProgress(file=out)  # a StringIO is not a terminal
    assert not p.bars and not p.log
    trainer = bpeforge.Trainer(bpeforge._patterns.resolve_pattern(None))
    trainer.train_from_iterator(["a b c"] * 10, 260, progress=p)
    p.close()
    assert out.getvalue() == ""


class Clock:
    """A fake time.perf_counter, moved by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def merge(p: ConsoleProgress, done: int, total: int = 200) -> None:
    p("merge", {"done": done, "total": total, "pair": (1, 2), "token": 255 + done, "count": 10})


def test_per_percent_lines_wait_for_merge_lines_after(monkeypatch):
    """With ``merge_lines_after``, no per-percent line until the merge loop has run that long,
    then one per percent from where it is; a quick merge loop prints none, its start and end
    lines only."""
    clock = Clock()
    monkeypatch.setattr("bpeforge._progress.time.perf_counter", clock)
    out = io.StringIO()
    p = ConsoleProgress(file=out, bars=False, log=True, merge_lines_after=3.0)
    for done in range(1, 201):
        clock.now += 1 / 32  # 3 s after the first merge, at merge 97 (48%), the lines start
        merge(p, done)
    p.close()
    pct = [int(m.group(1)) for m in map(re.compile(r"Progress: (\d+)%").match, out.getvalue().splitlines()) if m]
    assert pct == list(range(48, 101))
    assert out.getvalue().splitlines()[0] == "Starting BPE training: 200 merges to compute"

    out = io.StringIO()
    p = ConsoleProgress(file=out, bars=False, log=True, merge_lines_after=3.0)
    for done in range(1, 201):
        clock.now += 0.001
        merge(p, done)
    p.close()
    assert out.getvalue().splitlines() == ["Starting BPE training: 200 merges to compute", "Finished training: 200 merges in 0.2 s"]

    out = io.StringIO()
    p = ConsoleProgress(file=out, bars=False, log=True)  # the default: every line
    for done in range(1, 201):
        merge(p, done)
    p.close()
    assert sum(line.startswith("Progress: ") for line in out.getvalue().splitlines()) == 100
