import os
import sys

# tests/reference.py, tests/strategies.py and tests/ranks.py are imported as top-level modules
# by the tests, whatever pytest's rootdir / import mode.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import bpeforge  # noqa: E402
from ranks import hand_ranks  # noqa: E402


# Property tests: each asks for its examples with strategies.examples(n), n being what the
# "thorough" profile runs (`python -m pytest --hypothesis-profile=thorough`); the "ci" profile,
# the default, runs a third of them (at least ten), so that the suite stays quick. The other
# settings are hypothesis's own.
settings.register_profile("thorough", max_examples=100)
settings.register_profile("ci", max_examples=33)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def hello():
    """he, ll, hell, hello: "hello" is one token, " hello" is " " + "hello" (no " h" merge)."""
    return bpeforge.Tokenizer(hand_ranks(b"he", b"ll", b"hell", b"hello"), special_tokens=["<|bos|>"])


# Ray's tests share one local cluster (2 CPUs, loopback only) for the whole session: starting
# one takes seconds. A node is put on loopback only if Ray is first imported with this set
# (see bpeforge._ray_local), and the test modules import Ray as they are collected.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


@pytest.fixture(scope="session")
def ray_cluster():
    """The session's local Ray cluster (a bpeforge._ray_local.LocalCluster), this process
    connected to it; stopped (every process ended, its folder removed) at the end."""
    pytest.importorskip("ray")
    bray = pytest.importorskip("bpeforge.ray")
    cluster = bray.start_local_cluster(num_cpus=2, logging_level="ERROR")
    yield cluster
    cluster.stop()
