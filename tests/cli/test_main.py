"""bpeforge.cli: the parser and main (no command, --version, --help, the subcommands' hook,
unexpected errors in one line), and docstrings across the cli package."""

import sys

import pytest

from bpeforge import cli
from bpeforge.cli.parity import run_train  # train: on INPUTs, --source mixes or --parity languages

from .helpers import run


@pytest.mark.parametrize("module", ["arguments", "signals", "outputs", "report", "train", "eval", None])
def test_public_names_have_docstrings(module):
    import importlib
    import inspect

    mod = importlib.import_module("bpeforge.cli" + (f".{module}" if module else ""))
    missing = [
        name
        for name, obj in vars(mod).items()
        if not name.startswith("_")
        and getattr(obj, "__module__", None) == mod.__name__
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and not obj.__doc__
    ]
    assert missing == []


def test_no_command_and_version():
    r = run()
    assert r.returncode == 2 and "train" in r.stderr and "Traceback" not in r.stderr
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("bpeforge ")
    r = run("train", "--help")
    assert r.returncode == 0 and "--doc-separator" in r.stdout and "standard library" in r.stdout
    r = run("--help")
    assert r.returncode == 0 and "train" in r.stdout
    import importlib.util

    if importlib.util.find_spec("bpeforge._eval") is not None:  # contributed by bpeforge/eval.py
        assert "eval" in r.stdout
        assert run("eval", "--help").returncode == 0


def test_eval_subcommand_hook(monkeypatch, capsys):
    """A missing or broken contributed subcommand never breaks the parser."""
    import types

    monkeypatch.setattr(cli, "EXTRA_SUBCOMMANDS", [("bpeforge.no_such_module", "add", "run"), ("json", "nope", "nope")])
    parser = cli.build_parser()
    assert parser.parse_args(["train", "-o", "x"]).run is run_train
    assert "no_such_module" not in parser.format_help()

    broken = types.ModuleType("bpeforge_broken_sub")
    broken.__getattr__ = lambda name: 1 / 0  # fails on any lookup, like a module with a bug
    monkeypatch.setitem(sys.modules, "bpeforge_broken_sub", broken)
    monkeypatch.setattr(cli, "EXTRA_SUBCOMMANDS", [("bpeforge_broken_sub", "add", "run")])
    assert cli.build_parser().parse_args(["train", "-o", "x"]).run is run_train
    assert cli.main(["bpeforge_broken_sub", "--anything"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bpeforge: error: the 'bpeforge_broken_sub' command is unavailable") and "ZeroDivisionError" in err

    fake = types.ModuleType("bpeforge_fake_sub")

    def add(subparsers):
        p = subparsers.add_parser("fake")
        p.add_argument("--n", type=int, default=1)

    fake.add, fake.run = add, lambda args: args.n * 7
    monkeypatch.setitem(sys.modules, "bpeforge_fake_sub", fake)
    monkeypatch.setattr(cli, "EXTRA_SUBCOMMANDS", [("bpeforge_fake_sub", "add", "run")])
    assert cli.main(["fake", "--n", "3"]) == 21


def test_internal_errors_are_one_line(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("something\nwent wrong")

    monkeypatch.setattr(cli.train, "run_train", boom)  # where the train parser finds it
    monkeypatch.delenv("BPEFORGE_DEBUG", raising=False)
    assert cli.main(["train", "-o", "x"]) == 1
    err = capsys.readouterr().err
    assert err == "bpeforge: error: something went wrong (RuntimeError; set BPEFORGE_DEBUG=1 for the traceback)\n"
