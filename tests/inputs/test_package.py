"""bpeforge._inputs as a whole: every public name of its modules has a docstring."""

import pytest


@pytest.mark.parametrize("module", ["sources", "files", "parquet", "corpus"])
def test_public_names_have_docstrings(module):
    import importlib
    import inspect

    mod = importlib.import_module(f"bpeforge._inputs.{module}")
    missing = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and not obj.__doc__:
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                member = member.fget if isinstance(member, property) else member
                if not attr.startswith("_") and callable(member) and not member.__doc__:
                    missing.append(f"{name}.{attr}")
    assert missing == []
