"""The package's type information is honest: the stubs of the compiled core carry its docstrings
and names, the README's Python examples type-check against them, and so does the package."""

import ast
import inspect
import os
import re
from pathlib import Path

import pytest

import bpeforge
from bpeforge import _core

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the [test] extra")

ROOT = Path(__file__).resolve().parent.parent
STUB = Path(bpeforge.__file__).parent / "_core.pyi"


def stub_docstrings():
    """{qualified name: docstring} of every function and class of the stub that has one."""
    tree = ast.parse(STUB.read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            found[node.name] = ast.get_docstring(node)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                        found[f"{node.name}.{item.name}"] = ast.get_docstring(item)
    return found


def test_the_stub_has_the_runtime_docstrings_and_names():
    stub = stub_docstrings()
    runtime = {}
    for name in _core.__all__:
        obj = getattr(_core, name)
        if inspect.isclass(obj) or callable(obj):
            runtime[name] = inspect.cleandoc(obj.__doc__)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if not attr.startswith("_"):
                    value = getattr(value, "__func__", value)  # a staticmethod's own docstring
                    runtime[f"{name}.{attr}"] = inspect.cleandoc(value.__doc__)
    assert stub == runtime
    stub_all = next(
        node.value for node in ast.parse(STUB.read_text()).body
        if isinstance(node, ast.Assign) and node.targets[0].id == "__all__"  # type: ignore[attr-defined]
    )
    assert sorted(ast.literal_eval(stub_all)) == sorted(_core.__all__)


def mypy(*args):
    # No cache: nothing written into the source tree.
    out, err, status = mypy_api.run(["--no-incremental", "--cache-dir", os.devnull, "--show-error-codes", *args])
    return status, out + err


@pytest.fixture(scope="module")
def examples_checked(tmp_path_factory):
    """The Python examples of the README (one script) and of docs/ (a script per page, each given
    the names the pages take as given: texts, a trained tokenizer and span counts), type-checked
    with --strict in one mypy run (each run reads the package and the standard library anew):
    ({"README.md": [script], "docs": [scripts]}, mypy's status, mypy's report)."""
    folder = tmp_path_factory.mktemp("examples")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    readme = folder / "readme_examples.py"
    readme.write_text("texts: list[str] = ['hello world']\n" + "\n".join(blocks))
    given = (
        "import bpeforge\n"
        "texts: list[str] = ['hello world']\n"
        "tok = bpeforge.Tokenizer.train_from_iterator(texts, vocab_size=300)\n"
        "c_en = c_fi = c_code = bpeforge.count(texts)\n"
    )
    docs = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        if blocks:
            docs.append(folder / f"docs_{page.stem.replace('-', '_')}.py")
            docs[-1].write_text(given + "\n".join(blocks))
    assert len(docs) >= 5
    # A script with a type error, checked in the same run: the reports are read right (below).
    planted = folder / "planted.py"
    planted.write_text("count: int = 'one'\n")
    status, out = mypy("--strict", str(readme), *map(str, docs), str(planted))
    return {"README.md": [readme], "docs": docs, "planted": [planted]}, status, out


def errors_in(scripts, status, out):
    """mypy's lines about ``scripts``; a failure if mypy itself failed (status 2)."""
    assert status in (0, 1), out
    return [line for line in out.splitlines() if line.startswith(tuple(str(s) + ":" for s in scripts))]


def test_readme_python_examples_type_check(examples_checked):
    scripts, status, out = examples_checked
    assert errors_in(scripts["README.md"], status, out) == [], out


def test_docs_python_examples_type_check(examples_checked):
    scripts, status, out = examples_checked
    assert errors_in(scripts["docs"], status, out) == [], out


def test_an_error_in_an_example_would_be_seen(examples_checked):
    """The checks above read mypy's report by file: the planted error is found in it, on its file."""
    scripts, status, out = examples_checked
    assert [line.split(": ")[1] for line in errors_in(scripts["planted"], status, out)] == ["error"], out


def test_the_package_type_checks():
    status, out = mypy("--config-file", str(ROOT / "pyproject.toml"), str(ROOT / "python" / "bpeforge"))
    assert status == 0, out


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert bpeforge.__version__ == version("bpeforge") != "unknown"


def test_stubtest_finds_the_stub_and_the_runtime_agree(capsys, tmp_path):
    """mypy's stubtest: every name, signature and default of the stub against the compiled
    module, as it is imported here."""
    from mypy import stubtest

    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\ncache_dir = {os.devnull}\n")  # nothing written into the tree
    status = stubtest.test_stubs(stubtest.parse_options(["--mypy-config-file", str(config), "bpeforge._core"]))
    assert status == 0, capsys.readouterr().out
