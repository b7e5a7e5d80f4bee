"""The `>>>` examples in the installed package's docstrings run and hold."""

import doctest
import importlib
import pkgutil

import pytest

import bpeforge

MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(bpeforge.__path__, "bpeforge.") if not name.endswith("__main__")
) + ["bpeforge"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
