#!/usr/bin/env bash
# Builds the benchmark corpora from Debian's linux-source-6.1 package (the benches read them;
# the tests never do). Usage: benches/build_corpus.sh DIR   (DIR: any folder with ~2 GB free;
# defaults to $BPEFORGE_CORPUS_DIR). Writes into DIR:
#   kernel-docs.{txt,parquet}: the kernel's Documentation/ (*.rst, *.txt), English technical
#     prose, 5,128 documents, ~28 MB
#   kernel-code.{txt,parquet}: the first ~300 MB of the kernel's C sources (*.c, *.h)
# .txt: the documents joined by "\n"; .parquet: one document per row, column "text", row
# groups of 2048 rows (pyarrow's writer; skipped without pyarrow). Documents are shuffled with a
# fixed seed, so every build writes the same files. Installing the package needs root (apt-get).
set -euo pipefail
out=${1:-${BPEFORGE_CORPUS_DIR:-}}
if [ -z "$out" ]; then
  echo "usage: $0 DIR   (or set BPEFORGE_CORPUS_DIR)" >&2
  exit 2
fi
mkdir -p "$out"
tarball=/usr/src/linux-source-6.1.tar.xz
if [ ! -f "$tarball" ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q linux-source-6.1 >/dev/null
fi
src="$out/linux-source-6.1"
[ -d "$src" ] || tar -xJf "$tarball" -C "$out"
python3 - "$out" <<'PY'
import os, random, sys

out = sys.argv[1]
root = os.path.join(out, "linux-source-6.1")


def walk(base, exts):
    for folder, subfolders, files in sorted(os.walk(base)):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(exts):
                yield os.path.join(folder, name)


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def save(name, docs):
    random.Random(0).shuffle(docs)
    with open(os.path.join(out, name + ".txt"), "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(doc)
            f.write("\n")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        print("pyarrow missing: skipped", name + ".parquet")
    else:
        pq.write_table(pa.table({"text": docs}), os.path.join(out, name + ".parquet"), row_group_size=2048)
    print(name, len(docs), "docs", round(sum(len(d.encode()) for d in docs) / 1e6, 1), "MB")


save("kernel-docs", [read(p) for p in walk(os.path.join(root, "Documentation"), (".rst", ".txt"))])
code, total = [], 0
for path in walk(root, (".c", ".h")):
    text = read(path)
    code.append(text)
    total += len(text)
    if total > 300e6:
        break
save("kernel-code", code)
PY
