"""Out of memory in the compiled core is a MemoryError naming the stage and the block asked for,
not an abort of the interpreter, and the trainer keeps its previous state. Run in a child
process whose address space is limited (RLIMIT_AS) to a little more than it holds: a text of
one long span (a run of ``ab``) makes each stage ask for one block of its size or more, so the
stage that fails depends only on the room left."""

import subprocess
import sys

import pytest

resource = pytest.importorskip("resource")

CHILD = r"""
import resource, sys
import bpeforge

room = int(sys.argv[1]) << 20
t = bpeforge.Trainer()
t.train_from_iterator(["hello world, hello there"] * 3, 260)  # the pool's threads started, a state to keep
before = t.get_merges()
text = "ab" * (10 << 20)  # 20 MB, one span
size = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) << 10
resource.setrlimit(resource.RLIMIT_AS, (size + room, resource.RLIM_INFINITY))
try:
    t.train_from_iterator([text], 300)
    print("trained")
except MemoryError as e:
    print(e)
assert t.get_merges() == before, "the trainer's state changed"
t.train_from_iterator(["the trainer still works"], 258)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status")
@pytest.mark.parametrize(
    "room_mb, stage",
    [
        (10, "counting spans"),  # the span's copy in the counting table
        (50, "building the span table"),  # the spans as token ids
        (70, "adding a token to the vocabulary"),  # the tokens' bytes: runs of 2^k bytes
    ],
)
def test_out_of_memory_is_a_memory_error_naming_the_stage(room_mb, stage):
    child = subprocess.run([sys.executable, "-c", CHILD, str(room_mb)], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    message = child.stdout.strip()
    assert message.startswith(f"out of memory while {stage}"), message
    assert "a block of" in message and "bytes) could not be allocated" in message, message
