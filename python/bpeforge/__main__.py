"""``python -m bpeforge ...``: the same as the ``bpeforge`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
