"""Robustness: no panic reaches Python, Ctrl-C stops training, threads, hostile inputs, big counts."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import bpeforge
import reference


def run_and_interrupt(script, wait_for, timeout=60):
    """Starts `script`, sends SIGINT once it prints `wait_for`, returns (stdout lines, seconds
    from the signal to the process printing 'interrupted')."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        lines.append(line.strip())
        if line.strip() == wait_for:
            break
        assert time.monotonic() < deadline, "the script never got going"
    proc.send_signal(2)
    sent = time.monotonic()
    reaction = None
    for line in proc.stdout:
        lines.append(line.strip())
        if line.strip() == "interrupted":
            reaction = time.monotonic() - sent
    proc.wait(timeout=timeout)
    assert proc.returncode == 0, proc.stderr.read()
    return lines, reaction


def interrupt_training(setup, call, wait_for, within):
    """Runs `setup` (which makes a trainer `t`), then the training `call`, in a child; sends
    SIGINT once the child prints `wait_for`. The training must stop with KeyboardInterrupt
    within `within` seconds of the signal and leave the trainer as it was (never trained)."""
    tail = f"""
        try:
            {call}
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print("size", t.vocab_size, flush=True)
        """
    lines, reaction = run_and_interrupt(textwrap.dedent(setup) + textwrap.dedent(tail), wait_for)
    assert "finished" not in lines, "training finished before the signal: make it longer"
    assert reaction is not None and reaction < within, lines
    assert lines[-1] == "size 256", "an interrupted training must leave the trainer as it was"


def test_ctrl_c_while_counting_stops_quickly_and_trainer_stays_usable():
    lines, reaction = run_and_interrupt(
        """
        import itertools, bpeforge
        def endless():
            for i in itertools.count():
                if i == 50_000:
                    print("counting", flush=True)
                yield f"document {i} has words, numbers {i * 7} and more words"
        t = bpeforge.Trainer()
        try:
            t.train_from_iterator(endless(), 50_000)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        t.train_from_iterator(["abc abc abc"], 258)
        print("reused", [bytes(b) for b, _ in t.get_mergeable_ranks()[256:]], flush=True)
        """,
        "counting",
    )
    assert reaction is not None and reaction < 1.5, lines
    assert lines[-1] == "reused [b'ab', b'abc']"


@pytest.mark.parametrize(
    "setup, call",
    [
        # One item that is a list of a gigabyte of text (one str, repeated): it is read without
        # returning to the iterator loop.
        ("texts = [('word ' * 100 + '\\n') * 2] * 1_000_000", "t.train_from_iterator([texts], 50_000)"),
        # Millions of counts, read from a dict before any merge.
        ("counts = {f'span{i}': i for i in range(3_000_000)}", "t.train_from_counts(counts, 50_000)"),
    ],
    ids=["one-huge-list", "many-counts"],
)
def test_ctrl_c_inside_one_long_read_stops_quickly(setup, call):
    interrupt_training(
        f"""
        import bpeforge
        {setup}
        t = bpeforge.Trainer()
        """,
        # The mark is printed inside the try, so that the signal never lands before it.
        f'print("reading", flush=True); {call}',
        "reading",
        within=1.0,
    )


