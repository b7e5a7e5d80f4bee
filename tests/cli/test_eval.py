"""`bpeforge eval` (bpeforge.cli.eval): the table, JSON, texts from files and standard input,
and one-line errors."""

import json
import sys

import pytest

import bpeforge
from bpeforge import cli
from bpeforge.cli import eval as cli_eval
from bpeforge._eval import evaluate
from bpeforge._io import ranks_to_tiktoken
from ranks import BYTE_RANKS, hand_ranks


@pytest.fixture()
def lolo_file(tmp_path):
    # lo, " lo", "lo lo": split by GPT-4's pattern "lo lo" is "lo" + " lo" (2 tokens); as one
    # chunk it merges all the way to "lo lo" (1 token)
    path = tmp_path / "lolo.tiktoken"
    path.write_bytes(ranks_to_tiktoken(hand_ranks(b"lo", b" lo", b"lo lo")))
    return path


@pytest.fixture()
def files(tmp_path, hello):
    hello.save(tmp_path / "tok")
    (tmp_path / "a.txt").write_text("hello hello", encoding="utf-8")
    (tmp_path / "b.txt").write_text("héllo", encoding="utf-8")
    return tmp_path


def test_cli_table(files, capsys):
    code = cli.main(["eval", str(files / "tok"), str(files / "tok"), "--text", str(files / "a.txt"), "--color", "never"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Vocab sizes:" in out and "+0.0%" in out and "tie" in out


def test_cli_json(files, lolo_file, capsys):
    argv = [str(files / "tok"), str(lolo_file) + ":nanochat", "--text", str(files / "a.txt"), str(files / "b.txt"), "--json"]
    assert cli.main(["eval", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = evaluate(
        {str(files / "tok"): str(files / "tok"), str(lolo_file) + ":nanochat": str(lolo_file) + ":nanochat"},
        [(str(files / "a.txt"), "hello hello"), (str(files / "b.txt"), "héllo")],
    )
    assert data == [r._asdict() for r in expected]
    assert [(d["text"], d["tokens"]) for d in data] == [
        (str(files / "a.txt"), 3), (str(files / "a.txt"), 9), (str(files / "b.txt"), 5), (str(files / "b.txt"), 5),
    ]


def test_cli_text_repeated_and_stdin(files, capsys, monkeypatch):
    import io as _io

    class FakeStdin:
        buffer = _io.BytesIO("hello".encode())

    monkeypatch.setattr("sys.stdin", FakeStdin)
    argv = [str(files / "tok"), "--text", str(files / "a.txt"), "--text", "-", "--json"]
    assert cli.main(["eval", *argv]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["text"], d["tokens"]) for d in data] == [(str(files / "a.txt"), 3), ("<stdin>", 1)]


@pytest.mark.parametrize(
    "make_argv, message",
    [
        (lambda d: [str(d / "tok"), "--text", str(d / "missing.txt")], "missing.txt: No such file"),
        (lambda d: [str(d / "nope" / "tok"), "--text", str(d / "a.txt")], "no such file or folder"),
        (lambda d: ["gpt-17", "--text", str(d / "a.txt")], "'gpt-17' is not a tiktoken encoding"),
        (lambda d: [str(d / "tok"), "--text", str(d / "latin1.txt")], "latin1.txt: not UTF-8 text"),
        (lambda d: [str(d / "tok"), "--text", str(d / "empty.txt")], "empty.txt: the file is empty"),
        (lambda d: [str(d / "tok" / "tokenizer.tiktoken") + ":gtp4", "--text", str(d / "a.txt")], "'gtp4': no such preset"),
        (lambda d: [str(d / "a.txt"), "--text", str(d / "a.txt")], "not a .tiktoken ranks file"),
    ],
)
def test_cli_errors(files, capsys, make_argv, message):
    (files / "latin1.txt").write_bytes("café".encode("latin-1"))
    (files / "empty.txt").write_bytes(b"")
    assert cli.main(["eval", *make_argv(files)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("stream, message", [("stdin", "-: standard input is closed"), ("stdout", "standard output is closed")])
def test_cli_closed_standard_streams(files, capsys, monkeypatch, stream, message):
    # Python sets sys.stdin / sys.stdout to None when started with that descriptor closed.
    argv = [str(files / "tok"), "--text", "-", "--json"]
    with monkeypatch.context() as m:
        m.setattr(sys, stream, None)
        code = cli.main(["eval", *argv])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: ") and message in err


def test_texts_given_before_the_tokenizers_say_why_none_is_left(files, capsys):
    assert cli.main(["eval", "--text", str(files / "a.txt"), str(files / "tok")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: no TOKENIZER given (--text takes every argument after it")
    assert cli.main(["eval", "--json", "--text", str(files / "a.txt"), "--", str(files / "tok")]) == 0


def test_cli_usage_errors(files, capsys):
    """A bad option is one line naming it and exit code 2, as for train."""
    assert cli.main(["eval", str(files / "tok")]) == 2  # --text is required
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: ") and "--text" in err and err.count("\n") == 1
    assert cli.main(["eval", str(files / "tok"), "--text", str(files / "a.txt"), "--threads", "0"]) == 2
    err = capsys.readouterr().err
    assert "--threads: must be at least 1, got 0" in err and err.count("\n") == 1


def test_bpeforge_command_has_eval(files, capsys):
    code = cli.main(["eval", str(files / "tok"), "--text", str(files / "a.txt"), "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)[0]["tokens"] == 3
    code = cli.main(["eval", "gpt-17", "--text", str(files / "a.txt")])
    err = capsys.readouterr().err
    assert code == 1 and "gpt-17" in err and "Traceback" not in err


def test_add_eval_parser_and_run_eval(files, capsys):
    import argparse

    parser = argparse.ArgumentParser(prog="x")
    sub = parser.add_subparsers(dest="command")
    cli_eval.add_eval_parser(sub)
    args = parser.parse_args(["eval", str(files / "tok"), "--text", str(files / "b.txt"), "--json"])
    assert args.run is cli_eval.run_eval
    assert args.run(args) == 0
    assert json.loads(capsys.readouterr().out)[0]["tokens"] == 5


def test_cli_reads_texts_in_bounded_pieces_with_the_counts_of_the_texts_whole(files, capsys, monkeypatch):
    import bpeforge._eval

    text = "hello hello, héllo\nhello  \n\n hi 42abc\r\n" * 200
    (files / "big.txt").write_text(text, encoding="utf-8")
    whole = evaluate([str(files / "tok")], [(str(files / "big.txt"), text)])
    seen = []
    batches = bpeforge._eval.piece_batches

    def spy(pieces, max_pieces):
        for batch in batches(pieces, max_pieces):
            seen.append(batch)
            yield batch

    monkeypatch.setattr(bpeforge._eval, "piece_batches", spy)
    monkeypatch.setattr(bpeforge._eval, "READ_BYTES", 64)
    monkeypatch.setattr(bpeforge._eval, "PIECE_CHARS", 100)
    monkeypatch.setattr(bpeforge._eval, "BATCH_BYTES", 300)
    assert cli.main(["eval", str(files / "tok"), "--text", str(files / "big.txt"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [r._asdict() for r in whole]
    assert len(seen) > 20 and max(sum(len(p.encode()) for p in b) for b, _, _ in seen) <= 300


def test_cli_a_text_cut_inside_a_span_is_a_warning_line(files, capsys, monkeypatch):
    import bpeforge._eval

    monkeypatch.setattr(bpeforge._eval, "PIECE_CHARS", 1000)
    (files / "run.txt").write_text("l" * 3500, encoding="utf-8")
    assert cli.main(["eval", str(files / "tok"), "--text", str(files / "run.txt"), "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["bytes"] == 3500
    assert captured.err.startswith(f"bpeforge: warning: text '{files / 'run.txt'}': 3 stretches of 1,000 characters")
    assert len(captured.err.strip().splitlines()) == 1


def test_cli_a_custom_pattern_that_fails_on_a_text_is_one_line(files, capsys):
    (files / "full.tiktoken").write_bytes(ranks_to_tiktoken(BYTE_RANKS))
    (files / "run.txt").write_text("a" * 100_000, encoding="utf-8")
    argv = [str(files / "full.tiktoken") + r":(?:a|aa)+(?=b)|\S|\s", "--text", str(files / "run.txt")]
    assert cli.main(["eval", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: tokenizer ") and "cannot encode text" in err and "simplify the pattern" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_a_bad_byte_is_found_before_any_tokenizer_is_loaded(files, capsys, monkeypatch):
    import bpeforge._eval

    monkeypatch.setattr(bpeforge._eval, "READ_BYTES", 16)
    (files / "late.txt").write_bytes(b"hello world\n" * 100 + b"\xff")
    assert cli.main(["eval", "gpt-17", "--text", str(files / "late.txt")]) == 1  # gpt-17 would fail to load
    err = capsys.readouterr().err
    assert err == f"bpeforge: error: {files / 'late.txt'}: not UTF-8 text (byte 1200: b'\\xff')\n"
