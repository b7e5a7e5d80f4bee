import os
import sys

# tests/reference.py and tests/strategies.py are imported as top-level modules by
# test_reference.py and test_determinism.py, whatever pytest's rootdir / import mode.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
