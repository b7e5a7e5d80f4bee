"""Chat-model helpers behind the nanochat-compatible :class:`~bpeforge.Tokenizer` methods.

Each function takes the tokenizer as its first argument; ``Tokenizer.render_conversation(...)``
and friends call them. The rules are nanochat's (``RustBPETokenizer`` in ``nanochat/tokenizer.py``):

* :func:`render_conversation` turns ``{"messages": [...]}`` into ``(ids, mask)``: ``<|bos|>``, then
  each user message between ``<|user_start|>``/``<|user_end|>`` (mask 0), each assistant message
  between ``<|assistant_start|>`` (mask 0) and ``<|assistant_end|>`` (mask 1) with its content at
  mask 1. Assistant content is a str or a list of parts: ``text`` (mask 1), ``python`` inside
  ``<|python_start|>``/``<|python_end|>`` (mask 1), ``python_output`` inside
  ``<|output_start|>``/``<|output_end|>`` (mask 0: it comes from the tool, not the model). A
  leading system message is merged into the first user message as ``system + "\\n\\n" + user``.
  Roles must alternate user, assistant, user, ... from the first (non-system) message; any other
  shape raises ValueError naming the message by its index in the conversation as given.
* :func:`render_for_completion` renders all but the last (assistant) message and ends with
  ``<|assistant_start|>``.
* :func:`token_bytes` gives, for every id, the number of bytes it decodes to (0 for special tokens).

Message text is always encoded as ordinary text: ``"<|bos|>"`` typed by a user becomes a few text
tokens, never the special token.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge.NANOCHAT_SPECIAL_TOKENS)  # bytes only
>>> ids, mask = tok.render_conversation({"messages": [
...     {"role": "user", "content": "Hi"},
...     {"role": "assistant", "content": "Yo"},
... ]})
>>> [tok.id_to_token(i) for i in ids]
['<|bos|>', '<|user_start|>', 'H', 'i', '<|user_end|>', '<|assistant_start|>', 'Y', 'o', '<|assistant_end|>']
>>> mask
[0, 0, 0, 0, 0, 0, 1, 1, 1]
"""

from __future__ import annotations

import ast
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple, Union

from .io import TOKEN_BYTES_FILE  # where save() writes the token byte lengths

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

BOS = "<|bos|>"
ENDOFTEXT = "<|endoftext|>"
USER_START, USER_END = "<|user_start|>", "<|user_end|>"
ASSISTANT_START, ASSISTANT_END = "<|assistant_start|>", "<|assistant_end|>"
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"
OUTPUT_START, OUTPUT_END = "<|output_start|>", "<|output_end|>"

PART_TYPES = ("text", "python", "python_output")
"""The part types an assistant message's content list may hold."""


RED, GREEN, GRAY, RESET = "\033[91m", "\033[92m", "\033[90m", "\033[0m"

SpecialToken = Union[str, bytes, int]


# ------------------------------------------------------------------------------ encoding


def special_id(tokenizer: "Tokenizer", token: SpecialToken) -> int:
    """The id of ``token``: a special token name, or an id (checked to be in the vocabulary).

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer.train_from_iterator(["ab"], vocab_size=258, special_tokens=["<|bos|>"])
    >>> special_id(tok, "<|bos|>"), special_id(tok, 7)
    (257, 7)
    """
    from .tokenizer import _as_int

    if isinstance(token, (str, bytes)):
        return tokenizer.encode_special(token)
    try:
        token = _as_int(token, "a special token")
    except TypeError:
        raise TypeError(f"a special token must be a name (str) or an id (int), got {type(token).__name__}") from None
    if not 0 <= token < tokenizer.n_vocab:
        raise ValueError(f"token id {token} is out of range: ids run from 0 to {tokenizer.n_vocab - 1}")
    return token


