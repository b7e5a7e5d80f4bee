"""Type stubs for the compiled core (`bpeforge._core`)."""

from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Union

DEFAULT_PATTERN: str
PRESETS: list[tuple[str, str]]

ProgressCallback = Callable[[str, dict[str, Any]], None]

class ArrowArrayExportable(Protocol):
    """An Arrow array exported through the Arrow PyCapsule interface (a pyarrow ``Array``, the
    chunks of a ``ChunkedArray``, ...). ``train_from_iterator`` takes those of type utf8
    (``string``), large_utf8 (``large_string``) or utf8_view (``string_view``); it reads them
    without a Python str per text and skips their null entries."""

    def __arrow_c_array__(self, requested_schema: Optional[object] = None) -> tuple[object, object]: ...

class Trainer:
    """Trains byte-level BPE ranks from text, exactly and deterministically."""

    def __init__(self, pattern: Optional[str] = None, *, num_threads: Optional[int] = None) -> None: ...
    def train_from_iterator(
        self,
        iterator: Iterable[Union[str, list[str], ArrowArrayExportable]],
        vocab_size: int,
        buffer_size: int = 8192,
        pattern: Optional[str] = None,
        *,
        min_frequency: int = 1,
        progress: Optional[ProgressCallback] = None,
    ) -> None: ...
    def train_from_counts(
        self,
        counts: Union[Mapping[Union[str, bytes], int], Iterable[tuple[Union[str, bytes], int]]],
        vocab_size: int,
        *,
        min_frequency: int = 1,
        progress: Optional[ProgressCallback] = None,
    ) -> None: ...
    def get_pattern(self) -> str: ...
    def get_mergeable_ranks(self) -> list[tuple[bytes, int]]: ...
    def get_merges(self) -> list[tuple[int, int, int, int]]: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def stats(self) -> dict[str, Any]: ...

def check_pattern(pattern: str) -> None: ...
def resolve_pattern(pattern: str) -> str: ...
def check_ranks(ranks: list[tuple[bytes, int]]) -> None: ...
def split(text: str, pattern: str, *, fast: bool = True) -> list[str]: ...
