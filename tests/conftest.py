import os
import sys

# tests/reference.py, tests/strategies.py and tests/ranks.py are imported as top-level modules
# by the tests, whatever pytest's rootdir / import mode.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import pytest  # noqa: E402

import bpeforge  # noqa: E402
from ranks import hand_ranks  # noqa: E402


@pytest.fixture(scope="session")
def hello():
    """he, ll, hell, hello: "hello" is one token, " hello" is " " + "hello" (no " h" merge)."""
    return bpeforge.Tokenizer(hand_ranks(b"he", b"ll", b"hell", b"hello"), special_tokens=["<|bos|>"])
