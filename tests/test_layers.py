"""The package is layered one way: every module imports only modules of lower layers (never one
of its own layer, never one above), so that there is no cycle, and no module uses a private name
(a leading underscore) of another. Imports are read from the source with ``ast``, those inside
functions and under ``if TYPE_CHECKING:`` included."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

import bpeforge

PACKAGE = Path(bpeforge.__file__).parent

# Bottom to top: (what the layer holds, its modules). A module may import modules of the layers
# before its own, and nothing else of the package. docs/design.md lists them as written here
# (test_the_design_lists_these_layers; `python tests/test_layers.py` writes the list there).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("the compiled core (Rust): counting, training, encoding, the readers", ("bpeforge._core",)),
    ("leaves: exceptions, argument checks, split patterns, console progress, the version, the "
     "mixing of sources' span counts (weights from sizes, the mix's record), split patterns in "
     "HuggingFace's regex engine",
     ("bpeforge._errors", "bpeforge._checks", "bpeforge._patterns", "bpeforge._progress", "bpeforge._version", "bpeforge._mixing",
      "bpeforge._oniguruma")),
    ("the encoding core (`BaseTokenizer`); writing files crash-consistently", ("bpeforge._base", "bpeforge._files")),
    ("a tokenizer's first ranks (a smaller vocabulary); plots (matplotlib, nothing of the package)",
     ("bpeforge._prefix", "bpeforge._plot")),
    ("saving and loading, the one training path, tiktoken's named encodings",
     ("bpeforge._io", "bpeforge._training", "bpeforge._pretrained")),
    ("counting texts into span counts (progress as training takes it)", ("bpeforge._counts",)),
    ("HuggingFace's `tokenizer.json`, both ways (writes files as `io` does)", ("bpeforge.huggingface",)),
    ("extending a tokenizer: continued BPE, on training's helpers", ("bpeforge._extending",)),
    ("conversations for chat models (re-exports the token-bytes file helpers of `io`)", ("bpeforge._chat",)),
    ("the public `Tokenizer`, made of the modules above", ("bpeforge._tokenizer",)),
    ("the drop-ins: rustbpe's API (on the core) and nanochat's tokenizer (on the `Tokenizer`)",
     ("bpeforge.rustbpe", "bpeforge.nanochat")),
    ("compression compared; which input files to read (formats, folders, globs); parity-aware "
     "training and its report (on the `Tokenizer`)", ("bpeforge._eval", "bpeforge._inputs.sources", "bpeforge.parity")),
    ("compression at several vocabulary sizes of one training", ("bpeforge._sweep",)),
    ("superword transitions compared at one size (on the sweep's measuring)", ("bpeforge._superword_sweep",)),
    ("what the readers share: a file changed while read, errors in one line, the bad lines skipped", ("bpeforge._inputs.files",)),
    ("the Parquet readers: bpeforge's, or pyarrow's record batches handed to Rust (every format is read and selected in Rust; the tests keep Python readers as the oracle)",
     ("bpeforge._inputs.parquet",)),
    ("the training documents of the input files, as batches, with the held-out ones", ("bpeforge._inputs.corpus",)),
    ("the readers' package: their public names", ("bpeforge._inputs",)),
    ("a local Ray cluster on loopback that leaves nothing behind (imports Ray only when used)", ("bpeforge._ray_local",)),
    ("counting on a Ray cluster (imports Ray only when used)", ("bpeforge.ray",)),
    ("the package's face: its public names", ("bpeforge",)),
    ("the command line: what the subcommands share (exit codes, one-line errors)", ("bpeforge.cli.arguments",)),
    ("Ctrl-C on the command line", ("bpeforge.cli.signals",)),
    ("where `train` writes (the `--force` rule every command follows) and the report it prints",
     ("bpeforge.cli.outputs", "bpeforge.cli.report")),
    ("counting on Ray for `train` and `count` (`--ray`, `--ray-address`)", ("bpeforge.cli.ray",)),
    ("the commands `train`, `eval` and `export`", ("bpeforge.cli.train", "bpeforge.cli.eval", "bpeforge.cli.export")),
    ("training on span counts, loaded or counted on Ray (`train`'s options and outputs)", ("bpeforge.cli.train_counts",)),
    ("counting spans on the command line (`train`'s input options and reading)", ("bpeforge.cli.count",)),
    ("training on a mix of named sources (`train`'s reading, the mixing of span counts)", ("bpeforge.cli.mix",)),
    ("parity-aware training on named sources, one per language (the mix's sources)", ("bpeforge.cli.parity",)),
    ("a sweep of vocabulary sizes (`train`'s reading and training, `mix`'s sources)", ("bpeforge.cli.sweep",)),
    ("the entry point, `main`", ("bpeforge.cli",)),
    ("`python -m bpeforge`", ("bpeforge.__main__",)),
]
LAYER = {module: i for i, (_, layer) in enumerate(LAYERS) for module in layer}

DESIGN = Path(__file__).resolve().parent.parent / "docs" / "design.md"
BEGIN = "<!-- The layers, as tests/test_layers.py holds them: `python tests/test_layers.py` writes them here. -->"
END = "<!-- End of the layers. -->"


def module_name(path: Path) -> str:
    parts = ("bpeforge",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MODULES = set(SOURCES) | {"bpeforge._core"}


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> ast.Module:
    """The syntax tree of a source file, parsed once (every module's check reads all of them)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def is_package(module: str) -> bool:
    return module in SOURCES and SOURCES[module].name == "__init__.py"


def imports_of(module: str) -> list[tuple[str, int, list[str]]]:
    """(module imported, line, names taken from it) for every import of ``module`` that reaches
    the package: ``from . import io`` is an import of bpeforge._io, ``from .io import save`` of
    bpeforge._io taking ``save``."""
    tree = parsed(SOURCES[module])
    package = module if is_package(module) else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, []) for alias in node.names if alias.name.split(".")[0] == "bpeforge"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "bpeforge":
                continue
            names = []
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    found.append((f"{target}.{alias.name}", node.lineno, []))
                else:
                    names.append(alias.name)
            if names:
                found.append((target, node.lineno, names))
    return found


