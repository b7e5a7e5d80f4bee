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


def test_readme_python_examples_type_check(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    script = tmp_path / "readme_examples.py"
    script.write_text("texts: list[str] = ['hello world']\n" + "\n".join(blocks))
    status, out = mypy("--strict", str(script))
    assert status == 0, out


def test_docs_python_examples_type_check(tmp_path):
    """The Python examples of docs/, a script per page, each given the names the pages take as
    given: texts, a trained tokenizer and span counts."""
    given = (
        "import bpeforge\n"
        "texts: list[str] = ['hello world']\n"
        "tok = bpeforge.Tokenizer.train_from_iterator(texts, vocab_size=300)\n"
        "c_en = c_fi = c_code = bpeforge.count(texts)\n"
    )
    scripts = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
        if blocks:
            scripts.append(tmp_path / f"docs_{page.stem.replace('-', '_')}.py")
            scripts[-1].write_text(given + "\n".join(blocks))
    assert len(scripts) >= 5
    status, out = mypy("--strict", *map(str, scripts))
    assert status == 0, out


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
