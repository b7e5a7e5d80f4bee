"""bpeforge.cli.train: `bpeforge train`, run as ``python -m bpeforge`` in a subprocess: every input
format, the default standard-library corpus, the options, progress, the saved files, every error
case (one line on stderr, non-zero exit, no traceback, nothing written), and the same tokenizer
as the API's. (Outputs, the report and Ctrl-C have files of their own beside this one.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bpeforge
from bpeforge import cli
from bpeforge._errors import SPLIT_FAILED

from .helpers import (
    ENV,
    PROGRESS_LINE,
    assert_one_line_error,
    check_saved,
    no_outputs_in,
    report_int,
    report_value,
    run,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


# ------------------------------------------------------------------------------ formats


@pytest.fixture(scope="module")
def txt_result(corpus, tmp_path_factory):
    d, _ = corpus
    out = tmp_path_factory.mktemp("out") / "tok"
    r = run("train", d / "docs.txt", "--vocab-size", 400, "-o", out)
    assert r.returncode == 0, r.stderr
    return out, r


def test_txt_trains_reports_and_saves(txt_result, corpus):
    out, r = txt_result
    _, docs = corpus
    assert r.stderr == ""  # not a terminal and no -v: quiet
    tok = check_saved(out)
    assert tok.n_vocab == 400 and len(tok.special_tokens) == 9  # nanochat's specials by default
    trained = [doc for i, doc in enumerate(docs) if i % 100 != 99]
    assert report_int(r.stdout, "documents") == len(trained)
    assert "(+ 20 held out)" in report_value(r.stdout, "documents")
    assert report_int(r.stdout, "characters") == sum(map(len, trained))
    assert report_int(r.stdout, "bytes") == sum(len(t.encode()) for t in trained)
    assert report_int(r.stdout, "distinct spans") > 10
    assert report_value(r.stdout, "merges").startswith("135 -> vocabulary 400 = 256 bytes + 135 merged tokens + 9 special tokens")
    assert re.match(r"reading \+ counting [\d.]+ s, [\d.,]+ MB/s; merging [\d.]+ s, [\d,]+ merges/s", report_value(r.stdout, "time"))
    assert re.match(r"\d[\d,]* MB \(max RSS\)", report_value(r.stdout, "peak memory"))
    first = report_value(r.stdout, "first merges")
    left, right, token, text, count = re.match(r"\((\d+), (\d+)\) -> (\d+) '(.*)' \(([\d,]+)\)", first).groups()
    assert int(token) == 256 and bytes([int(left), int(right)]).decode() == text and int(count.replace(",", "")) > 100
    assert re.match(r"\(\d+, \d+\) -> \d+ '.*' \([\d,]+\)", report_value(r.stdout, "last merges"))
    comp = re.match(r"([\d.]+) bytes/token on 20 held-out documents \(([\d,]+) bytes -> ([\d,]+) tokens\)", report_value(r.stdout, "compression"))
    assert comp, r.stdout
    held = [doc for i, doc in enumerate(docs) if i % 100 == 99]
    assert int(comp.group(2).replace(",", "")) == sum(len(h.encode()) for h in held)
    assert int(comp.group(3).replace(",", "")) == sum(len(tok.encode(h)) for h in held)
    assert float(comp.group(1)) > 2.0
    assert str(out) in report_value(r.stdout, "saved")


@pytest.mark.parametrize("name, options", [
    ("docs.jsonl", []),
    ("docs.parquet", []),
    ("docs.parquet", ["--parquet-reader", "pyarrow"]),
    ("docs.txt.gz", []),
    ("docs.jsonl.zst", []),
])
def test_every_format_gives_the_same_tokenizer(corpus, txt_result, tmp_path, name, options):
    d, _ = corpus
    out = tmp_path / "tok"
    r = run("train", d / name, "--vocab-size", 400, "-o", out, *options)
    assert r.returncode == 0, r.stderr
    assert check_saved(out).mergeable_ranks == bpeforge.Tokenizer.load(txt_result[0]).mergeable_ranks
    assert report_value(r.stdout, "compression") == report_value(txt_result[1].stdout, "compression")


@pytest.mark.parametrize("options, api", [
    ([], {}),
    (["--pattern", "nanochat", "--special-tokens", "<|a|>,<|b|>", "--min-frequency", "3", "--threads", "1"],
     dict(pattern="nanochat", special_tokens=["<|a|>", "<|b|>"], min_frequency=3, num_threads=1)),
])
def test_the_command_line_and_the_api_train_the_same_tokenizer(corpus, tmp_path, options, api):
    """Both train through bpeforge._training: on the same documents (nothing held out) the same
    ranks, pattern and special tokens, and the same .tiktoken file."""
    import warnings

    from bpeforge._io import ranks_to_tiktoken

    d, docs = corpus
    r = run("train", d / "docs.txt", "--vocab-size", 600, "--holdout", 0, "-o", tmp_path / "tok", *options)
    assert r.returncode == 0, r.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # min_frequency may stop it early: the CLI warned too
        expected = bpeforge.Tokenizer.train_from_iterator(docs, 600, **api)
    saved = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert saved.mergeable_ranks == expected.mergeable_ranks and len(expected.mergeable_ranks) > 300
    assert (saved.pattern, saved.special_tokens) == (expected.pattern, expected.special_tokens)
    assert (tmp_path / "tok.tiktoken").read_bytes() == ranks_to_tiktoken(expected.mergeable_ranks)


def test_folder_glob_and_explicit_format(corpus, tmp_path):
    d, docs = corpus
    r = run("train", d, "--vocab-size", 300, "-o", tmp_path / "all", "--holdout", 0, "--special-tokens", "none")
    assert r.returncode == 0, r.stderr
    assert "5 files (jsonl, parquet, text)" in report_value(r.stdout, "corpus")
    assert report_int(r.stdout, "documents") == 5 * len(docs)
    (tmp_path / "data.dat").write_text((d / "docs.jsonl").read_text())
    r = run("train", tmp_path / "data.dat", "--input-format", "jsonl", "--vocab-size", 300, "-o", tmp_path / "dat")
    assert r.returncode == 0, r.stderr
    r = run("train", str(d / "docs.t*"), "--vocab-size", 300, "-o", tmp_path / "glob", "--holdout", 0)
    assert r.returncode == 0, r.stderr
    assert "2 files (text)" in report_value(r.stdout, "corpus")  # docs.txt and docs.txt.gz
    assert report_int(r.stdout, "documents") == 2 * len(docs)
    r = run("train", str(d / "docs.j*l"), "--input-format", "parquet", "--vocab-size", 300, "-o", tmp_path / "bad")
    assert r.returncode == 1 and "docs.jsonl: not a readable Parquet file" in r.stderr  # checked before training


def test_jsonl_and_parquet_text_column(tmp_path):
    rows = [{"body": f"body text number {i}"} for i in range(300)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pa.table({"body": [r["body"] for r in rows]}), tmp_path / "a.parquet")
    for name in ["a.jsonl", "a.parquet"]:
        r = run("train", tmp_path / name, "--text-column", "body", "--vocab-size", 280, "-o", tmp_path / f"out-{name}")
        assert r.returncode == 0, r.stderr
        assert report_int(r.stdout, "documents") == 297


def test_parquet_is_read_without_pyarrow_by_default(tmp_path, corpus):
    d, _ = corpus
    script = (
        "import sys\n"
        "from bpeforge import cli\n"
        f"code = cli.main(['train', {str(d / 'docs.parquet')!r}, '--vocab-size', '300', '-o', {str(tmp_path / 'tok')!r}, '-q'])\n"
        "print(code, 'pyarrow' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "False"]


@pytest.mark.parametrize("chosen", [None, "mimalloc", ""])
def test_parquet_is_read_with_the_system_allocator_unless_one_is_chosen(tmp_path, corpus, chosen):
    # pyarrow's default allocator keeps freed blocks, which raises the peak RSS of reading Parquet
    # batch by batch; the command line picks the system allocator for its own process, unless
    # ARROW_DEFAULT_MEMORY_POOL chooses one (set but empty chooses none). pyarrow picks it once, so
    # this runs in a fresh process.
    d, _ = corpus
    script = (
        "import os\n"
        "from bpeforge import cli\n"
        f"code = cli.main(['train', {str(d / 'docs.parquet')!r}, '--parquet-reader', 'pyarrow', '--vocab-size', '300', '-o', {str(tmp_path / 'tok')!r}, '-q'])\n"
        "import pyarrow\n"
        "print(code, pyarrow.default_memory_pool().backend_name, repr(os.environ.get('ARROW_DEFAULT_MEMORY_POOL')))\n"
    )
    env = dict(ENV)
    env.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    if chosen is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = chosen
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    code, backend, left = r.stdout.split()
    assert code == "0"
    assert backend == (chosen or "system")
    assert left == repr(chosen)  # the variable is left as it was


def test_stdin(tmp_path, corpus):
    d, docs = corpus
    r = run("train", "-", "--vocab-size", 400, "-o", tmp_path / "tok", input=(d / "docs.txt").read_text())
    assert r.returncode == 0, r.stderr
    assert report_int(r.stdout, "documents") == len(docs) - 20


# ------------------------------------------------------------------------------ options


def test_doc_separator_cap_max_chars_and_options(tmp_path):
    paras = [f"paragraph {i}\nhas two lines" for i in range(150)]
    (tmp_path / "p.txt").write_text("\n\n".join(paras) + "\n")
    r = run("train", tmp_path / "p.txt", "--doc-separator", r"\n\n", "--vocab-size", 300, "-o", tmp_path / "a", "--holdout", 0)
    assert r.returncode == 0, r.stderr
    assert report_int(r.stdout, "documents") == 150
    r = run("train", tmp_path / "p.txt", "--doc-separator", "", "--vocab-size", 300, "-o", tmp_path / "b")
    assert report_int(r.stdout, "documents") == 1  # the whole file
    assert "not held out: fewer than 100 documents" in r.stdout
    r = run("train", tmp_path / "p.txt", "--vocab-size", 300, "-o", tmp_path / "c", "--doc-cap", 5, "--holdout", 0)
    assert report_int(r.stdout, "documents") == 300 and report_int(r.stdout, "characters") == 300 * 5
    r = run("train", tmp_path / "p.txt", "--vocab-size", 300, "-o", tmp_path / "d", "--max-chars", 1234, "--holdout", 0)
    assert report_int(r.stdout, "characters") == 1234 and "(stopped at --max-chars)" in r.stdout
    r = run(
        "train", tmp_path / "p.txt", "--vocab-size", 300, "-o", tmp_path / "e", "--pattern", "nanochat",
        "--special-tokens", "<|bos|>,<|eos|>", "--threads", 1, "--min-frequency", 2,
    )
    assert r.returncode == 0, r.stderr
    tok = bpeforge.Tokenizer.load(tmp_path / "e")
    assert tok.special_tokens == {"<|bos|>": tok.n_vocab - 2, "<|eos|>": tok.n_vocab - 1}
    assert tok.pattern == bpeforge.PATTERNS["nanochat"]
    assert report_value(r.stdout, "pattern") == "nanochat"
    r = run("train", tmp_path / "p.txt", "--vocab-size", 300, "-o", tmp_path / "f", "--pattern", r"\w+|\s+|[^\w\s]+", "--special-tokens", "none")
    assert r.returncode == 0, r.stderr
    assert bpeforge.Tokenizer.load(tmp_path / "f").special_tokens == {}


def test_stopping_early_is_a_warning(tmp_path):
    (tmp_path / "tiny.txt").write_text("ab ab ab\n")
    r = run("train", tmp_path / "tiny.txt", "--vocab-size", 1000, "-o", tmp_path / "tok")
    assert r.returncode == 0
    assert r.stderr.startswith("bpeforge: warning: training stopped at 258 ranks of the 991 asked for (no pair is left)")
    assert bpeforge.Tokenizer.load(tmp_path / "tok").n_vocab == 258 + 9


def test_default_input_is_the_stdlib(tmp_path):
    r = run("train", "-o", tmp_path / "demo", "--max-chars", 200_000, "--vocab-size", 1000)
    assert r.returncode == 0, r.stderr
    assert "standard library" in r.stderr  # says so even without -v
    assert report_value(r.stdout, "corpus").startswith(f"the Python {sys.version.split()[0]} standard library")
    assert report_int(r.stdout, "characters") <= 200_000
    tok = check_saved(tmp_path / "demo", "def main(argv=None):\n    return 0\n")
    assert tok.n_vocab == 1000
    r2 = run("train", "-o", tmp_path / "demo2", "--max-chars", 200_000, "--vocab-size", 1000)
    assert bpeforge.Tokenizer.load(tmp_path / "demo2").mergeable_ranks == tok.mergeable_ranks  # deterministic


def test_quiet(corpus, tmp_path):
    d, _ = corpus
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "tok", "-q")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = run("train", "-o", tmp_path / "std", "-q", "--max-chars", 1000, "--vocab-size", 300)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


# ------------------------------------------------------------------------------ progress


def test_verbose_progress_lines(corpus, tmp_path):
    d, _ = corpus
    r = run("train", d / "docs.txt", d / "docs.parquet", "--vocab-size", 800, "-o", tmp_path / "tok", "-v")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == "Training on 2 files (parquet, text)"
    assert lines[1].endswith("docs.txt") and lines[2].endswith("docs.parquet")
    # The documents counted: 4,000 read, less the 40 held out (every 100th) to measure compression on.
    assert any(re.match(r"Read 3,960 documents, [\d.]+ MB in [\d.]+ s \([\d.,]+ MB/s\); [\d,]+\+ distinct spans", l) for l in lines)
    merges = 800 - 256 - 9
    assert f"Starting BPE training: {merges} merges to compute" in lines
    progress = [PROGRESS_LINE.match(l) for l in lines if l.startswith("Progress:")]
    assert all(progress) and len(progress) == 100
    pcts = [int(m.group(1)) for m in progress]
    assert pcts == list(range(1, 101))
    for m in progress:
        pct, done, total = int(m.group(1)), int(m.group(2)), int(m.group(3))
        assert total == merges and done * 100 // total == pct
        assert int(m.group(6)) == 255 + done  # the token of merge number `done`
    assert int(progress[0].group(7)) >= int(progress[-1].group(7))  # counts fall as merges go by
    assert lines[-1].startswith(f"Finished training: {merges} merges")
    assert "Progress" not in r.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("verbose", [False, True])
def test_bars_on_a_terminal(corpus, tmp_path, verbose):
    """On a terminal: bars; the per-percent lines of a merge loop this quick only with -v."""
    import fcntl
    import pty
    import struct
    import termios

    d, _ = corpus
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    p = subprocess.Popen(
        [sys.executable, "-m", "bpeforge", "train", str(d / "docs.txt"), "--vocab-size", "800", "-o", str(tmp_path / "tok")]
        + ["-v"] * verbose,
        stdout=subprocess.PIPE, stderr=slave, env=ENV,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout = p.communicate(timeout=60)[0].decode()
    os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert p.returncode == 0
    assert re.search(r"Reading: [\d.]+k?B \[", err) and "docs]" in err
    assert re.search(r"Merging: +\d+%\|.*\| \d+/535 ", err)
    assert "Starting BPE training: 535 merges to compute" in err and "Finished training: 535 merges" in err
    assert len(re.findall(r"Progress: \d+% \(\d+/535 merges\)", err)) == (100 if verbose else 0)
    assert "first merges" in stdout


# ------------------------------------------------------------------------------ errors


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "not.parquet").write_bytes(b"PAR1 but not really parquet")
    pq.write_table(pa.table({"body": ["x", "y"]}), d / "nocol.parquet")
    (d / "nofield.jsonl").write_text('{"body": "x"}\n')
    (d / "broken.jsonl").write_text('{"text": "fine"}\n{"text": "fine"}\n{"text": "unterminated\n{"text": "fine"}\n')
    (d / "notes.md").write_text("x")
    # Line 2 holds the UTF-8 encoding of the surrogate U+D800, line 3 a lone "\ud800" escape.
    (d / "surrogate.jsonl").write_bytes(b'{"text": "fine"}\n{"text": "a\xed\xa0\x80b"}\n{"text": "lone \\ud800"}\n{"text": "fine"}\n')
    (d / "ok.txt").write_text("hello world\n" * 10)
    (d / "aaa.txt").write_text("a" * 40 + "c\n")
    (d / "existing").mkdir()
    (d / "existing" / "tokenizer.json").write_text("{}")
    (d / "precious").mkdir()
    (d / "precious" / "thesis.tex").write_text("do not delete")
    # A HuggingFace model folder: a tokenizer.json (not bpeforge's) beside the weights.
    (d / "hf-model").mkdir()
    (d / "hf-model" / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    (d / "hf-model" / "model.safetensors").write_bytes(b"weights")
    # Only a tokenizer.json, but another tool's.
    (d / "hf-tokenizer").mkdir()
    (d / "hf-tokenizer" / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "BPE"}}')
    return d


ERROR_CASES = {
    "missing file": (["nope.txt"], ["nope.txt: no such file or folder"]),
    "glob without match": (["nothing-*.txt"], ["no file matches"]),
    "unreadable parquet": (["{bad}/not.parquet"], ["not.parquet: not a readable Parquet file"]),
    "parquet column": (["{bad}/nocol.parquet"], ["nocol.parquet: no column 'text' (columns: body)"]),
    "jsonl field": (["{bad}/nofield.jsonl"], ["nofield.jsonl:1: no 'text' field (fields: body)"]),
    "malformed jsonl": (["{bad}/broken.jsonl"], ["broken.jsonl:3: not valid JSON", "--skip-bad-lines"]),
    "unknown extension": (["{bad}/notes.md"], ["notes.md: cannot tell the format", "--input-format"]),
    "existing output": (["{bad}/ok.txt", "-o", "{bad}/existing"], ["already exists (use --force"]),
    # Found before training, not after it.
    "output under a file": (["{bad}/ok.txt", "-o", "{bad}/ok.txt/sub/tok"], ["cannot write the output", "ok.txt is not a folder"]),
    "not a tokenizer folder": (["{bad}/ok.txt", "-o", "{bad}/precious", "--force"], ["holds something other than a tokenizer bpeforge saved"]),
    "model folder": (["{bad}/ok.txt", "-o", "{bad}/hf-model", "--force"], ["hf-model exists and holds something other than a tokenizer"]),
    "foreign tokenizer": (["{bad}/ok.txt", "-o", "{bad}/hf-tokenizer", "--force"], ["hf-tokenizer exists and holds something other than"]),
    "bad preset": (["{bad}/ok.txt", "--pattern", "gtp4"], ["--pattern: 'gtp4': no such preset", "cl100k_base"]),
    "bad regex": (["{bad}/ok.txt", "--pattern", "(unclosed"], ["--pattern: invalid split pattern"]),
    # Checked before the inputs are even looked at (nope.txt does not exist).
    "bad regex matching empty": (["nope.txt", "--pattern", r"a*|\S+|\s+"], ["--pattern: ", "can match an empty string"]),
    "invalid utf-8 jsonl": (["{bad}/surrogate.jsonl"], ["surrogate.jsonl:2: not valid UTF-8", "--skip-bad-lines"]),
    # The trainer's own rule on threads, named by the flag.
    "bad threads": (["nope.txt", "--threads", "5000"], ["--threads must be between 1 and 1024, got 5000"]),
    "bad threads digits": (["{bad}/ok.txt", "--threads", "9" * 5000], ["argument --threads: must be at most 9223372036854775807, got a 5,000-digit number"]),
    "bad min-frequency float": (["{bad}/ok.txt", "--min-frequency", "1e20"], ["argument --min-frequency: must be an integer, got '1e20'"]),
    "bad min-frequency huge": (
        ["{bad}/ok.txt", "--min-frequency", str(10**20)],
        [f"argument --min-frequency: must be at most 9223372036854775807, got {10**20}"],
    ),
    "bad doc-cap huge": (["{bad}/ok.txt", "--doc-cap", str(10**30)], ["argument --doc-cap: must be at most 9223372036854775807"]),
    "bad max-chars huge": (["{bad}/ok.txt", "--max-chars", str(2**63)], [f"argument --max-chars: must be at most 9223372036854775807, got {2**63}"]),
    # Training's rule on the vocabulary (special tokens included), as the API states it, before any input is read.
    "vocab too large": (["nope.txt", "--vocab-size", "99999999999"], ["--vocab-size must be at least", "at most 2147483648, got 99999999999"]),
    "vocab too small": (["{bad}/ok.txt", "--vocab-size", "260"], ["--vocab-size must be at least 256 + 9 special tokens = 265", "got 260"]),
    "vocab not a number": (["{bad}/ok.txt", "--vocab-size", "lots"], ["--vocab-size: must be an integer, got 'lots'"]),
    "vocab negative": (["{bad}/ok.txt", "--vocab-size", "-5"], ["--vocab-size"]),
    "bad option": (["{bad}/ok.txt", "--vocab-sizes", "300"], ["unrecognized arguments: --vocab-sizes"]),
    "bad format": (["{bad}/ok.txt", "--input-format", "csv"], ["invalid choice: 'csv'"]),
    "duplicate special": (["nope.txt", "--special-tokens", "<|a|>,<|a|>"], ["--special-tokens: special token '<|a|>' is given twice"]),
    # Bytes that are not UTF-8 in an argument (Python reads them as lone surrogates), before any input.
    "bad special not utf-8": (["nope.txt", "--special-tokens", "<|ok|>,a\udcffb"], ["--special-tokens: special token 'a\\udcffb' is not valid UTF-8 text"]),
    # fancy-regex gives up on this pattern and text (its backtracking limit): the user's pattern, not a bug.
    "pattern the regex engine gives up on": (
        ["{bad}/aaa.txt", "--pattern", r"(?:(?:a|aa)+)+(?=b)|\s+|\S"],
        ["the split pattern failed on a text", "backtracking", "simplify --pattern (fewer nested repetitions, lookarounds)"],
    ),
    "bad escape": (["{bad}/ok.txt", "--doc-separator", "\\x4"], ["--doc-separator", "bad backslash escape"]),
    "bad separator not utf-8": (["{bad}/ok.txt", "--doc-separator", "\udcff"], ["--doc-separator '\\udcff': not valid UTF-8 text"]),
    "bad separator surrogate escape": (["{bad}/ok.txt", "--doc-separator", "\\ud800"], ["--doc-separator '\\\\ud800': not valid UTF-8 text"]),
    "empty input": (["{bad}/empty.txt"], ["no documents to train on: the inputs hold no text"]),
    "all held out": (["{bad}/ok.txt", "--holdout", "1"], ["no documents to train on: all 10 were held out", "--holdout 0"]),
    "bad preset regex char": (["{bad}/ok.txt", "--pattern", "gtp 4"], ["--pattern: 'gtp 4': no such preset"]),
    "no output": (["{bad}/ok.txt", "--no-o"], []),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_are_one_line(case, bad_files, tmp_path):
    args, needles = ERROR_CASES[case]
    (bad_files / "empty.txt").write_text("\n\n")
    args = [a.format(bad=bad_files) for a in args]
    if case == "no output":
        args = args[:1]
    elif "-o" not in args:
        args += ["-o", str(tmp_path / "out")]
    r = run("train", *args, cwd=tmp_path)
    assert_one_line_error(r, *needles)
    assert r.returncode == (2 if case.startswith(("bad", "vocab", "duplicate", "no output")) else 1)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.tiktoken").exists()
    assert (bad_files / "precious" / "thesis.tex").exists() and (bad_files / "existing" / "tokenizer.json").read_text() == "{}"
    assert (bad_files / "hf-model" / "model.safetensors").read_bytes() == b"weights"
    assert (bad_files / "hf-tokenizer" / "tokenizer.json").read_text().startswith('{"version"')


def test_a_split_failure_is_recognized_by_the_cores_message():
    # The command line tells a pattern the regex engine gave up on by how the error begins.
    with pytest.raises(RuntimeError) as e:
        bpeforge.split("a" * 40 + "c", r"(?:(?:a|aa)+)+(?=b)|\s+|\S")
    assert str(e.value).startswith(SPLIT_FAILED)


def test_a_file_reached_twice_is_read_once_with_a_note(corpus, tmp_path):
    d, docs = corpus
    (tmp_path / "in").mkdir()
    shutil.copy(d / "docs.txt", tmp_path / "in" / "a.txt")
    (tmp_path / "in" / "latest.txt").symlink_to(tmp_path / "in" / "a.txt")
    r = run("train", tmp_path / "in", tmp_path / "in" / "a.txt", "-o", tmp_path / "tok", "--vocab-size", 300, "--holdout", 0)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"bpeforge: note: {tmp_path / 'in' / 'latest.txt'} is the file {tmp_path / 'in' / 'a.txt'}, read once (and 1 more)\n"
    assert report_int(r.stdout, "documents") == len(docs)
    assert "1 file (text)" in report_value(r.stdout, "corpus")


def test_closed_standard_streams(corpus, tmp_path):
    d, _ = corpus
    # Standard output closed: training and saving still succeed; the report has nowhere to go.
    r = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", str(d / "docs.txt"), "-o", str(tmp_path / "tok"), "--vocab-size", "300"],
        preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE, text=True, env=ENV, timeout=120,
    )
    assert (r.returncode, r.stderr) == (0, "")
    check_saved(tmp_path / "tok")
    # Standard input closed and `-` given: an input error, nothing written.
    r = subprocess.run(
        [sys.executable, "-m", "bpeforge", "train", "-", "-o", str(tmp_path / "stdin")],
        preexec_fn=lambda: os.close(0), capture_output=True, text=True, env=ENV, timeout=120,
    )
    assert_one_line_error(r, "-: standard input is closed")
    assert no_outputs_in(tmp_path) == ["tok", "tok.tiktoken"]


def test_skip_bad_lines(bad_files, tmp_path):
    r = run("train", bad_files / "broken.jsonl", "--skip-bad-lines", "--vocab-size", 262, "--special-tokens", "none", "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert "bpeforge: warning: skipped 1 bad line, e.g. " in r.stderr and "broken.jsonl:3: not valid JSON" in r.stderr
    assert report_int(r.stdout, "documents") == 3


def test_skip_bad_lines_skips_invalid_utf8_and_lone_surrogates(bad_files, tmp_path):
    r = run("train", bad_files / "surrogate.jsonl", "--skip-bad-lines", "--vocab-size", 258, "--special-tokens", "none", "-o", tmp_path / "tok")
    assert r.returncode == 0, r.stderr
    assert "bpeforge: warning: skipped 2 bad lines, e.g. " in r.stderr and "surrogate.jsonl:2: not valid UTF-8" in r.stderr
    assert report_int(r.stdout, "documents") == 2


def test_numeric_option_bounds(tmp_path, capsys):
    parser = cli.build_parser()
    top = ["--vocab-size", str(2**31), "--threads", "1024", "--min-frequency", str(2**63 - 1), "--doc-cap", str(2**63 - 1)]
    top += ["--max-chars", str(2**63 - 1), "--holdout", str(2**63 - 1)]
    args = parser.parse_args(["train", "-o", "x", *top])
    assert (args.vocab_size, args.threads, args.min_frequency) == (2**31, 1024, 2**63 - 1)
    assert (args.doc_cap, args.max_chars, args.holdout) == (2**63 - 1, 2**63 - 1, 2**63 - 1)
    for option, value in [("--min-frequency", 2**63), ("--doc-cap", 2**63), ("--max-chars", 2**63), ("--holdout", 2**63)]:
        with pytest.raises(cli.CLIError) as e:
            parser.parse_args(["train", "-o", "x", option, str(value)])
        assert e.value.code == 2 and f"argument {option}: must be at most {value - 1}, got {value}" in str(e.value)
    # The largest vocabulary and thread count are training's and the trainer's rules, checked
    # before any input is read (nope.txt does not exist), and named by the flag.
    for option, value, message in [
        ("--vocab-size", 2**31 + 1, "must be at least 256 + 0 special tokens = 256 and at most 2147483648, got 2147483649"),
        ("--threads", 1025, "must be between 1 and 1024, got 1025"),
    ]:
        argv = ["train", "nope.txt", "-o", str(tmp_path / "tok"), "--special-tokens", "none", option, str(value)]
        assert cli.main(argv) == 2
        assert capsys.readouterr().err == f"bpeforge: error: {option} {message}\n"
    assert not (tmp_path / "tok").exists()


# ------------------------------------------------------------------------------ Ctrl-C


def test_default_corpus_skips_stdlib_files_that_are_not_utf8(tmp_path, monkeypatch, capsys):
    # CPython's test suite holds a few deliberately non-UTF-8 sources (test_source_encoding.py,
    # encoded_modules/module_iso_8859_1.py, ...): the default corpus must still train.
    from bpeforge import _inputs as inputs

    root = tmp_path / "lib"
    root.mkdir()
    (root / "a.py").write_text("def main():\n    return 0\n" * 20)
    (root / "latin1.py").write_bytes("# -*- coding: latin-1 -*-\ns = 'café'\n".encode("latin-1"))
    sources = [inputs.Source(root / n, "text", None) for n in ("a.py", "latin1.py")]
    monkeypatch.setattr(inputs, "stdlib_sources", lambda: (root, sources))
    assert cli.main(["train", "-o", str(tmp_path / "tok"), "--vocab-size", "300", "--special-tokens", "none"]) == 0
    out, err = capsys.readouterr()
    assert "skipped" not in err and "UTF-8" not in err and report_int(out, "documents") == 1
    # The report still accounts for the file left out (no warning: it is the default corpus).
    assert report_value(out, "documents") == "1 (skipped: 1 text document that is not UTF-8)"
    assert "one document per file, empty ones skipped" in report_value(out, "corpus")


def test_cli_parquet_matches_jsonl_with_doc_cap_and_max_chars(tmp_path):
    """`bpeforge train` reads Parquet as Arrow arrays and JSONL as str: same report figures, same
    held-out slice, same ranks, with cropping and a --max-chars stop in the middle of a batch."""
    import json
    import subprocess
    import sys

    docs = [f"document {i}: " + "naïve 東京 text " * (i % 17) if i % 11 else "" for i in range(4000)]
    pq.write_table(pa.table({"text": [d if i % 13 else None for i, d in enumerate(docs)]}), tmp_path / "d.parquet", row_group_size=900)
    with open(tmp_path / "d.jsonl", "w", encoding="utf-8") as f:
        for i, d in enumerate(docs):
            f.write(json.dumps({"text": d if i % 13 else None}) + "\n")
    reports = {}
    for name in ("d.parquet", "d.jsonl"):
        out = tmp_path / f"out-{name}"
        args = ["train", str(tmp_path / name), "--vocab-size", "600", "-o", str(out), "--doc-cap", "40", "--max-chars", "70000"]
        r = subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        rows = [line for line in r.stdout.splitlines() if line.split(" ")[0] in ("corpus", "documents", "characters", "bytes", "compression")]
        rows = [line.replace("(parquet)", "(FORMAT)").replace("(jsonl)", "(FORMAT)") for line in rows]
        reports[name] = (rows, (out / "tokenizer.tiktoken").read_bytes())
    assert reports["d.parquet"] == reports["d.jsonl"]
    assert "(stopped at --max-chars)" in reports["d.jsonl"][0][0]
    assert any(re.fullmatch(r"documents\s+1,834 \(\+ 18 held out\)", line) for line in reports["d.jsonl"][0])


@pytest.mark.slow
def test_the_command_line_and_the_api_agree_on_a_real_corpus(tmp_path):
    """On a real corpus (kernel-docs.txt from BPEFORGE_CORPUS_DIR; skipped when unset), `bpeforge
    train --holdout 0` and Tokenizer.train_from_iterator on the same documents (one per line,
    empty ones skipped, CRLF read as LF) give the same ranks."""
    folder = os.environ.get("BPEFORGE_CORPUS_DIR")
    if not folder:
        pytest.skip("set BPEFORGE_CORPUS_DIR to a folder holding kernel-docs.txt")
    path = Path(folder) / "kernel-docs.txt"
    if not path.is_file():
        pytest.skip(f"{path} is missing")
    r = run("train", path, "--vocab-size", 8192, "--holdout", 0, "-o", tmp_path / "tok", "-q", timeout=1200)
    assert r.returncode == 0, r.stderr
    text = path.read_bytes().decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    expected = bpeforge.Tokenizer.train_from_iterator([d for d in text.split("\n") if d], 8192)
    assert bpeforge.Tokenizer.load(tmp_path / "tok").mergeable_ranks == expected.mergeable_ranks
