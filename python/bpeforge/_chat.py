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

Encoding with ``prepend``/``append``, ``bos_token_id``, ``id_to_token`` and ``token_bytes``
are methods of the encoding core (:class:`bpeforge._base.BaseTokenizer`); the token-bytes file
helpers (:func:`read_token_bytes`, :func:`write_token_bytes`, :func:`token_bytes_npy`) live in
:mod:`bpeforge._io` and are re-exported here, where nanochat users look for them.

Message text is always encoded as ordinary text: ``"<|bos|>"`` typed by a user becomes a few text
tokens, never the special token.

>>> import bpeforge
>>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge._base.NANOCHAT_SPECIAL_TOKENS)  # bytes only
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

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from ._base import BaseTokenizer
from ._checks import optional_int
from ._io import TOKEN_BYTES_FILE, read_token_bytes, token_bytes_npy, write_token_bytes

__all__ = [
    "normalize_messages",
    "render_conversation",
    "render_for_completion",
    "visualize_tokenization",
    "marker_id",
    "TOKEN_BYTES_FILE",
    "read_token_bytes",
    "token_bytes_npy",
    "write_token_bytes",
]

USER_START, USER_END = "<|user_start|>", "<|user_end|>"
ASSISTANT_START, ASSISTANT_END = "<|assistant_start|>", "<|assistant_end|>"
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"
OUTPUT_START, OUTPUT_END = "<|output_start|>", "<|output_end|>"

PART_TYPES = ("text", "python", "python_output")
"""The part types an assistant message's content list may hold."""


RED, GREEN, GRAY, RESET = "\033[91m", "\033[92m", "\033[90m", "\033[0m"


def marker_id(tokenizer: BaseTokenizer, name: str) -> int:
    """The id of chat marker ``name`` (``<|user_start|>``, ...), which must be a special token:
    an ordinary token with the same text is what a user typing it gets, so it never marks a
    turn."""
    specials = tokenizer.special_tokens
    if name not in specials:
        raise KeyError(
            f"the tokenizer has no special token {name!r}, which conversations need (train with "
            f"special_tokens=bpeforge._base.NANOCHAT_SPECIAL_TOKENS); its special tokens: {sorted(specials)}"
        )
    return specials[name]


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


def _check_max_tokens(max_tokens: Any) -> Optional[int]:
    """``max_tokens`` as an int (any integer type) or None; TypeError or ValueError otherwise."""
    return optional_int(max_tokens, "max_tokens", 0, "a non-negative int or None")


def render_conversation(
    tokenizer: BaseTokenizer, conversation: Any, max_tokens: Optional[int] = 2048
) -> Tuple[List[int], List[int]]:
    """``(ids, mask)`` for a conversation (see the module docstring for the rules), both cut to
    ``max_tokens`` (``None``: no limit). ``mask[k]`` is 1 where the model is trained on ``ids[k]``.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge._base.NANOCHAT_SPECIAL_TOKENS)
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
    encode_ordinary = tokenizer.encode_ordinary

    def special(name: str) -> int:
        return marker_id(tokenizer, name)

    ids: List[int] = [tokenizer.bos_token_id]
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


def render_for_completion(tokenizer: BaseTokenizer, conversation: Any, max_tokens: Optional[int] = 2048) -> List[int]:
    """The ids of ``conversation`` without its last message, which must be from the assistant,
    followed by ``<|assistant_start|>``: a prompt for the model to complete (as nanochat's RL does).
    The rendering is cut to ``max_tokens`` before ``<|assistant_start|>`` is appended, like
    nanochat's. The conversation is not modified.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge._base.NANOCHAT_SPECIAL_TOKENS)
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
    tokenizer: BaseTokenizer, ids: Sequence[int], mask: Sequence[int], with_token_id: bool = False
) -> str:
    """The tokens of ``ids`` joined by ``|``, each green where its mask is 1 and red otherwise (ANSI
    colours), with ``(id)`` in gray after each token when ``with_token_id``, as nanochat does.

    >>> import bpeforge
    >>> tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, special_tokens=bpeforge._base.NANOCHAT_SPECIAL_TOKENS)
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