def encode(
    tokenizer: "Tokenizer",
    text: Union[str, Sequence[str]],
    prepend: Optional[SpecialToken] = None,
    append: Optional[SpecialToken] = None,
    num_threads: Optional[int] = 8,
) -> Union[List[int], List[List[int]]]:
    """Encodes ``text`` (a str, or a list of str encoded in parallel on ``num_threads`` threads)
    as ordinary text, with ``prepend``/``append`` (a special token name or id) added to each
    sequence. A list gives a list of lists, one per str.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer.train_from_iterator(["ab ab"], vocab_size=266)
    >>> bos = tok.get_bos_token_id()
    >>> encode(tok, ["ab", "b"], prepend="<|bos|>", append=bos) == [[bos, 256, bos], [bos, 98, bos]]
    True
    """
    prepend_id = None if prepend is None else special_id(tokenizer, prepend)
    append_id = None if append is None else special_id(tokenizer, append)
    enc = tokenizer.encoding
    if isinstance(text, str):
        ids = tokenizer._encode_ordinary(text)
        if prepend_id is not None:
            ids.insert(0, prepend_id)
        if append_id is not None:
            ids.append(append_id)
        return ids
    if not isinstance(text, (list, tuple)):
        raise TypeError(f"text must be a str or a list of str, got {type(text).__name__}")
    for i, t in enumerate(text):
        if not isinstance(t, str):
            raise TypeError(f"text[{i}] must be a str, got {type(t).__name__}")
    num_threads = _optional_int(num_threads, "num_threads", 1, "a positive int or None (tiktoken's default)")
    if not text:
        return []
    from .tokenizer import tiktoken_errors

    threads = {} if num_threads is None else {"num_threads": num_threads}
    with tiktoken_errors():
        batch = enc.encode_ordinary_batch(list(text), **threads)
    head = [] if prepend_id is None else [prepend_id]
    tail = [] if append_id is None else [append_id]
    if head or tail:
        batch = [head + ids + tail for ids in batch]
    return batch


def bos_token_id(tokenizer: "Tokenizer") -> int:
    """The id of ``<|bos|>``, or of ``<|endoftext|>`` when there is no ``<|bos|>`` (tiktoken's
    encodings call their document delimiter that, as nanochat's ``from_pretrained`` knows)."""
    specials = tokenizer.special_tokens
    for name in (BOS, ENDOFTEXT):
        if name in specials:
            return specials[name]
    raise KeyError(f"the tokenizer has neither {BOS!r} nor {ENDOFTEXT!r}; its special tokens: {sorted(specials)}")


def marker_id(tokenizer: "Tokenizer", name: str) -> int:
    """The id of chat marker ``name`` (``<|user_start|>``, ...), which must be a special token:
    an ordinary token with the same text is what a user typing it gets, so it never marks a
    turn."""
    specials = tokenizer.special_tokens
    if name not in specials:
        raise KeyError(
            f"the tokenizer has no special token {name!r}, which conversations need (train with "
            f"special_tokens=bpeforge.NANOCHAT_SPECIAL_TOKENS); its special tokens: {sorted(specials)}"
        )
    return specials[name]


def id_to_token(tokenizer: "Tokenizer", token_id: int) -> str:
    """The text of one token (U+FFFD where its bytes are not whole UTF-8 characters). The id may
    be any integer type (a NumPy integer, a 0-d tensor: whatever has ``__index__``)."""
    from .tokenizer import _as_int

    token_id = _as_int(token_id, "a token id")
    if not 0 <= token_id < tokenizer.n_vocab:
        raise KeyError(f"token id {token_id} is out of range: ids run from 0 to {tokenizer.n_vocab - 1}")
    return tokenizer.encoding.decode([token_id])


# ------------------------------------------------------------------------------ conversations