@pytest.mark.parametrize("phase", ["count", "merge", "iterator"])
def test_interpreter_exit_while_a_daemon_thread_trains(phase):
    """The main thread ends while a daemon thread trains (in the iterator, counting or merging).
    Python's finalization ends such threads when they take the GIL again, which unwound through
    the extension and aborted the process; it must exit normally."""
    script = textwrap.dedent(
        f"""
        import gc, threading, time, bpeforge
        texts = [f"doc {{i}} word{{i % 977}} other{{i % 131}}" for i in range(20000)]
        started = threading.Event()
        def progress(phase, info):
            if phase == "{phase}":
                started.set()
                time.sleep(0.2)
        def gen():
            for i, x in enumerate(texts):
                if "{phase}" == "iterator" and i == 1000:
                    started.set()
                    time.sleep(0.2)
                yield x
        threading.Thread(target=lambda: bpeforge.Trainer().train_from_iterator(gen(), 1000, progress=progress), daemon=True).start()
        started.wait()
        class SlowToCollect:  # finalization takes a moment, as with many modules loaded
            def __del__(self, sleep=time.sleep):
                sleep(0.5)
        gc.disable()
        a = SlowToCollect()
        a.self = a
        del a
        print("main thread done", flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (0, "main thread done\n"), out.stderr[-2000:]
    assert "Fatal" not in out.stderr and "FATAL" not in out.stderr, out.stderr[-2000:]


def test_training_in_a_later_atexit_hook_still_runs():
    """bpeforge's exit hook stops trainings of daemon threads, not one that the exiting thread
    itself runs in a hook registered earlier (so run later): that one must finish, not hang."""
    script = textwrap.dedent(
        """
        import atexit
        def train_at_exit():
            import bpeforge
            t = bpeforge.Trainer()
            t.train_from_iterator(["hello world"] * 1000, 260, progress=lambda phase, info: None)
            t.train_from_counts({"hello": 5, "world": 3}, 260)
            print("trained at exit", t.vocab_size, flush=True)
        atexit.register(train_at_exit)
        import bpeforge  # registers its hook after ours: it runs first
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "trained at exit 260\n"), out.stderr[-2000:]


def exits_within(script, seconds):
    """Runs `script`; returns (stdout, seconds it took), failing if it did not exit cleanly."""
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert out.returncode == 0 and "Fatal" not in out.stderr, out.stderr[-2000:]
    assert took < seconds, f"took {took:.1f} s: {out.stdout}"
    return out.stdout


def test_exit_hook_does_not_hold_up_a_later_hook_that_waits_for_a_training():
    """A daemon thread trains while holding a lock that a later atexit hook takes: the training
    pauses at exit, but only for a moment, so the hook gets the lock and the process exits."""
    out = exits_within(
        """
        import atexit, random, threading, time
        lock = threading.Lock()
        def save():
            with lock:
                print("hook: saved", flush=True)
        atexit.register(save)  # before bpeforge registers its hook: runs after it
        import bpeforge
        rng = random.Random(0)
        counts = {bytes(rng.randrange(256) for _ in range(30)): rng.randrange(1, 50) for _ in range(100_000)}
        started = threading.Event()
        def run():
            with lock:
                started.set()
                bpeforge.Trainer().train_from_counts(counts, 20_000)
        threading.Thread(target=run, daemon=True).start()
        started.wait()
        time.sleep(0.2)
        """,
        60,
    )
    assert out == "hook: saved\n"


@pytest.mark.parametrize("case", ["nested", "two-threads"])
def test_exit_while_daemon_threads_train_in_odd_ways(case):
    """A training nested in another's progress callback (one thread, two trainings), or two
    daemon threads of which one is stuck in its iterator while the other trains in a loop: the
    process exits normally (both aborted: the hook counted the nested thread twice, or waited for
    the stuck one while the other had gone on)."""
    exits_within(
        f"""
        import threading, time, bpeforge
        texts = [f"doc {{i}} word{{i % 977}} other{{i % 131}} x{{i % 7919}}" for i in range(300_000)]
        def busy(phase, info):
            sum(range(20_000))
        def nested(phase, info):
            busy(phase, info)
            while True:
                bpeforge.Trainer().train_from_iterator([texts], 5000, progress=busy)
        def stuck():
            while True:
                yield "some text"
                time.sleep(5)
        if "{case}" == "nested":
            work = [lambda: bpeforge.Trainer().train_from_iterator(["a b c d e f g"] * 1000, 300, progress=nested)]
        else:
            def loop():
                while True:
                    bpeforge.Trainer().train_from_iterator([texts], 5000, progress=busy)
            work = [lambda: bpeforge.Trainer().train_from_iterator(stuck(), 300), loop]
        for w in work:
            threading.Thread(target=w, daemon=True).start()
        time.sleep(0.7)
        """,
        30,
    )


