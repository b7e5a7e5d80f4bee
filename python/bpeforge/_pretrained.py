"""tiktoken's own encodings by name (``gpt2``, ``cl100k_base``, ``o200k_base``, a model name such
as ``gpt-4o``, or ``gpt4`` as nanochat calls cl100k_base), with clear errors for an unknown name
or for being offline (tiktoken downloads the ranks on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict

from ._errors import EncodingUnavailable, EvalError

if TYPE_CHECKING:  # imported where used: training alone never loads tiktoken
    import tiktoken

ALIASES: Dict[str, str] = {"gpt4": "cl100k_base"}
"""Short names accepted for tiktoken encodings, as nanochat's ``tok_eval`` calls them."""


def load_tiktoken_encoding(name: str) -> tiktoken.Encoding:
    """``tiktoken.get_encoding`` of ``name`` (or of a model name, or ``gpt4``), with a clear
    :class:`~bpeforge._errors.EvalError` when the name is unknown,
    :class:`~bpeforge._errors.EncodingUnavailable` (an EvalError and a ConnectionError) when
    tiktoken cannot fetch the ranks (offline).

    >>> load_tiktoken_encoding("no-such-encoding")
    Traceback (most recent call last):
    ...
    bpeforge._errors.EvalError: 'no-such-encoding' is not a tiktoken encoding or model name (encodings: ...)
    """
    import tiktoken

    known = list(tiktoken.list_encoding_names())
    encoding_name = ALIASES.get(name, name)
    if encoding_name not in known:
        try:
            encoding_name = tiktoken.encoding_name_for_model(name)
        except KeyError:
            raise EvalError(
                f"{name!r} is not a tiktoken encoding or model name (encodings: {', '.join(sorted(known))})"
            ) from None
    try:
        return tiktoken.get_encoding(encoding_name)
    except Exception as e:  # noqa: BLE001 - network errors come in many types
        detail = " ".join(str(e).split()) or type(e).__name__
        if len(detail) > 200:
            detail = detail[:197] + "..."
        raise EncodingUnavailable(
            f"tiktoken could not load the encoding {encoding_name!r}: it downloads the ranks on first use "
            f"(cached in TIKTOKEN_CACHE_DIR), and that failed, likely because this machine is offline "
            f"({type(e).__name__}: {detail}); offline, use a local .tiktoken ranks file instead"
        ) from None