def _messages(conversation: Any) -> list:
    """The messages of ``conversation`` (a ``{"messages": [...]}`` dict, or the list itself)."""
    if isinstance(conversation, Mapping):
        if "messages" not in conversation:
            raise ValueError("a conversation is a dict with a 'messages' list; this one has no 'messages'")
        messages = conversation["messages"]
    else:
        messages = conversation
    if not isinstance(messages, (list, tuple)):
        raise ValueError(f"a conversation's messages must be a list, got {type(messages).__name__}")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise ValueError(f"message {i} must be a dict with 'role' and 'content', got {_short(message)}")
    return list(messages)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_parts(i: int, content: Any) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, (list, tuple)):
        raise ValueError(
            f"message {i} (assistant): content must be a str or a list of parts, got {type(content).__name__}"
        )
    for j, part in enumerate(content):
        if not isinstance(part, Mapping) or "type" not in part:
            raise ValueError(f"message {i} (assistant), part {j}: a part must be a dict with 'type' and 'text', got {_short(part)}")
        if part["type"] not in PART_TYPES:
            raise ValueError(
                f"message {i} (assistant), part {j}: unknown part type {_short(part['type'])} "
                f"(expected one of {', '.join(repr(t) for t in PART_TYPES)})"
            )
        if not isinstance(part.get("text"), str):
            raise ValueError(
                f"message {i} (assistant), part {j} ({part['type']}): 'text' must be a str, "
                f"got {type(part.get('text')).__name__}"
            )


def normalize_messages(conversation: Any) -> List[Tuple[int, str, Any]]:
    """Checks ``conversation`` and returns ``(index, role, content)`` per message to render, the
    system message merged into the first user message (which keeps its own index).

    >>> normalize_messages({"messages": [
    ...     {"role": "system", "content": "Be brief."},
    ...     {"role": "user", "content": "Hi"},
    ...     {"role": "assistant", "content": "Hello"},
    ... ]})
    [(1, 'user', 'Be brief.\\n\\nHi'), (2, 'assistant', 'Hello')]
    >>> normalize_messages([{"role": "assistant", "content": "Hello"}])
    Traceback (most recent call last):
    ...
    ValueError: message 0 is from 'assistant' but should be from 'user' (roles alternate user, assistant, ... starting with user)
    """
    messages = _messages(conversation)
    if not messages:
        raise ValueError("the conversation has no messages")
    out: List[Tuple[int, str, Any]] = []
    start = 0
    if messages[0]["role"] == "system":
        system = messages[0]["content"]
        if not isinstance(system, str):
            raise ValueError(f"message 0 (system): content must be a str, got {type(system).__name__}")
        if len(messages) < 2 or messages[1]["role"] != "user":
            got = "nothing" if len(messages) < 2 else f"a message from {_short(messages[1]['role'])}"
            raise ValueError(f"message 0 is a system message, so message 1 must be from 'user', got {got}")
        user = messages[1]["content"]
        if not isinstance(user, str):
            raise ValueError(f"message 1 (user): content must be a str, got {type(user).__name__}")
        out.append((1, "user", system + "\n\n" + user))
        start = 2
    for i in range(start, len(messages)):
        role, content = messages[i]["role"], messages[i]["content"]
        expected = "user" if len(out) % 2 == 0 else "assistant"
        if role == "system":
            raise ValueError(f"message {i} is a system message: only the first message may be one")
        if role != expected:
            raise ValueError(
                f"message {i} is from {_short(role)} but should be from {expected!r} "
                f"(roles alternate user, assistant, ... starting with user)"
            )
        if role == "user":
            if not isinstance(content, str):
                raise ValueError(f"message {i} (user): content must be a str, got {type(content).__name__}")
        else:
            _check_parts(i, content)
        out.append((i, role, content))
    return out


def _optional_int(value: Any, name: str, minimum: int, expected: str) -> Optional[int]:
    """``value`` as an int (any integer type) of at least ``minimum``, or None; else TypeError
    (not an integer) or ValueError (too small), saying ``name`` must be ``expected``."""
    from .tokenizer import _as_int

    if value is None:
        return None
    try:
        number = _as_int(value, name)
    except TypeError:
        raise TypeError(f"{name} must be {expected}, got {value!r}") from None
    if number < minimum:
        raise ValueError(f"{name} must be {expected}, got {number!r}")
    return number