def test_every_module_has_a_layer():
    assert set(SOURCES) - set(LAYER) == set(), "add the new module to LAYERS"
    assert set(LAYER) - MODULES == set(), "LAYERS names a module that is gone"


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_imports_go_down_only(module):
    upward = [
        f"line {line}: {module} (layer {LAYER[module]}) imports {target} (layer {LAYER.get(target)})"
        for target, line, _ in imports_of(module)
        if target != module and LAYER.get(target, len(LAYERS)) >= LAYER[module]
    ]
    assert upward == []


def find_cycle() -> list[str]:
    """A cycle of imports among the package's modules (as a path that ends where it starts), or []."""
    graph = {m: {t for t, _, _ in imports_of(m) if t in SOURCES and t != m} for m in SOURCES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state and (cycle := visit(t)):
                return cycle
        path.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            return cycle
    return []


def test_no_import_cycle():
    assert find_cycle() == []


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_no_private_name_crosses_a_module(module):
    """No ``from x import _name`` of another module's private name, and no ``obj._name`` of a
    private attribute that only other modules of the package define (tiktoken's own private
    attributes, read where it offers no public one, are tiktoken's, not the package's)."""
    taken = [
        f"line {line}: {name} from {target}"
        for target, line, names in imports_of(module)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    own = private_names(module)
    elsewhere = set().union(*(private_names(m) for m in SOURCES if m != module)) - own
    tree = parsed(SOURCES[module])
    taken += [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in elsewhere
    ]
    assert taken == []


def private_names(module: str) -> frozenset[str]:
    """The private names ``module`` defines: its functions, classes, assignments and attributes
    (``self._x = ...``), at any depth."""
    return private_names_in(SOURCES[module])


@functools.lru_cache(maxsize=None)
def private_names_in(path: Path) -> frozenset[str]:
    tree = parsed(path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def test_the_walk_sees_what_it_must():
    """The checks above would pass vacuously if the walk found nothing: it finds the imports the
    package is made of, inside functions too."""
    assert "bpeforge._base" in {t for t, _, _ in imports_of("bpeforge._io")}
    assert {"bpeforge._chat", "bpeforge._io", "bpeforge._training"} <= {t for t, _, _ in imports_of("bpeforge._tokenizer")}
    assert {"bpeforge._inputs", "bpeforge._tokenizer"} <= {t for t, _, _ in imports_of("bpeforge.cli.train")}
    assert "_encoding" in private_names("bpeforge._base")


def test_an_upward_import_and_a_private_name_are_caught(tmp_path, monkeypatch):
    """A module that imports upward inside a function, and takes a private name, fails."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from .cli import main\n    from ._base import _hidden\n    return main\n")
    monkeypatch.setitem(SOURCES, "bpeforge.bad", bad)
    monkeypatch.setitem(LAYER, "bpeforge.bad", LAYER["bpeforge._base"])
    with pytest.raises(AssertionError, match=r"line 2: bpeforge.bad \(layer 2\) imports bpeforge.cli"):
        test_imports_go_down_only("bpeforge.bad")
    with pytest.raises(AssertionError, match=r"line 3: _hidden from bpeforge._base"):
        test_no_private_name_crosses_a_module("bpeforge.bad")


def test_a_cycle_is_caught(tmp_path, monkeypatch):
    """Two modules importing each other (one of them inside a function) form a cycle."""
    (tmp_path / "a.py").write_text("from . import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import g\n")
    monkeypatch.setitem(SOURCES, "bpeforge.a", tmp_path / "a.py")
    monkeypatch.setitem(SOURCES, "bpeforge.b", tmp_path / "b.py")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", MODULES | {"bpeforge.a", "bpeforge.b"})
    assert find_cycle() in (["bpeforge.a", "bpeforge.b", "bpeforge.a"], ["bpeforge.b", "bpeforge.a", "bpeforge.b"])


def layers_markdown() -> str:
    """LAYERS as a numbered Markdown list, bottom to top, modules named without ``bpeforge.``."""
    def name(module: str) -> str:
        return "`bpeforge` (`__init__`)" if module == "bpeforge" else f"`{module.removeprefix('bpeforge.')}`"

    return "\n".join(f"{i}. {', '.join(map(name, modules))} — {what}" for i, (what, modules) in enumerate(LAYERS, 1))


def design_layers(text: str) -> str:
    """The list of layers between the markers of docs/design.md's text."""
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"docs/design.md must hold {BEGIN!r} ... {END!r} once"
    return text.split(BEGIN)[1].split(END)[0].strip("\n")


def test_the_design_lists_these_layers():
    assert design_layers(DESIGN.read_text(encoding="utf-8")) == layers_markdown(), (
        "docs/design.md lists other layers than LAYERS: `python tests/test_layers.py` writes them there"
    )


if __name__ == "__main__":
    # Writes LAYERS into docs/design.md, between the markers.
    text = DESIGN.read_text(encoding="utf-8")
    design_layers(text)  # the markers are there, once each
    before, rest = text.split(BEGIN)
    after = rest.split(END)[1]
    DESIGN.write_text(f"{before}{BEGIN}\n{layers_markdown()}\n{END}{after}", encoding="utf-8")
