"""Shared plumbing for the benchmark scripts in this folder (compare.py, count_throughput.py).

Each measurement runs in a fresh child process, ``python benchlib.py --child CONFIG.json``: the
child builds the corpus iterator, trains one trainer, writes its mergeable ranks to a file in the
tiktoken format (``base64(token) rank`` per line) and its measurements to a JSON file. The parent
waits for it with ``os.wait4`` so it also gets the child's whole-process rusage.

Timed section: only the training call (``train_from_iterator`` / ``train_bpe``). When the corpus is
streamed (the default in compare.py) reading and decoding the corpus happens inside that call, for
every trainer alike. Converting the result to ranks and writing it out is not timed.
CPU time is user+sys of the whole child process (all threads) over the timed section; peak RSS is
the child's ``ru_maxrss`` (so it includes the interpreter, the imports and, with --preload, the corpus).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_HINT = (
    "The benchmark corpora are built by benches/build_corpus.sh DIR (needs root for apt-get "
    "linux-source-6.1, ~2 GB of disk, pyarrow for .parquet): e.g. "
    "`bash benches/build_corpus.sh \"$BPEFORGE_CORPUS_DIR\"` writes kernel-docs.{txt,parquet} (~28 MB) "
    "and kernel-code.{txt,parquet} (~300 MB) there; see benches/README.md. "
    "Or use --stdlib (this Python's standard library sources, nothing to build)."
)

TRAINERS = ("rustbpe", "bpeforge", "hf-tokenizers", "bpeasy", "bpeforge-hf", "gigatoken-hf", "ffbpe-hf")

# Not a trainer: iterates the corpus and drops every text, to measure the reader alone (its time
# and peak RSS are part of every trainer's figures when the corpus is streamed).
READER = "reader"


# --------------------------------------------------------------------------- corpus


class Stats:
    """What the corpus iterator handed out (texts, UTF-8 bytes)."""

    def __init__(self):
        self.texts = 0
        self.bytes = 0


def _iter_txt(path: str, fraction: float, st: Stats):
    """One text per line (the line's "\\n" kept, so the texts concatenate back to the file), the
    first `fraction` of the file's bytes (cut at a line end).

    The iterator is the open file itself, as a training script passes it: text mode, UTF-8 with
    errors="replace", lines ended by "\\n" only (the same texts as the file's lines decoded one
    by one), cut with itertools.islice for a fraction. So the reader costs what reading a file
    in Python costs and no more: the texts and bytes are counted here, before the timed call,
    not as they are handed out."""
    budget = os.path.getsize(path) * fraction if fraction < 1 else float("inf")
    with open(path, "rb") as f:
        if fraction >= 1:
            st.bytes, last = 0, b""
            while chunk := f.read(1 << 20):  # (small: the peak RSS counts from here)
                st.texts += chunk.count(b"\n")
                st.bytes += len(chunk)
                last = chunk
            st.texts += 1 if last and not last.endswith(b"\n") else 0
        else:
            for raw in f:
                if st.bytes >= budget:
                    break
                st.texts += 1
                st.bytes += len(raw)
    f = open(path, encoding="utf-8", errors="replace", newline="\n")
    return f if fraction >= 1 else itertools.islice(f, st.texts)


PARQUET_FEEDS = ("str", "list", "arrow")
PARQUET_READERS = ("bpeforge", "pyarrow")


def _iter_parquet(path: str, fraction: float, st: Stats, feed: str = "str", reader: str = "bpeforge"):
    """The `text` column, one document per row; the first `fraction` of the rows. `feed` says
    what the iterator yields: "str" one str per non-null, non-empty row (what every trainer takes), "list"
    one list of str per batch of rows (nulls and empty strings dropped), "arrow" the record batch's pyarrow string
    array itself (with the pyarrow reader, and for bpeforge only: it reads the array through the
    Arrow C Data Interface and skips nulls).

    `reader` reads the file: "bpeforge" with bpeforge.ParquetReader (page by page, in Rust,
    batches of up to 1024 rows or 1 MB), "pyarrow" with pyarrow's ParquetFile.iter_batches (record
    batches of 1024 rows),
    as a training script would. The same texts either way: the fraction counts texts (non-null,
    non-empty rows) of the file's rows, `round(rows * fraction)` of them.

    The reader is made and the file opened here, before the first text is asked for: a training
    script has its reader ready before it trains, and importing pyarrow (about 0.1 s) inside the
    timed call would be counted as training time."""
    if feed not in PARQUET_FEEDS:
        raise ValueError(f"unknown feed {feed!r}; known: {', '.join(PARQUET_FEEDS)}")
    if reader not in PARQUET_READERS:
        raise ValueError(f"unknown Parquet reader {reader!r}; known: {', '.join(PARQUET_READERS)}")
    if reader == "bpeforge":
        if feed == "arrow":
            raise ValueError("the arrow feed needs the pyarrow reader")
        return _iter_parquet_bpeforge(path, fraction, st, feed)

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    limit = int(round(pf.metadata.num_rows * fraction)) if fraction < 1 else pf.metadata.num_rows

    def rows():
        for batch in pf.iter_batches(batch_size=1024, columns=["text"]):
            if st.texts >= limit:
                break
            col = pc.drop_null(batch.column(0))
            lengths = pc.binary_length(col)
            if len(col) and pc.min(lengths).as_py() == 0:  # empty strings left out, as bpeforge's reader does
                col = col.filter(pc.greater(lengths, 0))
            if st.texts + len(col) > limit:
                col = col.slice(0, limit - st.texts)
            st.texts += len(col)
            st.bytes += int(pc.sum(pc.binary_length(col)).as_py() or 0)
            if feed == "arrow":
                yield col
            elif feed == "list":
                yield col.to_pylist()
            else:
                yield from col.to_pylist()

    return rows()


def _iter_parquet_bpeforge(path: str, fraction: float, st: Stats, feed: str):
    """_iter_parquet with bpeforge's reader (which skips null rows and empty strings); the bytes are counted in
    Rust."""
    from bpeforge import ParquetReader

    pr = ParquetReader(path, "text")
    limit = int(round(pr.num_rows * fraction)) if fraction < 1 else pr.num_rows

    def rows():
        dropped = 0  # bytes of the part of the last batch past the limit
        try:
            for batch in pr:
                if st.texts + len(batch) > limit:
                    cut = max(limit - st.texts, 0)
                    dropped = sum(len(s.encode("utf-8")) for s in batch[cut:])
                    batch = batch[:cut]
                st.texts += len(batch)
                if feed == "list":
                    if batch:
                        yield batch
                else:
                    yield from batch
                if st.texts >= limit:
                    break
        finally:
            st.bytes = pr.bytes_read - dropped

    return rows()


def stdlib_files() -> list:
    """This Python's standard library *.py files (no site-packages), sorted, with sizes."""
    root = sysconfig.get_paths()["stdlib"]
    out = []
    for dp, dn, fn in os.walk(root):
        dn[:] = sorted(d for d in dn if d not in ("site-packages", "dist-packages", "__pycache__"))
        for f in sorted(fn):
            if f.endswith(".py"):
                p = os.path.join(dp, f)
                out.append((p, os.path.getsize(p)))
    return out