def test_a_forked_child_exits_at_once_while_the_parent_trains():
    """The exit hook of a child forked while another thread of the parent trains has no training
    of its own to wait for."""
    out = exits_within(
        """
        import os, random, sys, threading, time
        import bpeforge
        rng = random.Random(0)
        counts = {bytes(rng.randrange(256) for _ in range(30)): rng.randrange(1, 50) for _ in range(100_000)}
        started = threading.Event()
        th = threading.Thread(target=lambda: bpeforge.Trainer().train_from_counts(counts, 30_000, progress=lambda p, i: started.set()))
        th.start()
        started.wait()
        child = os.fork()
        if child == 0:
            sys.exit(0)
        since = time.monotonic()
        os.waitpid(child, 0)
        print("child exited in under a second:", time.monotonic() - since < 1, flush=True)
        th.join()
        """,
        120,
    )
    assert out == "child exited in under a second: True\n"


def test_merge_progress_runs_on_the_callers_thread_in_its_context():
    """The progress callback sees the caller's thread, context variables and thread-locals in
    both phases (the merge loop's reports were made from one of its own threads)."""
    import contextvars

    var = contextvars.ContextVar("run")
    var.set("mine")
    local = threading.local()
    local.x = 1
    seen = set()

    def progress(phase, info):
        seen.add((phase, threading.get_ident(), var.get("unset"), getattr(local, "x", "unset")))

    t = bpeforge.Trainer()
    t.train_from_iterator(CORPUS, 600, progress=progress)
    me = threading.get_ident()
    assert seen == {("count", me, "mine", 1), ("merge", me, "mine", 1)}