def _check_max_tokens(max_tokens: Any) -> Optional[int]:
    """``max_tokens`` as an int (any integer type) or None; TypeError or ValueError otherwise."""
    return _optional_int(max_tokens, "max_tokens", 0, "a non-negative int or None")


def render_conversation(
    tokenizer: "Tokenizer", conversation: Any, max_tokens: Optional[int] = 2048
) -> Tuple[List[int], List[int]]:
    """``(ids, mask)`` for a conversation (see the module docstring for the rules), both cut to
    ``max_tokens`` (``None``: no limit). ``mask[k]`` is 1 where the model is trained on ``ids[k]``.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge.NANOCHAT_SPECIAL_TOKENS)
    >>> ids, mask = render_conversation(tok, {"messages": [
    ...     {"role": "user", "content": "2+2?"},
    ...     {"role": "assistant", "content": [
    ...         {"type": "python", "text": "2+2"},
    ...         {"type": "python_output", "text": "4"},
    ...         {"type": "text", "text": "4"},
    ...     ]},
    ... ]})
    >>> print(visualize_tokenization(tok, ids, mask).replace(GREEN, "+").replace(RED, "-").replace(RESET, ""))
    -<|bos|>|-<|user_start|>|-2|-+|-2|-?|-<|user_end|>|-<|assistant_start|>|+<|python_start|>|+2|++|+2|+<|python_end|>|-<|output_start|>|-4|-<|output_end|>|+4|+<|assistant_end|>
    """
    max_tokens = _check_max_tokens(max_tokens)
    messages = normalize_messages(conversation)
    encode_ordinary = tokenizer._encode_ordinary
    def special(name: str) -> int:
        return marker_id(tokenizer, name)

    ids: List[int] = [bos_token_id(tokenizer)]
    mask: List[int] = [0]

    def add(token_ids: List[int], value: int) -> None:
        ids.extend(token_ids)
        mask.extend([value] * len(token_ids))

    for _, role, content in messages:
        if role == "user":
            add([special(USER_START)], 0)
            add(encode_ordinary(content), 0)
            add([special(USER_END)], 0)
            continue
        add([special(ASSISTANT_START)], 0)
        if isinstance(content, str):
            add(encode_ordinary(content), 1)
        else:
            for part in content:
                value_ids = encode_ordinary(part["text"])
                if part["type"] == "text":
                    add(value_ids, 1)
                elif part["type"] == "python":
                    add([special(PYTHON_START)], 1)
                    add(value_ids, 1)
                    add([special(PYTHON_END)], 1)
                else:  # python_output: produced by the tool at inference time, never trained on
                    add([special(OUTPUT_START)], 0)
                    add(value_ids, 0)
                    add([special(OUTPUT_END)], 0)
        add([special(ASSISTANT_END)], 1)
    if max_tokens is not None:
        del ids[max_tokens:], mask[max_tokens:]
    return ids, mask


