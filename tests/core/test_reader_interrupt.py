"""Ctrl-C while the trainer reads a bpeforge.TextReader in Rust (without the GIL): it stops
quickly, and the trainer is left as it was."""

from __future__ import annotations

import sys

import pytest

from .test_robustness import interrupt_training


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_while_the_trainer_reads_a_reader(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("".join(f"endless words number {i} and more {i * 7}\n" for i in range(1_500_000)))
    interrupt_training(
        f"""
        import bpeforge
        t = bpeforge.Trainer(num_threads=1)
        readers = [bpeforge.TextReader({str(big)!r}) for _ in range(20)]
        """,
        'print("reading", flush=True); t.train_from_iterator(readers, 50_000)',
        "reading",
        within=1.5,
    )
