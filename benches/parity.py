"""Parity-aware training: bpeforge against HuggingFace's ParityBpeTrainer, on the same objects.

Languages: the Linux kernel's documentation in English and its translations (zh_CN, zh_TW,
it_IT, ko_KR, ja_JP), from the corpus folder that benches/README.md says how to build (the
``linux-source-6.1`` tree it unpacks). Each language's last tenth of files is its dev set. Each
trainer runs in a child process of its own (wall time of the training call, peak RSS of the
child), and the two tokenizers are checked JSON-equal.

    python benches/parity.py [--corpus-dir DIR] [--merges 8000] [--variant base|window]
        [--dev | --ratio] [--english-mb 6] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LANGUAGES = ["en", "zh_CN", "zh_TW", "it_IT", "ko_KR", "ja_JP"]


def language_files(root: Path, language: str) -> list[Path]:
    docs = root / "linux-source-6.1" / "Documentation"
    base = docs if language == "en" else docs / "translations" / language
    files = sorted(p for p in base.rglob("*") if p.suffix in (".rst", ".txt") and p.is_file())
    if language == "en":
        files = [p for p in files if "translations" not in p.parts]
    return files


def language_texts(root: Path, language: str, english_mb: float) -> tuple[list[str], list[str]]:
    """A language's training and dev lines (the last tenth of its files is dev)."""
    files = language_files(root, language)
    cut = len(files) - max(1, len(files) // 10)
    train, dev, size = [], [], 0
    for i, path in enumerate(files):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        if i >= cut:
            dev.extend(lines)
        elif language != "en" or size < english_mb * 1e6:
            train.extend(lines)
            size += sum(len(line.encode()) for line in lines)
    return train, dev


def child(args: argparse.Namespace) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.trainers import ParityBpeTrainer

    root = Path(args.corpus_dir)
    data = [language_texts(root, language, args.english_mb) for language in LANGUAGES]
    train = [t for t, _ in data]
    dev = [d for _, d in data] if args.dev else None
    ratio = [1.0 if language in ("en", "it_IT") else 2.6 for language in LANGUAGES] if args.ratio else None
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = ParityBpeTrainer(num_merges=args.merges, variant=args.variant, show_progress=False, special_tokens=["<|endoftext|>"])
    start = time.perf_counter()
    if args.child == "hf":
        trainer.train_from_iterator(tokenizer, train, dev_iterators=dev, ratio=ratio)
    else:
        import bpeforge.huggingface

        bpeforge.huggingface.train_from_iterator(tokenizer, train, trainer, dev, ratio=ratio)
    seconds = time.perf_counter() - start
    Path(args.out).write_text(tokenizer.to_str())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak_rss": rss, "bytes": sum(len(t.encode()) for lang in train for t in lang)}))


def run(which: str, args: argparse.Namespace, out: str) -> dict:
    command = [sys.executable, __file__, "--child", which, "--out", out, "--corpus-dir", args.corpus_dir, "--merges", str(args.merges),
               "--variant", args.variant, "--english-mb", str(args.english_mb)] + (["--dev"] if args.dev else []) + (["--ratio"] if args.ratio else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-dir", default=os.environ.get("BPEFORGE_CORPUS_DIR", ""))
    parser.add_argument("--merges", type=int, default=8000)
    parser.add_argument("--variant", choices=["base", "window"], default="base")
    parser.add_argument("--dev", action="store_true", help="measure on each language's dev files")
    parser.add_argument("--ratio", action="store_true", help="target ratios (2.6 for the CJK languages) instead")
    parser.add_argument("--english-mb", type=float, default=6.0, help="English training text, MB (the translations are 0.06-1.7 MB)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--child", choices=["hf", "bpeforge"])
    parser.add_argument("--out")
    args = parser.parse_args()
    if not args.corpus_dir or not (Path(args.corpus_dir) / "linux-source-6.1").is_dir():
        sys.exit("give --corpus-dir (or BPEFORGE_CORPUS_DIR): the folder benches/build_corpus.sh fills, with linux-source-6.1 in it")
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, list[dict]] = {"hf": [], "bpeforge": []}
        for _ in range(args.repeat):
            for which in ("hf", "bpeforge"):  # interleaved, so load on the machine hits both
                results[which].append(run(which, args, f"{tmp}/{which}.json"))
        same = json.loads(Path(f"{tmp}/hf.json").read_text()) == json.loads(Path(f"{tmp}/bpeforge.json").read_text())
    best = {which: min(r, key=lambda x: x["seconds"]) for which, r in results.items()}
    mode = "dev" if args.dev else "ratio" if args.ratio else "training lengths"
    print(f"{len(LANGUAGES)} languages, {best['hf']['bytes'] / 1e6:.1f} MB of training text, {args.merges} merges, variant {args.variant}, measured on {mode}")
    print("| trainer | seconds | peak RSS |")
    print("|---|---:|---:|")
    for which, label in (("hf", "HuggingFace ParityBpeTrainer"), ("bpeforge", "bpeforge.huggingface.train_from_iterator")):
        print(f"| {label} | {best[which]['seconds']:.2f} | {best[which]['peak_rss'] / 2**20:.0f} MiB |")
    print(f"bpeforge is {best['hf']['seconds'] / best['bpeforge']['seconds']:.1f}x faster, "
          f"{best['bpeforge']['peak_rss'] / best['hf']['peak_rss']:.2f}x the peak memory; tokenizer.json identical: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