def render_for_completion(tokenizer: "Tokenizer", conversation: Any, max_tokens: Optional[int] = 2048) -> List[int]:
    """The ids of ``conversation`` without its last message, which must be from the assistant,
    followed by ``<|assistant_start|>``: a prompt for the model to complete (as nanochat's RL does).
    The rendering is cut to ``max_tokens`` before ``<|assistant_start|>`` is appended, like
    nanochat's. The conversation is not modified.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge.NANOCHAT_SPECIAL_TOKENS)
    >>> ids = render_for_completion(tok, [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}])
    >>> [tok.id_to_token(i) for i in ids]
    ['<|bos|>', '<|user_start|>', 'H', 'i', '<|user_end|>', '<|assistant_start|>']
    """
    max_tokens = _check_max_tokens(max_tokens)
    messages = _messages(conversation)
    if not messages:
        raise ValueError("the conversation has no messages")
    last = messages[-1]["role"]
    if last != "assistant":
        raise ValueError(
            f"message {len(messages) - 1} is from {_short(last)}: the last message must be from the "
            f"assistant (it is the one left out for the model to complete)"
        )
    if len(messages) == 1:
        raise ValueError("the conversation has no messages before the assistant message to complete")
    if len(messages) == 2 and messages[0]["role"] == "system":
        raise ValueError(
            "the conversation has only a system message before the assistant message to complete: "
            "a user message must follow the system message"
        )
    ids, _ = render_conversation(tokenizer, messages[:-1], max_tokens)
    ids.append(marker_id(tokenizer, ASSISTANT_START))
    return ids


def visualize_tokenization(
    tokenizer: "Tokenizer", ids: Sequence[int], mask: Sequence[int], with_token_id: bool = False
) -> str:
    """The tokens of ``ids`` joined by ``|``, each green where its mask is 1 and red otherwise (ANSI
    colours), with ``(id)`` in gray after each token when ``with_token_id``, as nanochat does.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge.NANOCHAT_SPECIAL_TOKENS)
    >>> visualize_tokenization(tok, [104, 105], [0, 1], with_token_id=True)
    '\\x1b[91mh\\x1b[0m|\\x1b[90m(104)\\x1b[0m|\\x1b[92mi\\x1b[0m|\\x1b[90m(105)\\x1b[0m'
    """
    if len(ids) != len(mask):
        raise ValueError(f"ids and mask differ in length: {len(ids)} ids, {len(mask)} mask values")
    parts = []
    for token_id, mask_value in zip(ids, mask):
        color = GREEN if mask_value == 1 else RED
        parts.append(f"{color}{tokenizer.decode([token_id])}{RESET}")
        if with_token_id:
            parts.append(f"{GRAY}({token_id}){RESET}")
    return "|".join(parts)


# ------------------------------------------------------------------------------ token bytes


def token_bytes(tokenizer: "Tokenizer", as_numpy: bool = False) -> Any:
    """For every id ``0 .. n_vocab - 1``, the number of bytes the token stands for: the length of
    its bytes for a rank, 0 for a special token (or an unused id). A list, or an int32 NumPy array
    with ``as_numpy=True``.

    Unlike nanochat's ``tok_train.py``, which measures ``decode([id])`` and so counts a token that
    is part of a UTF-8 character as the 3 bytes of U+FFFD, this counts the token's own bytes: the
    sum over the ids of any encoded text is that text's UTF-8 length, as bits-per-byte needs.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer.train_from_iterator(["hello hello"], vocab_size=262, special_tokens=["<|bos|>"])
    >>> tb = token_bytes(tok)
    >>> len(tb) == tok.n_vocab, tb[:2], tb[-1]
    (True, [1, 1], 0)
    >>> sum(tb[i] for i in tok.encode("héllo hello")) == len("héllo hello".encode())
    True
    """
    values = [0] * tokenizer.n_vocab
    for token, rank in tokenizer.encoding._mergeable_ranks.items():
        values[rank] = len(token)
    if as_numpy:
        np = _numpy()
        return np.asarray(values, dtype=np.int32)
    return values


def _numpy() -> Any:
    try:
        import numpy
    except ModuleNotFoundError as e:
        if e.name != "numpy":
            raise
        raise ModuleNotFoundError("as_numpy=True needs NumPy (pip install 'bpeforge[numpy]')", name="numpy") from None
    return numpy


