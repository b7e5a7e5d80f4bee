"""Out of memory in the compiled core is a MemoryError naming the stage and the block asked for,
not an abort of the interpreter, and the trainer keeps its previous state. Run in a child
process whose address space is limited (RLIMIT_AS) to a little more than it holds: a text of
one long span (a run of ``ab``) makes each stage ask for one block of its size or more, so the
stage that fails depends only on the room left."""

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

# A child that limits its address space to what it holds + argv[1] MB once `setup` has run (and the
# pool's threads started), then runs `work`; argv[2] is a path for them.
LIMITED = r"""
import resource, sys
import bpeforge, bpeforge.cli, bpeforge._core as core

room = int(sys.argv[1]) << 20
path = sys.argv[2]
bpeforge.Trainer().train_from_iterator(["hello world"] * 3, 260)  # the pool's threads started
{setup}
size = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) << 10
resource.setrlimit(resource.RLIMIT_AS, (size + room, resource.RLIM_INFINITY))
{work}
"""


def limited(room_mb: int, path, work: str, setup: str = "") -> subprocess.CompletedProcess:
    code = LIMITED.format(setup=setup, work=work)
    return subprocess.run([sys.executable, "-c", code, str(room_mb), str(path)], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
@pytest.mark.parametrize(
    "room_mb, stage",
    [
        (10, "counting spans"),  # the span's copy in the counting table
        (50, "building the span table"),  # the spans as token ids
        (70, "adding a token to the vocabulary"),  # the tokens' bytes: runs of 2^k bytes
    ],
)
def test_out_of_memory_is_a_memory_error_naming_the_stage(room_mb, stage, tmp_path):
    setup = """
t = bpeforge.Trainer()
t.train_from_iterator(["hello world, hello there"] * 3, 260)  # a state to keep
before = t.get_merges()
text = "ab" * (10 << 20)  # 20 MB, one span
"""
    work = """
try:
    t.train_from_iterator([text], 300)
    print("trained")
except MemoryError as e:
    print(e)
assert t.get_merges() == before, "the trainer's state changed"
t.train_from_iterator(["the trainer still works"], 258)
"""
    child = limited(room_mb, tmp_path, work, setup)
    assert child.returncode == 0, child.stderr[-2000:]
    message = child.stdout.strip()
    assert message.startswith(f"out of memory while {stage}"), message
    assert "a block of" in message and "bytes) could not be allocated" in message, message


@pytest.fixture(scope="module")
def one_long_document(tmp_path_factory):
    """A text file and a JSONL file each holding one document of 20 MB, one span."""
    folder = tmp_path_factory.mktemp("long")
    text = "ab" * (10 << 20)
    (folder / "long.txt").write_text(text)
    (folder / "long.jsonl").write_text('{"text": "' + text + '"}\n')
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
@pytest.mark.parametrize("name", ["long.txt", "long.jsonl"])
def test_the_command_line_reading_a_long_document_out_of_memory_says_so_in_one_line(one_long_document, name, tmp_path):
    """The reader's buffer holds a document whole: it grows by fallible reservation, so a
    document larger than the memory left is one line naming the file and the block, exit 1,
    nothing written."""
    out = tmp_path / "out"
    work = f"sys.exit(bpeforge.cli.main(['train', path, '--vocab-size', '300', '-o', {str(out)!r}]))"
    child = limited(5, one_long_document / name, work)
    assert child.returncode == 1, child.stderr[-2000:]
    lines = child.stderr.strip().splitlines()
    assert len(lines) == 1, child.stderr[-2000:]
    assert lines[0].startswith(f"bpeforge: error: out of memory while reading {one_long_document / name}: a block of"), lines[0]
    assert not out.exists() and not out.with_suffix(".tiktoken").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
def test_a_reader_iterated_out_of_memory_raises_memory_error(one_long_document):
    """Iterating a reader from Python: its buffer, or the batch handed over, cannot grow; the
    reader then stops (it does not go on without the document it could not hold)."""
    work = """
reader = bpeforge.TextReader(path)
try:
    batches = list(reader)
    print("read", len(batches))
except MemoryError as e:
    print(e)
print("after:", list(reader))
"""
    child = limited(5, one_long_document / "long.txt", work)
    assert child.returncode == 0, child.stderr[-2000:]
    first, after = child.stdout.strip().splitlines()
    assert first.startswith(f"out of memory while reading {one_long_document / 'long.txt'}: a "), child.stdout
    assert after == "after: []", child.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
def test_encoding_a_long_span_out_of_memory_is_a_memory_error(tmp_path):
    """Measuring compression (the report, eval) merges a long span's parts in arrays of its
    length: reserved fallibly, so the report says it could not measure instead of the process
    ending after the tokenizer was saved."""
    setup = """
ranks = [(bytes([i]), i) for i in range(256)] + [(b"ab", 256)]
encoder = core.Encoder(ranks, "gpt4")
text = "abc" * (2 << 20)  # 6 MB, one span: 48 MB of parts
before = encoder.count(["abab, it still works"])
"""
    work = """
try:
    print(encoder.count([text]))
except MemoryError as e:
    print(e)
print(encoder.count(["abab, it still works"]) == before == (18, 20))
"""
    child = limited(10, tmp_path, work, setup)
    assert child.returncode == 0, child.stderr[-2000:]
    first, second = child.stdout.strip().splitlines()
    assert first.startswith("out of memory while encoding a long span"), first
    assert second == "True", second


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
def test_a_tokenizer_json_too_large_for_the_memory_left_is_a_memory_error(tmp_path):
    """The import reads the vocabulary and merges into arrays that grow by fallible reservation:
    a vocabulary entry of 16 MB with a few MB of room is a MemoryError naming the stage."""
    import json

    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "BPE", "vocab": {"a" * (16 << 20): 0}, "merges": []}}))
    work = """
try:
    bpeforge.Tokenizer.from_huggingface(path)
    print("read")
except MemoryError as e:
    print(e)
"""
    child = limited(20, path, work)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.startswith("out of memory while reading the tokenizer.json's vocabulary and merges: a block of"), child.stdout
