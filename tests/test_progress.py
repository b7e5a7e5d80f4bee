"""bpeforge.progress: the console progress of training (log lines per percent of the merges,
quiet off a terminal)."""

import io
import re

import bpeforge
from bpeforge.progress import ConsoleProgress, merge_line


def test_merge_line_format():
    assert merge_line(501, 50025, (69, 120), 756, 166814) == (
        "Progress: 1% (501/50025 merges) - Last merge: (69, 120) -> 756 (frequency: 166814)"
    )


def test_console_progress_logs_each_percent_once():
    out = io.StringIO()
    p = ConsoleProgress(file=out, bars=False, log=True)
    trainer = bpeforge.Trainer(bpeforge.resolve_pattern(None))
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
    trainer = bpeforge.Trainer(bpeforge.resolve_pattern(None))
    trainer.train_from_iterator(["a b c"] * 10, 260, progress=p)
    p.close()
    assert out.getvalue() == ""