def token_bytes_npy(tokenizer: "Tokenizer") -> bytes:
    """The ``.npy`` file (format 1.0, little-endian int32, 1-D) of :func:`token_bytes`, written
    without NumPy: ``numpy.load`` reads it, and ``torch.from_numpy`` of that is nanochat's
    ``token_bytes.pt`` tensor.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer.train_from_iterator(["aa"], vocab_size=257, special_tokens=[])
    >>> data = token_bytes_npy(tok)
    >>> data[:6], len(data) % 64 == (257 * 4) % 64
    (b'\\x93NUMPY', True)
    """
    values = token_bytes(tokenizer)
    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    # magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of
    # 64 bytes and ending in a newline, as numpy writes it.
    pad = 64 - (10 + len(header) + 1) % 64
    header_bytes = (header + " " * (pad % 64) + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header_bytes)) + header_bytes + struct.pack(f"<{len(values)}i", *values)


def write_token_bytes(tokenizer: "Tokenizer", directory: Union[str, os.PathLike]) -> Path:
    """Writes :data:`TOKEN_BYTES_FILE` for ``tokenizer`` into ``directory``; returns its path.
    (:meth:`Tokenizer.save` does this through ``io.save``; this is for folders written otherwise.)"""
    path = Path(directory) / TOKEN_BYTES_FILE
    from .io import _write_atomic

    _write_atomic(path, token_bytes_npy(tokenizer))
    return path


def _check_against_config(directory: Path, data: bytes) -> None:
    """Raises TokenizerFileError if ``directory`` is a saved tokenizer whose config names
    another token-bytes file than ``data``, the one there (two saves into the folder at once)."""
    import json

    from .io import CONFIG_FILE, check_checksum

    try:
        config = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return  # no config (a folder of write_token_bytes alone), or one load would refuse
    if isinstance(config, dict):
        check_checksum(directory, TOKEN_BYTES_FILE, config.get("token_bytes_sha256"), data)


def read_token_bytes(path: Union[str, os.PathLike], as_numpy: bool = False) -> Any:
    """Reads a token-bytes file (a saved tokenizer folder, or the ``.npy`` file itself) as a list,
    or as a NumPy array with ``as_numpy=True``. Only what :func:`token_bytes_npy` writes is read
    without NumPy; a bad file raises ``bpeforge.TokenizerFileError``.

    >>> import bpeforge, tempfile
    >>> tok = bpeforge.Tokenizer.train_from_iterator(["aa"], vocab_size=258, special_tokens=["<|bos|>"])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = write_token_bytes(tok, d)
    ...     read_token_bytes(d)[-3:]
    [1, 2, 0]
    """
    from .io import TokenizerFileError

    path = Path(path)
    folder = path if path.is_dir() else None
    if folder is not None:
        path = path / TOKEN_BYTES_FILE
    # Read once: checked and parsed as the same bytes, even if a save replaces the file meanwhile.
    data = path.read_bytes()
    if folder is not None:
        _check_against_config(folder, data)
    if as_numpy:
        import io

        return _numpy().load(io.BytesIO(data), allow_pickle=False)
    if data[:8] != b"\x93NUMPY\x01\x00" or len(data) < 10:
        raise TokenizerFileError(f"{path}: not a .npy file (format 1.0)")
    (header_len,) = struct.unpack("<H", data[8:10])
    try:
        header = ast.literal_eval(data[10 : 10 + header_len].decode("latin1"))
        descr, shape = header["descr"], header["shape"]
    except (ValueError, SyntaxError, KeyError, TypeError):
        raise TokenizerFileError(f"{path}: bad .npy header") from None
    if (
        descr != "<i4"
        or header.get("fortran_order")
        or not (isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], int) and shape[0] >= 0)
    ):
        raise TokenizerFileError(f"{path}: expected a 1-D little-endian int32 array, got {descr} of shape {shape}")
    body = data[10 + header_len :]
    if len(body) != 4 * shape[0]:
        raise TokenizerFileError(f"{path}: {len(body)} data bytes where {4 * shape[0]} were expected (truncated?)")
    return list(struct.unpack(f"<{shape[0]}i", body))