def _iter_stdlib(fraction: float, st: Stats):
    """One text per stdlib source file; the first `fraction` of the bytes (whole files)."""
    files = stdlib_files()
    budget = sum(s for _, s in files) * fraction if fraction < 1 else float("inf")
    for p, _ in files:
        if st.bytes >= budget:
            break
        with open(p, "rb") as f:
            raw = f.read()
        st.texts += 1
        st.bytes += len(raw)
        yield raw.decode("utf-8", "replace")


def corpus_iter(corpus: dict, st: Stats):
    """corpus: {"path": str|None, "stdlib": bool, "fraction": float, "feed": str and "reader": str
    (.parquet only, see _iter_parquet; default "str" and "bpeforge")}."""
    frac = float(corpus.get("fraction", 1.0))
    if corpus.get("stdlib"):
        return _iter_stdlib(frac, st)
    path = corpus["path"]
    if path.endswith(".parquet"):
        return _iter_parquet(path, frac, st, corpus.get("feed", "str"), corpus.get("reader", "bpeforge"))
    return _iter_txt(path, frac, st)


def check_corpus(path):
    if path is not None and not os.path.exists(path):
        sys.exit(f"corpus not found: {path}\n{BUILD_HINT}")


def parse_fraction(s: str) -> float:
    """'1/8', '0.125' or '1'."""
    if "/" in s:
        a, b = s.split("/", 1)
        v = float(a) / float(b)
    else:
        v = float(s)
    if not 0 < v <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {s}")
    return v


