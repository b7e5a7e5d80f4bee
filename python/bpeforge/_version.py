"""The installed distribution's version (``bpeforge.__version__``)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("bpeforge")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "unknown"