@pytest.mark.parametrize("threads", [None, 2])
def test_ctrl_c_while_merging_stops_quickly(threads):
    interrupt_training(
        """
        import random, bpeforge
        rng = random.Random(0)
        counts = {bytes(rng.randrange(256) for _ in range(40)): rng.randrange(1, 50) for _ in range(100_000)}
        said = []
        def progress(phase, info):
            if phase == "merge" and not said:
                said.append(1)
                print("merging", flush=True)
        t = bpeforge.Trainer(num_threads=THREADS)
        """.replace("THREADS", str(threads)),
        "t.train_from_counts(counts, 3_000_000, progress=progress)",
        "merging",
        within=1.5,
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_training_in_a_forked_child_after_the_parent_trained():
    """A child made by fork() has none of the parent's pool threads: training there, on a
    trainer of its own or on one copied from the parent (and counting tokens with an encoder),
    must start new ones, not wait forever
    for the copied ones (as multiprocessing's "fork" workers would)."""
    script = textwrap.dedent(
        """
        import os, sys, time, bpeforge
        texts = [f"document {i} has words, numbers {i * 7} and more" for i in range(20_000)]
        def train(trainer):
            trainer.train_from_iterator(texts, 400)
            return trainer.get_mergeable_ranks()
        shared, own = bpeforge.Trainer(), bpeforge.Trainer(num_threads=2)
        expected = train(shared)
        assert train(own) == expected
        encoder = bpeforge._core.Encoder(expected, "gpt4")  # counting tokens runs on a pool too
        counted = encoder.count(texts)
        read, write = os.pipe()
        child = os.fork()
        if child == 0:
            results = [train(shared), train(own), train(bpeforge.Trainer()), train(bpeforge.Trainer(num_threads=3))]
            same = all(r == expected for r in results) and encoder.count(texts) == counted
            os.write(write, b"same" if same else b"different")
            os._exit(0)
        deadline = time.monotonic() + 60
        while os.waitpid(child, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(child, 9)
                print("the child hung")
                sys.exit(0)
            time.sleep(0.05)
        os.close(write)
        print("child:", os.read(read, 100).decode())
        print("parent again:", "same" if train(shared) == expected else "different")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["child: same", "parent again: same"], out.stdout


CORPUS = [f"line {i}: the quick brown fox {i % 13} jumps over the lazy dog {i % 7}\n" for i in range(3000)]


def ranks_of(texts, vocab_size, **kw):
    t = bpeforge.Trainer(**kw)
    t.train_from_iterator(texts, vocab_size)
    return t.get_mergeable_ranks()


def test_two_trainers_in_two_threads_match_one_after_the_other():
    expected = [ranks_of(CORPUS, 700), ranks_of(CORPUS[::-1][:2000], 600, pattern=bpeforge.PATTERNS["gpt2"])]
    results = [None, None]

    def run(i):
        results[i] = (
            ranks_of(CORPUS, 700) if i == 0 else ranks_of(CORPUS[::-1][:2000], 600, pattern=bpeforge.PATTERNS["gpt2"])
        )

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == expected


def test_heavy_work_releases_the_gil():
    # Few, long spans: converting them holds the GIL for microseconds, merging them takes long.
    import random

    rng = random.Random(1)
    counts = {bytes(rng.randrange(4) for _ in range(20_000)): 1 for _ in range(200)}
    ticks = 0
    stop = threading.Event()

    def spin():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = bpeforge.Trainer()
    spinner = threading.Thread(target=spin)
    spinner.start()
    start = time.perf_counter()
    t.train_from_counts(counts, 2000)
    elapsed = time.perf_counter() - start
    stop.set()
    spinner.join()
    assert elapsed > 0.05, "training was too quick to tell"
    # A Python loop that held the GIL for only a few switch intervals would tick far less.
    assert ticks > 20_000 * elapsed, (ticks, elapsed)


HOSTILE = {
    "one repeated byte": ["a" * 1000, "aaaa", "aaa"],
    "only whitespace": [" " * 50, "\t\t \n\n  \n", "\r\n" * 30, " \u00a0\u3000 "],
    "only emoji": ["🎉🎉🎉", "👍🏽👍🏽", "🇫🇷🇫🇷🇩🇪", "😀" * 40],
    "only CJK": ["日本語のテキスト", "中文文本中文文本", "한국어 텍스트" * 5],
    "only combining marks": ["\u0301\u0302\u0303" * 20, "e\u0301\u0301\u0301"],
    "NUL bytes": ["\x00" * 100, "a\x00b\x00a\x00b", "\x00 \x00"],
    "CRLF runs": ["line\r\n\r\n\r\nline\r\n", "\r\n" * 100, "\r\r\n\n\r"],
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_shapes_match_the_reference(name):
    texts = HOSTILE[name] * 3
    for vocab_size in (260, 300, 400):
        theirs = reference.train_ranks(texts, vocab_size)
        assert ranks_of(texts, vocab_size) == theirs, f"{name} at {vocab_size}"


def test_counts_beyond_32_bits_match_the_reference():
    counts = {"hello": 3_000_000_000, " world": 2_999_999_999, "hellohello": 7, b"\xff\xfe\xff": 4_294_967_297}
    t = bpeforge.Trainer()
    t.train_from_counts(counts, 270)
    ranks, merges = reference.train_from_counts(counts, 270)
    assert t.get_mergeable_ranks() == ranks
    assert t.get_merges() == merges
    assert t.get_merges()[0][3] > 2**32


def test_long_run_of_one_byte_is_linear():
    """`aaaa…` overlaps itself; each merge halves it, so training stays fast and exact."""
    t = bpeforge.Trainer()
    start = time.perf_counter()
    t.train_from_iterator(["a" * 2_000_000], 300)
    assert time.perf_counter() - start < 10
    tokens = [b for b, _ in t.get_mergeable_ranks()[256:]]
    assert tokens[:3] == [b"aa", b"aaaa", b"aaaaaaaa"]


@pytest.mark.slow
def test_ten_million_one_character_docs():
    t = bpeforge.Trainer()
    start = time.perf_counter()
    t.train_from_iterator((chr(0x4E00 + i % 5000) for i in range(10_000_000)), 1000)
    assert time.perf_counter() - start < 120
    assert t.stats["texts"] == 10_000_000


@pytest.mark.slow
def test_one_huge_string():
    text = "".join(CORPUS) * 5700  # about 1 GB in one str
    t = bpeforge.Trainer()
    t.train_from_iterator([text], 2000)
    small = bpeforge.Trainer()
    small.train_from_iterator(["".join(CORPUS)], 2000)
    assert [b for b, _ in t.get_mergeable_ranks()] == [b for b, _ in small.get_mergeable_ranks()]