def describe_corpus(corpus: dict) -> str:
    frac = corpus.get("fraction", 1.0)
    if corpus.get("stdlib"):
        src = f"--stdlib ({sysconfig.get_paths()['stdlib']}, *.py, one text per file)"
    else:
        p = corpus["path"]
        reader = corpus.get("reader", "bpeforge")
        kind = (f"one text per row of column `text`, read by {'bpeforge.ParquetReader' if reader == 'bpeforge' else 'pyarrow'}"
                if p.endswith(".parquet") else "one text per line")
        src = f"{p} ({os.path.getsize(p) / 1e6:.1f} MB on disk, {kind})"
    part = "" if frac >= 1 else f", first {frac:g} of the " + (
        "rows" if (corpus.get("path") or "").endswith(".parquet") else "bytes")
    return src + part


# --------------------------------------------------------------------------- ranks files


def write_ranks(path: str, ranks) -> None:
    with open(path, "w") as f:
        for tok, r in ranks:
            f.write(f"{base64.b64encode(tok).decode()} {r}\n")


def read_ranks(path: str) -> list:
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                b, r = line.split()
                out.append((base64.b64decode(b), int(r)))
    return out


def first_difference(a: list, b: list):
    """None if equal, else (index, a_item_or_None, b_item_or_None)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, x, y
    if len(a) != len(b):
        i = min(len(a), len(b))
        return i, a[i] if i < len(a) else None, b[i] if i < len(b) else None
    return None


# --------------------------------------------------------------------------- trainers (child side)


def _bytes_decoder():
    """GPT-2's byte<->unicode table, inverted: HF ByteLevel char -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def _hf_tokenizer_and_trainer(vocab_size: int, pattern: str):
    """HF tokenizers' Tokenizer and BpeTrainer splitting by `pattern` as the others do: a Split
    ("isolated" keeps every match as its own piece, and the rare unmatched gaps too) with the
    pattern as HF's engine (Oniguruma) must be given it, then bytes mapped to ByteLevel's
    printable alphabet without ByteLevel's own GPT-2 regex; every byte in the alphabet."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from bpeforge.huggingface import oniguruma_regex

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(oniguruma_regex(pattern)), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[],
    )
    return tok, trainer


def train(name: str, it, vocab_size: int, pattern: str, buffer_size: int = 8192):
    """Runs one trainer on iterator `it`. Returns (seconds, cpu_seconds, ranks, extra)."""
    extra = {}
    if name == "rustbpe":
        import rustbpe

        t = rustbpe.Tokenizer()
        w0, c0 = _clock()
        t.train_from_iterator(it, vocab_size, buffer_size=buffer_size, pattern=pattern)
        w1, c1 = _clock()
        ranks = t.get_mergeable_ranks()
    elif name == "bpeforge":
        import bpeforge

        t = bpeforge.Trainer(pattern=pattern)
        w0, c0 = _clock()
        t.train_from_iterator(it, vocab_size, buffer_size=buffer_size)
        w1, c1 = _clock()
        ranks = t.get_mergeable_ranks()
        extra["stats"] = dict(t.stats)
    elif name == "bpeasy":
        import bpeasy

        w0, c0 = _clock()
        vocab = bpeasy.train_bpe(it, pattern, 128, vocab_size)
        w1, c1 = _clock()
        ranks = sorted(vocab.items(), key=lambda kv: kv[1])
    elif name in ("hf-tokenizers", "bpeforge-hf"):
        tok, trainer = _hf_tokenizer_and_trainer(vocab_size, pattern)
        w0, c0 = _clock()
        if name == "hf-tokenizers":
            tok.train_from_iterator(it, trainer=trainer)
        else:  # the same objects, trained by bpeforge.huggingface (HuggingFace's tie-break)
            import bpeforge.huggingface

            bpeforge.huggingface.train_from_iterator(tok, it, trainer)
        w1, c1 = _clock()
        dec = _bytes_decoder()
        # Canonical order: single bytes get rank = byte value (HF numbers its 256-char alphabet in
        # its own order), learned tokens keep their id (256.. in merge order).
        ranks = []
        for s, i in tok.get_vocab().items():
            b = bytes(dec[ch] for ch in s)
            ranks.append((b, b[0] if len(b) == 1 else i))
        ranks.sort(key=lambda kv: kv[1])
    elif name == "gigatoken-hf":
        import bpeforge
        import gigatoken

        if pattern != bpeforge.PATTERNS["gpt2"]:
            raise ValueError("gigatoken trains with GPT-2's pattern only: run it with --pattern gpt2")

        # gigatoken trains on bytes (or files), GPT-2's pattern only, with every byte in its
        # alphabet: the texts are joined by a separator it splits documents at again.
        data = b"\0".join(t.encode("utf-8") for t in it)
        w0, c0 = _clock()
        vocab = gigatoken.train_bpe(data, vocab_size, [], tie_breaking="huggingface", separator=b"\0")[0]
        w1, c1 = _clock()
        ranks = sorted(((b, i) for i, b in vocab.items()), key=lambda kv: kv[1])
    elif name == "ffbpe-hf":
        import ffbpe

        # ffbpe's word counter (the pattern run by its own scanner for the presets, by its regex
        # fallback otherwise), then its trainer with HuggingFace's byte-level alphabet (all 256
        # characters) and tie-break (the smaller pair of ids): HF's vocabulary, ids included.
        w0, c0 = _clock()
        counter = ffbpe.PreTokenizer([], pat_str=pattern).word_counter()
        counter.add_source(it)
        trainer = ffbpe.BpeTrainer([], initial_alphabet="byte_level", tie_break="smallest_pair_id")
        trainer.add_word_counter(counter)
        trainer.train(vocab_size)
        w1, c1 = _clock()
        # Single bytes renumbered to their byte value, as HF's are (see hf-tokenizers above).
        ranks = sorted(((b, b[0] if len(b) == 1 else i) for b, i in trainer.vocab.items()), key=lambda kv: kv[1])
    elif name == READER:
        import collections

        w0, c0 = _clock()
        collections.deque(it, maxlen=0)
        w1, c1 = _clock()
        ranks = []
    else:
        raise ValueError(f"unknown trainer {name!r}; known: {', '.join(TRAINERS)}")
    return w1 - w0, c1 - c0, ranks, extra


BATCH_FEEDS = ("list", "arrow")


def _batches(texts: list, feed: str, size: int = 65536) -> list:
    """Preloaded texts regrouped for bpeforge, which also takes batches: lists of `size` str
    ("list"), or pyarrow string arrays of `size` texts ("arrow", read by Rust through the Arrow C
    Data Interface without a Python str per text)."""
    chunks = [texts[i:i + size] for i in range(0, len(texts), size)]
    if feed == "list":
        return chunks
    if feed == "arrow":
        import pyarrow as pa

        return [pa.array(c, type=pa.large_string()) for c in chunks]
    raise ValueError(f"unknown batch feed {feed!r}; known: {', '.join(BATCH_FEEDS)}")


def _clock():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), ru.ru_utime + ru.ru_stime


def child_main(cfg_path: str) -> None:
    with open(cfg_path) as f:
        cfg = json.load(f)
    name = cfg["trainer"]
    # import the trainer's module first, so the baseline RSS includes it
    module = {"hf-tokenizers": "tokenizers", "bpeforge-hf": "bpeforge.huggingface", "gigatoken-hf": "gigatoken", "ffbpe-hf": "ffbpe"}.get(name, name)
    if module in TRAINERS + ("tokenizers", "bpeforge.huggingface", "gigatoken", "ffbpe"):
        __import__(module)
    st = Stats()
    it = corpus_iter(cfg["corpus"], st)
    if cfg.get("preload"):
        it = list(it)
        if cfg.get("batch_feed") and name == "bpeforge":
            it = _batches(it, cfg["batch_feed"])
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    secs, cpu, ranks, extra = train(name, iter(it), cfg["vocab_size"], cfg["pattern"], cfg.get("buffer_size", 8192))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    write_ranks(cfg["ranks_out"], ranks)
    res = {
        "trainer": name, "seconds": secs, "cpu_seconds": cpu,
        "base_rss_mb": base_rss / 1024, "peak_rss_mb": peak / 1024,  # ru_maxrss is KiB on Linux
        "n_ranks": len(ranks), "texts": st.texts, "bytes": st.bytes, **extra,
    }
    with open(cfg["result_out"], "w") as f:
        json.dump(res, f)


# --------------------------------------------------------------------------- parent side


def print_run(label: str, k: int, repeat: int, r: dict) -> None:
    """One line on stderr for run `k` (of `repeat`) of `label`: its figures, or why it failed."""
    if "error" in r:
        print(f"  [{k + 1}/{repeat}] {label}: FAILED {r['error']}", file=sys.stderr, flush=True)
    else:
        print(f"  [{k + 1}/{repeat}] {label}: {r['seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s CPU, "
              f"{r['peak_rss_mb']:.0f} MB peak, {r['n_ranks']} ranks", file=sys.stderr, flush=True)


def run_rounds(names: list, repeat: int, run_one) -> dict:
    """Runs `run_one(name, k)` for every name in turn, `repeat` rounds (round-robin, so a noisy
    spell of the machine falls on every contender alike), printing each run; returns
    {name: [result of round 0, round 1, ...]}."""
    runs = {n: [] for n in names}
    for k in range(repeat):
        for n in names:
            r = run_one(n, k)
            runs[n].append(r)
            print_run(n, k, repeat, r)
    return runs


def run_child(trainer: str, corpus: dict, vocab_size: int, pattern: str, workdir: str, tag: str,
              preload: bool = False, buffer_size: int = 8192, env=None, batch_feed: str = None) -> dict:
    """Runs one training in a fresh process, waits for it (os.wait4) and returns its result dict,
    with "ranks_path" and the parent's view of the child's rusage. On failure: {"error": ...}."""
    cfg = {
        "trainer": trainer, "corpus": corpus, "vocab_size": vocab_size, "pattern": pattern,
        "preload": preload, "buffer_size": buffer_size, "batch_feed": batch_feed,
        "ranks_out": os.path.join(workdir, f"{tag}.tiktoken"),
        "result_out": os.path.join(workdir, f"{tag}.json"),
    }
    cfg_path = os.path.join(workdir, f"{tag}.cfg.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    errf = tempfile.TemporaryFile(dir=workdir)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "benchlib.py"), "--child", cfg_path],
                         stdout=errf, stderr=subprocess.STDOUT, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    total = time.perf_counter() - t0
    if p.returncode != 0 or not os.path.exists(cfg["result_out"]):
        errf.seek(0)
        out = errf.read().decode("utf-8", "replace").strip().splitlines()
        return {"trainer": trainer, "error": f"exit {p.returncode}: " + (out[-1] if out else "(no output)")}
    with open(cfg["result_out"]) as f:
        res = json.load(f)
    res["ranks_path"] = cfg["ranks_out"]
    res["process_seconds"] = total
    res["process_cpu_seconds"] = ru.ru_utime + ru.ru_stime
    res["process_peak_rss_mb"] = ru.ru_maxrss / 1024
    return res


def _version(mod):
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:
        return "?"


def machine_info() -> list:
    lines = [f"command: {shlex.join([sys.executable] + sys.argv)}"]
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    lines.append(f"machine: nproc={nproc} (os.cpu_count={os.cpu_count()}), cpu={cpu}, mem={mem}, "
                 f"{platform.system()} {platform.release()}, Python {platform.python_version()}")
    lines.append("versions: " + ", ".join(f"{m} {_version(m)}" for m in ("bpeforge", "rustbpe", "tokenizers", "bpeasy", "ffbpe", "gigatoken")))
    load = os.getloadavg()
    lines.append(f"load average at start: {' '.join(f'{x:.2f}' for x in load)}"
                 + (f"  (WARNING: above nproc={nproc}: other work is running, wall times will be inflated;"
                    " compare the ratios and CPU times)" if load[0] > nproc else ""))
    env = {k: os.environ[k] for k in ("RAYON_NUM_THREADS", "RAYON_RS_NUM_THREADS", "TOKENIZERS_PARALLELISM") if k in os.environ}
    if env:
        lines.append(f"env: {env}")
    return lines


def nproc() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def markdown_table(header: list, rows: list) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    right = [i > 0 for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(c.rjust(w[i]) if right[i] else c.ljust(w[i]) for i, c in enumerate(r)) + " |"
    sep = "|" + "|".join(("-" * (w[i] + 1) + ":") if right[i] else ("-" * (w[i] + 2)) for i in range(len(header))) + "|"
    return "\n".join([fmt(cells[0]), sep] + [fmt(r) for r in cells[1:]])


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(sys.argv[2])
    else:
        sys.exit("benchlib.py is a helper: run compare.py or count_throughput.py")
