"""HuggingFace ``tokenizer.json`` both ways: a tokenizer written as a ByteLevel BPE that
``tokenizers`` and ``transformers`` load and that gives tiktoken's ids, and such a file read
back into a tokenizer that gives HuggingFace's ids. What cannot be carried over exactly is
refused with a ValueError naming the reason (``docs/huggingface.md`` gives the arguments).

Written (see :func:`to_huggingface`):

- the model: a BPE whose vocabulary holds every rank and every special token at its own id
  (tokens spelled in GPT-2's byte-level alphabet, :func:`byte_level_alphabet`), with
  ``ignore_merges`` on (tiktoken looks a whole span up before merging, and so does HF then), and
  a merge for *every* way of making a token from two tokens (tiktoken merges by the rank of the
  concatenation, whichever two parts make it), ordered by the rank they make;
- the pre-tokenizer: the split pattern as a ``Split`` (behavior ``Isolated``) followed by
  ``ByteLevel(add_prefix_space=false, use_regex=false)``; a preset pattern in a reviewed
  spelling for HuggingFace's regex engine (Oniguruma), a custom one when it uses only the
  constructs :mod:`bpeforge._oniguruma` lists, translated (and if it may leave text unmatched,
  which tiktoken drops, the ``Split`` is ``Removed`` inverted, which drops it too);
- a ByteLevel decoder, the special tokens as added tokens at their own ids, and
  ``tokenizer_config.json`` for ``transformers``.

Read (see :func:`from_huggingface`): a ByteLevel BPE (GPT-2's own pre-tokenizer, or a
``Split`` of a preset pattern or of listed constructs before a regex-less ``ByteLevel``), with or without ``ignore_merges``,
special tokens at any ids (``BpeTrainer`` puts them first), the single bytes in any order.

Trained (see :func:`train_from_iterator`): HuggingFace's own ``Tokenizer`` and ``BpeTrainer``,
left as HuggingFace's training leaves them, by bpeforge's recipe with HuggingFace's tie-break.

``tokenizers`` itself is needed only by the tests and :func:`train_from_iterator` (which is
given its objects): both directions read and write JSON.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar, Union, cast

from . import _core, _io as io, _oniguruma as oniguruma
from ._base import BaseTokenizer, check_tiktoken_parts, of_checked_ranks
from ._counts import count
from ._patterns import PATTERNS, SUPERWORD_PATTERN, pattern_label, resolve_pattern
from ._training import Recipe, TrainedRanks, Training, check_texts

T = TypeVar("T", bound=BaseTokenizer)

# What docs/huggingface.md documents; the other functions serve Tokenizer's save, load and
# from_huggingface and the command line.
__all__ = ["train_from_iterator"]

TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"

GPT2_BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
"""The split pattern of HuggingFace's ``ByteLevel(use_regex=true)``, GPT-2's. It splits as the
``gpt2`` preset does: its contractions are the same alternatives in another order (none a prefix
of another), and ``\\s+(?!\\S)|\\s+`` leaves the same last whitespace character as
``\\s++$|\\s+(?!\\S)|\\s`` (tests/test_huggingface.py checks both on hostile text)."""


@lru_cache(maxsize=1)
def byte_level_alphabet() -> dict[int, str]:
    """GPT-2's byte-level alphabet: each byte as one printable character (HuggingFace's
    ``bytes_char``): the printable Latin-1 bytes as themselves, the others from U+0100 on.

    >>> alphabet = byte_level_alphabet()
    >>> alphabet[ord("a")], alphabet[ord(" ")], alphabet[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in alphabet:
            alphabet[b] = chr(256 + extra)
            extra += 1
    return alphabet


@lru_cache(maxsize=1)
def byte_level_table() -> dict[int, str]:
    """The byte-level alphabet as a ``str.translate`` table over the bytes read as Latin-1."""
    return dict(byte_level_alphabet())


def byte_level(token: bytes) -> str:
    """``token`` spelled in the byte-level alphabet (what HF's vocabulary and merges hold).

    >>> byte_level(b"a b")
    'aĠb'
    """
    return token.decode("latin-1").translate(byte_level_table())


@lru_cache(maxsize=1)
def byte_of_character() -> dict[str, int]:
    """The byte each character of the byte-level alphabet stands for."""
    return {c: b for b, c in byte_level_alphabet().items()}


def from_byte_level(text: str) -> Optional[bytes]:
    """The bytes that ``text`` spells in the byte-level alphabet, or None if a character of it
    is not in the alphabet."""
    chars = byte_of_character()
    try:
        return bytes([chars[c] for c in text])
    except KeyError:
        return None


# ------------------------------------------------------------------------------ export


def merges_of(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Every pair of tokens whose concatenation is a token, ordered by the rank of that token
    (then by the longer left part first): tiktoken merges any two adjacent parts whose
    concatenation has a rank, so HF needs them all to make the same merges."""
    merges = []
    for token, rank in ranks.items():
        for k in range(len(token) - 1, 0, -1):
            if token[:k] in ranks and token[k:] in ranks:
                merges.append((rank, -k, token[:k], token[k:]))
    merges.sort()
    return [(left, right) for _, _, left, right in merges]


def merged(piece: bytes, key: Callable[[bytes, bytes], Optional[int]]) -> list[bytes]:
    """The parts of ``piece`` once every byte starts as a part and the two adjacent parts of
    lowest ``key`` (None: never merged) are merged, the leftmost of equals, until no two have
    a key: tiktoken's loop and HuggingFace's, with a heap of candidate pairs."""
    n = len(piece)
    if n < 2:
        return [piece]
    ends = list(range(1, n + 1))  # where the part starting at i ends (only for live starts)
    prev = list(range(-1, n - 1))
    alive = [True] * n
    heap = []
    for i in range(n - 1):
        k = key(piece[i : i + 1], piece[i + 1 : i + 2])
        if k is not None:
            heap.append((k, i, i + 1, i + 2))
    heapq.heapify(heap)
    while heap:
        k, start, middle, end = heapq.heappop(heap)
        if not (alive[start] and alive[middle] and ends[start] == middle and ends[middle] == end):
            continue  # one of the two parts was merged away since
        alive[middle] = False
        ends[start] = end
        if end < n:
            prev[end] = start
            following = ends[end]
            k2 = key(piece[start:end], piece[end:following])
            if k2 is not None:
                heapq.heappush(heap, (k2, start, end, following))
        if prev[start] >= 0:
            before = prev[start]
            k2 = key(piece[before:start], piece[start:end])
            if k2 is not None:
                heapq.heappush(heap, (k2, before, start, end))
    return [piece[i : ends[i]] for i in range(n) if alive[i]]


def merged_by_rank(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The tokens of ``piece`` by tiktoken's rule: a piece that is a token whole, else merge the
    two adjacent parts whose concatenation has the lowest rank, the leftmost of equals."""
    return [piece] if piece in ranks else merged(piece, lambda a, b: ranks.get(a + b))


def merged_by_list(piece: bytes, priority: dict[tuple[bytes, bytes], int], whole: Optional[dict[bytes, int]]) -> list[bytes]:
    """The tokens of ``piece`` by HuggingFace's BPE: merge the adjacent pair listed first in
    the merges (``priority``: pair -> place), the leftmost of equals; with ``whole`` (the
    vocabulary, when ``ignore_merges`` is on) a piece that is a token is taken whole."""
    if whole is not None and piece in whole:
        return [piece]
    return merged(piece, lambda a, b: priority.get((a, b)))


def tie_contexts(ranks: dict[bytes, int], merges: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The byte strings where HF's order of merges could part from tiktoken's (see
    :func:`check_merges_agree`): for a token T made in two ways, T's two ways overlapping
    (``X+Y+Z`` where ``X+Y`` and ``Y+Z`` are both T), and T beside a token U ranked before T
    that T makes with a neighbour X (``U = T+X`` or ``X+T``): ``T+U`` and ``U+T``."""
    ways: dict[bytes, list[tuple[bytes, bytes]]] = {}
    for left, right in merges:
        ways.setdefault(left + right, []).append((left, right))
    several = {token for token, pairs in ways.items() if len(pairs) > 1}
    contexts = []
    for token in several:
        for left, right in ways[token]:
            if token.startswith(right) and (right, token[len(right) :]) in ways[token]:
                contexts.append(left + token)  # X + Y + Z: (X, Y) and (Y, Z) both make the token
    for left, right in merges:
        made = left + right
        for part in (left, right):
            if part in several and ranks[made] < ranks[part]:
                contexts += [part + made, made + part]  # T beside U = T+X (or X+T): two T's, one merged on
    return contexts


def check_merges_agree(
    ranks: dict[bytes, int], merges: list[tuple[bytes, bytes]], tiktoken_piece: Optional[Callable[[bytes], list[int]]] = None
) -> None:
    """Raises ValueError where HF's merge loop, given ``merges``, could encode a span otherwise
    than tiktoken does with ``ranks``.

    Both merge the adjacent pair of lowest key first, leftmost on ties; tiktoken's key is the
    rank of the token the pair makes, HF's the pair's place in the merge list. The two orders
    agree between pairs making different tokens (the list is sorted by the rank made) and for
    one pair at several places; they can differ only between two *different* pairs making one
    token T, ready at once: HF takes the one listed first, tiktoken the leftmost. That order is
    free unless (1) the two overlap, ``X+Y`` and ``Y+Z`` both T, or (2) a merge of T makes, with
    a neighbour, a token ranked before T, merged before the other T. So a vocabulary where no
    token is made two ways is exported as proved; otherwise both loops are run on each context
    of (1) and (2) (:func:`tie_contexts`) and must agree. ``tiktoken_piece`` encodes a span
    with tiktoken (``Encoding._encode_single_piece``); without it, :func:`merged_by_rank`."""
    priority: dict[tuple[bytes, bytes], int] = {}
    for i, pair in enumerate(merges):
        priority.setdefault(pair, i)
    token_of = {rank: token for token, rank in ranks.items()}
    for context in sorted(set(tie_contexts(ranks, merges)), key=lambda c: (len(c), c)):
        theirs = merged_by_list(context, priority, ranks)
        if tiktoken_piece is None:
            ours = merged_by_rank(context, ranks)
        else:
            ours = [token_of[i] for i in tiktoken_piece(context)]
        if ours != theirs:
            raise ValueError(
                f"cannot export: HuggingFace's BPE would split {context!r} as {theirs!r} where tiktoken gives {ours!r} "
                f"(a token made from two different pairs, merged in another order)"
            )


def oniguruma_regex(pattern: str) -> str:
    """``pattern`` (a preset) as HuggingFace's regex engine, Oniguruma in its Ruby syntax, must
    be given it to split alike. Possessive ``?+``, ``*+``, ``++`` mean the same in both engines;
    a possessive *interval* ``{1,3}+`` does not: Ruby reads it as ``({1,3})+``, any number of
    digits. Each preset has one only at the end of an alternative (``\\p{N}{1,3}+|``), where
    possessive and greedy match alike (nothing after it can fail and backtrack into it), so it
    is written greedy there.

    >>> oniguruma_regex(PATTERNS["cl100k_base"]) == PATTERNS["cl100k_base"].replace("{1,3}+|", "{1,3}|")
    True
    """
    return re.sub(r"(\{\d+,\d+\})\+(?=\||$)", r"\1", pattern)


def split_step(pattern: str) -> dict[str, Any]:
    """The ``Split`` pre-tokenizer (its JSON) that splits text in HuggingFace as ``pattern``
    (bpeforge's regex) does with tiktoken, or :class:`~bpeforge._oniguruma.NotPortable` (a
    ValueError) naming the first construct HuggingFace's regex engine is not checked to match
    alike. A preset's or the superword pattern's regex is written as reviewed (see
    :func:`oniguruma_regex`; the superword pattern's look-around, ``{2,}`` and ``[\\s\\S]`` mean
    the same in both engines, as tests/test_superword.py checks on generated text); a custom
    one is translated (:func:`bpeforge._oniguruma.to_oniguruma`). Behavior ``Isolated`` (each
    match a piece, and the text between matches a piece too) where the pattern is sure to leave
    no text unmatched; otherwise ``Removed`` with the pattern inverted, which drops that text
    as tiktoken does."""
    if pattern_label(pattern) != "custom regex":
        return {"type": "Split", "pattern": {"Regex": oniguruma_regex(pattern)}, "behavior": "Isolated", "invert": False}
    regex = oniguruma.to_oniguruma(pattern)
    if oniguruma.matches_every_character(pattern):
        return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Removed", "invert": True}


def check_special_spelling(name: str, vocab: dict[str, int]) -> None:
    """Raises ValueError if special token ``name`` in HF's vocabulary could stand for text other
    than itself: a name whose characters all are in the byte-level alphabet reads as the bytes
    they spell, which must then be its own UTF-8 (``<|bos|>`` is; ``Ġx`` would be `` x``)."""
    spelled = from_byte_level(name)
    if spelled is not None and spelled != name.encode("utf-8"):
        raise ValueError(
            f"cannot export: special token {name!r} reads in the byte-level alphabet as the text {spelled!r}, which "
            f"HuggingFace would then encode as that special token"
        )
    if name in vocab:
        raise ValueError(f"cannot export: special token {name!r} is spelled like a rank's token in the byte-level alphabet")


def to_huggingface(tokenizer: BaseTokenizer) -> dict[str, Any]:
    """The ``tokenizer.json`` of ``tokenizer`` (as a dict), or ValueError for what HF cannot
    encode as tiktoken does (see the module docstring)."""
    try:
        split = split_step(tokenizer.pattern)
    except ValueError as e:
        raise ValueError(f"cannot export: {e}") from None
    ranks = tokenizer.mergeable_ranks
    try:
        check_tiktoken_parts(ranks, tokenizer.pattern, tokenizer.special_tokens)  # one wrapped by from_encoding is unchecked
    except ValueError as e:
        raise ValueError(f"cannot export: {e}") from None
    # merges_of and check_merges_agree's test on tie_contexts, run by the compiled core (on every
    # save: in Python they took most of a save's time; tests/test_huggingface.py checks both agree).
    merges, disagreement = _core.huggingface_merges(list(ranks.items()))
    if disagreement is not None:
        context, theirs, ours = disagreement
        raise ValueError(
            f"cannot export: HuggingFace's BPE would split {context!r} as {theirs!r} where tiktoken gives {ours!r} "
            f"(a token made from two different pairs, merged in another order)"
        )
    vocab = {byte_level(token): rank for token, rank in ranks.items()}
    added = []
    for name, special_id in sorted(tokenizer.special_tokens.items(), key=lambda x: x[1]):
        check_special_spelling(name, vocab)
        vocab[name] = special_id  # HF places an added token at its vocabulary id, if it has one
        added.append(
            {"id": special_id, "content": name, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        )
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                split,
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": dict(sorted(vocab.items(), key=lambda x: x[1])),
            "merges": [f"{byte_level(left)} {byte_level(right)}" for left, right in merges],
        },
    }


CHAT_TEMPLATE = (
    "{%- set ns = namespace(system='') -%}"
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- set ns.system = message['content'] + '\\n\\n' -%}"
    "{%- elif message['role'] == 'user' -%}"
    "{{- '<|user_start|>' + ns.system + message['content'] + '<|user_end|>' -}}"
    "{%- set ns.system = '' -%}"
    "{%- elif message['role'] == 'assistant' -%}"
    "{{- '<|assistant_start|>' -}}"
    "{%- if message['content'] is string -%}"
    "{{- message['content'] -}}"
    "{%- else -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'python' -%}"
    "{{- '<|python_start|>' + part['text'] + '<|python_end|>' -}}"
    "{%- elif part['type'] == 'python_output' -%}"
    "{{- '<|output_start|>' + part['text'] + '<|output_end|>' -}}"
    "{%- else -%}"
    "{{- part['text'] -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{- '<|assistant_end|>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|assistant_start|>' -}}"
    "{%- endif -%}"
)
"""nanochat's chat format as a Jinja template for ``transformers``' ``apply_chat_template``:
the text whose encoding (special tokens recognized, as ``apply_chat_template`` encodes) gives
:func:`bpeforge._chat.render_conversation`'s ids, for conversations whose texts hold no special
token's name and whose assistant parts do not put two text parts side by side (bpeforge
encodes each part alone); ``add_generation_prompt`` ends it with ``<|assistant_start|>``, as
:func:`bpeforge._chat.render_for_completion` does."""


def transformers_config(tokenizer: BaseTokenizer) -> dict[str, Any]:
    """``tokenizer_config.json`` for ``transformers.AutoTokenizer``: a fast tokenizer, the bos,
    eos and pad tokens where the tokenizer has them (pad: a dedicated ``<|pad|>``, else the eos
    token), nanochat's chat template when it has nanochat's special tokens, no added prefix
    space or cleanup of spaces (either would change the text), and every special token at its
    id (reserved ones included), as transformers lists them in ``added_tokens_decoder``."""
    from ._base import NANOCHAT_SPECIAL_TOKENS

    specials = tokenizer.special_tokens
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "add_prefix_space": False,
        "model_max_length": 1_000_000_000_000_000_019_884_624_838_656,  # transformers' "no limit"
        "added_tokens_decoder": {
            str(i): {"content": name, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
            for name, i in sorted(specials.items(), key=lambda item: item[1])
        },
    }
    roles = (
        ("bos_token", ("<|bos|>", "<|endoftext|>")),
        ("eos_token", ("<|eos|>", "<|assistant_end|>", "<|endoftext|>")),
        ("pad_token", ("<|pad|>", "<|eos|>", "<|assistant_end|>", "<|endoftext|>")),
    )
    for role, candidates in roles:
        found = next((name for name in candidates if name in specials), None)
        if found is not None:
            config[role] = found
    if all(name in specials for name in NANOCHAT_SPECIAL_TOKENS):
        config["chat_template"] = CHAT_TEMPLATE
    return config


def huggingface_files(tokenizer: BaseTokenizer) -> dict[str, bytes]:
    """``{name: contents}`` of ``tokenizer.json`` and ``tokenizer_config.json`` for ``tokenizer``,
    or ValueError if HF could not encode as tiktoken does (see the module docstring)."""
    data = json.dumps(to_huggingface(tokenizer), ensure_ascii=False) + "\n"  # compact: C encoder, 4x faster than indented
    config = json.dumps(transformers_config(tokenizer), indent=2, ensure_ascii=False) + "\n"
    return {TOKENIZER_FILE: data.encode("utf-8"), CONFIG_FILE: config.encode("utf-8")}


LONGEST_TOKEN_SAVED = 1024
"""The longest token (in bytes) for which :meth:`bpeforge.Tokenizer.save` writes HuggingFace's
files unasked: finding every pair that makes a token, and checking HF's merge order, take time
quadratic in a token's length (a tokenizer trained on a 5 MB run of spaces has a 5 MB token).
:meth:`~bpeforge.Tokenizer.save_huggingface` and ``bpeforge export`` have no such limit."""


def saved_files(tokenizer: BaseTokenizer, *, extra_files: Optional[dict] = None, require_huggingface: bool = False) -> dict:
    """``{name: contents}`` of the saved folder of ``tokenizer`` (:func:`bpeforge._io.saved_files`)
    with HuggingFace's ``tokenizer.json`` and ``tokenizer_config.json``, which are left out when
    HuggingFace cannot encode as tiktoken does (e.g. a custom split pattern) or a token is longer
    than :data:`LONGEST_TOKEN_SAVED` bytes; ``require_huggingface``: always written, or ValueError."""
    hf: dict = {}
    if require_huggingface or max(map(len, tokenizer.mergeable_ranks), default=0) <= LONGEST_TOKEN_SAVED:
        try:
            hf = huggingface_files(tokenizer)
        except ValueError:
            if require_huggingface:
                raise
    return io.saved_files(tokenizer, extra_files={**hf, **(extra_files or {})})


def save_folder(
    tokenizer: BaseTokenizer, directory: Union[str, os.PathLike], *, extra_files: Optional[dict] = None, require_huggingface: bool = False
) -> None:
    """:func:`bpeforge._io.save` with HuggingFace's files (:func:`saved_files`): the folder
    :meth:`bpeforge.Tokenizer.save` writes."""
    io.check_save_path(directory)
    io.write_saved(Path(directory), saved_files(tokenizer, extra_files=extra_files, require_huggingface=require_huggingface))
    io.forget_tiktoken_cache(os.path.join(os.fspath(directory), io.RANKS_FILE))  # the caller's spelling, `./` and all


def save_huggingface(tokenizer: BaseTokenizer, directory: Union[str, os.PathLike]) -> None:
    """Writes the folder ``directory`` as :meth:`bpeforge.Tokenizer.save` does (the same files,
    switched in one step), or raises ValueError before writing anything if HF could not encode
    as tiktoken does: HuggingFace's ``tokenizer.json`` and ``tokenizer_config.json`` are then
    always there."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"cannot export to {os.fspath(directory)!r}: it is a file, and a HuggingFace tokenizer is a folder")
    save_folder(tokenizer, directory, require_huggingface=True)


# ------------------------------------------------------------------------------ import


class NotRepresentable(ValueError):
    """A ``tokenizer.json`` that a tiktoken-model tokenizer cannot reproduce exactly."""


def read_json(path: Union[str, os.PathLike]) -> tuple[Path, dict[str, Any]]:
    """(the file, its JSON) for ``path``: a ``tokenizer.json`` or a folder holding one, read
    whole by Python's ``json`` (:func:`from_huggingface` reads with :func:`read_tokenizer_file`)."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file (expected a HuggingFace tokenizer.json or a folder holding one)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise NotRepresentable(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise nested_too_deeply(path) from None
    check_tokenizer_json(path, data)
    return path, data


def nested_too_deeply(path: Path) -> NotRepresentable:
    return NotRepresentable(f"{path}: not a HuggingFace tokenizer.json (its JSON is nested too deeply to read)")


def check_tokenizer_json(path: Path, data: Any) -> None:
    """Raises :class:`NotRepresentable` unless ``data`` (a file's JSON) is a HuggingFace
    tokenizer's: an object with a ``"model"`` object, and no bpeforge config."""
    if isinstance(data, dict) and data.get("format") == "bpeforge":
        raise NotRepresentable(f"{path}: a bpeforge tokenizer's config, not HuggingFace's tokenizer.json: read it with Tokenizer.load")
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise NotRepresentable(f"{path}: not a HuggingFace tokenizer.json (no \"model\")")


def read_tokenizer_file(path: Union[str, os.PathLike]) -> tuple[Path, dict[str, Any], _core.HuggingfaceModel]:
    """(the file, its JSON but for the model's vocabulary and merges, those two read by the
    compiled core) for ``path``: a ``tokenizer.json`` or a folder holding one; the errors of
    :func:`read_json`. The file's bytes are held while they are read, never a Python object per
    entry (what ``json.loads`` makes of millions of entries weighs ten times the file)."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_FILE
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file (expected a HuggingFace tokenizer.json or a folder holding one)") from None
    data, read, problem = _core.read_tokenizer_json(text)
    del text
    if problem is not None:
        kind, detail = problem
        if kind == "nested":
            raise nested_too_deeply(path)
        try:  # Python's json, which the file's errors were always named by, names this one
            json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise NotRepresentable(f"{path}: not valid JSON ({e})") from None
        except RecursionError:
            raise nested_too_deeply(path) from None
        if "escape" in detail:  # Python's json reads "\ud800"; no UTF-8 text can hold it
            raise NotRepresentable(
                f"{path}: cannot read as a tiktoken-style tokenizer: it holds a lone surrogate escape (such as \\ud800), "
                f"which is no character: text cannot hold it ({detail})"
            )
        raise NotRepresentable(f"{path}: not valid JSON ({detail})")  # what Python reads but JSON forbids (NaN, 1e999)
    check_tokenizer_json(path, data)
    assert data is not None and read is not None  # (a "model" object is read with its vocabulary and merges)
    return path, data, read


def split_pattern(pre_tokenizer: Any) -> Optional[str]:
    """The split pattern ``pre_tokenizer`` amounts to, when it is a byte-level one tiktoken can
    follow exactly; None otherwise, and ValueError for a ``Split`` whose regex or behavior
    cannot be followed (see :func:`pattern_of_split`)."""
    if not isinstance(pre_tokenizer, dict):
        return None
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel" and not pre_tokenizer.get("add_prefix_space") and pre_tokenizer.get("use_regex", True):
        return PATTERNS["gpt2"]
    if kind != "Sequence":
        return None
    steps = pre_tokenizer.get("pretokenizers") or []
    if len(steps) != 2:
        return None
    split, byte_step = steps
    if not (
        isinstance(split, dict) and split.get("type") == "Split"
        and isinstance(byte_step, dict) and byte_step.get("type") == "ByteLevel"
        and not byte_step.get("add_prefix_space") and byte_step.get("use_regex") is False
    ):
        return None
    return pattern_of_split(split)


def pattern_of_split(split: dict[str, Any]) -> str:
    """The regex (bpeforge's spelling) with which tiktoken's splitting, which drops text the
    pattern does not match, cuts text as HuggingFace's ``Split`` step ``split`` (its JSON) does:
    behavior ``Isolated`` (the text between matches a piece too) or ``Removed`` inverted (that
    text dropped). The regex is a preset's (or the superword pattern's, or GPT-2's own) in
    HuggingFace's spelling, or one of the constructs :mod:`bpeforge._oniguruma` lists, read as
    Oniguruma reads it; with ``Isolated``, unless it is sure to leave no text unmatched, the
    text between matches becomes a match of its own (:func:`bpeforge._oniguruma.with_unmatched_text`).
    ValueError naming what is not reproduced."""
    regex = (split.get("pattern") or {}).get("Regex")
    if not isinstance(regex, str):
        raise ValueError(f"a Split on a literal string ({split.get('pattern')!r}): only a regex (tokenizers.Regex(...)) is reproduced")
    behavior, invert = split.get("behavior"), bool(split.get("invert"))
    isolated = behavior == "Isolated" and not invert
    if not isolated and not (behavior == "Removed" and invert):
        raise ValueError(f"a Split with behavior={behavior!r}, invert={invert!r}: only 'isolated', or 'removed' inverted, is reproduced")
    if regex == GPT2_BYTE_LEVEL_PATTERN:
        return PATTERNS["gpt2"]
    known = next((known for known in (*PATTERNS.values(), SUPERWORD_PATTERN) if oniguruma_regex(known) == regex), None)
    if known is not None:
        return known  # (each matches every character: isolated or not, the same pieces)
    pattern = oniguruma.from_oniguruma(regex)
    if isolated and not oniguruma.matches_every_character(pattern):
        pattern = oniguruma.with_unmatched_text(pattern)
    return pattern


def pattern_of_model(data: dict[str, Any], refuse: Callable[[str], Exception]) -> str:
    """The split pattern of the HuggingFace tokenizer whose JSON is ``data`` (its model, vocabulary
    and merges aside), or ``refuse(reason)`` raised for what tiktoken's model cannot reproduce:
    a model other than BPE or with options tiktoken lacks, a normalizer, a pre-tokenizer other
    than a byte-level one bpeforge reproduces, another decoder or post-processor."""
    model = data["model"]
    if model.get("type") != "BPE":
        raise refuse(f"the model is {model.get('type')!r}, not BPE")
    if data.get("normalizer") is not None:
        raise refuse(f"it has a normalizer ({data['normalizer'].get('type')!r}), which changes the text before splitting")
    for key in ("dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise refuse(f"the BPE model sets {key} = {model[key]!r}")
    if model.get("byte_fallback"):
        raise refuse("the BPE model uses byte_fallback (not a byte-level BPE)")
    try:
        pattern = split_pattern(data.get("pre_tokenizer"))
    except ValueError as e:
        raise refuse(f"its pre-tokenizer's Split: {e}") from None
    if pattern is None:
        raise refuse(
            "its pre-tokenizer is not a byte-level one bpeforge reproduces: GPT-2's ByteLevel (use_regex, no prefix "
            "space) or a Split (Isolated, or Removed inverted) followed by ByteLevel(use_regex=false, add_prefix_space=false)"
        )
    decoder = data.get("decoder")
    if decoder is not None and decoder.get("type") != "ByteLevel":
        raise refuse(f"its decoder is {decoder.get('type')!r}, not ByteLevel")
    post = data.get("post_processor")
    if post is not None and post.get("type") != "ByteLevel":
        raise refuse(f"its post-processor ({post.get('type')!r}) adds tokens that encoding text does not give")
    return pattern


def special_tokens_of(data: dict[str, Any], refuse: Callable[[str], Exception]) -> dict[str, int]:
    """The special tokens (name -> id) of the HuggingFace tokenizer whose JSON is ``data``, or
    ``refuse(reason)`` raised for an added token tiktoken's model cannot reproduce."""
    added_tokens = data.get("added_tokens") or []
    if not (isinstance(added_tokens, list) and all(
        isinstance(a, dict) and isinstance(a.get("content"), str) and type(a.get("id")) is int for a in added_tokens
    )):
        raise refuse("\"added_tokens\" is not a list of tokens with a content and an integer id")
    specials: dict[str, int] = {}
    for added in added_tokens:
        if not added.get("special"):
            raise refuse(f"added token {added.get('content')!r} (id {added.get('id')}) is not special: HF splits it out of text, tiktoken's ranks cannot")
        if added.get("single_word") or added.get("lstrip") or added.get("rstrip"):
            raise refuse(f"special token {added.get('content')!r} has single_word/lstrip/rstrip set")
        specials[added["content"]] = added["id"]
    return specials


def from_huggingface(path: Union[str, os.PathLike], tokenizer_class: type[T]) -> T:
    """A ``tokenizer_class`` from a HuggingFace ``tokenizer.json`` (or a folder holding one),
    encoding text with HF's ids. Raises :class:`NotRepresentable` (a ValueError) naming what
    tiktoken's model cannot reproduce.

    The file's small parts are checked here; its vocabulary and merges (millions of entries in
    a large vocabulary) are read and checked by the compiled core, which hands back the ranks as
    one dict (:func:`bpeforge._core.read_tokenizer_json`): each vocabulary entry is spelled in
    the byte-level alphabet or is a special token at its id; every single byte is a token; the
    ids follow tiktoken's model (:func:`bpeforge._core.check_ranks`); each merge joins two
    tokens into a token, in the order of the ids made (HF merges by the place in the list,
    tiktoken by the id made); every token of more than one byte is made by some merge (HF
    reaches a token no merge makes only as a whole span); and without ``ignore_merges`` (HF then
    merges a span that is a token like any other), merging each token's bytes by the merges
    gives that token. (A pair of tokens that is no merge but makes a token, which tiktoken would
    merge and HF not, is argued never to meet in ``docs/huggingface.md`` for merges made by
    training, and tested.)"""
    path, data, read = read_tokenizer_file(path)

    def refuse(reason: str) -> NotRepresentable:
        return NotRepresentable(f"{path}: cannot read as a tiktoken-style tokenizer: {reason}")

    model = data["model"]
    pattern = pattern_of_model(data, refuse)
    if not read.vocab_is_mapping:
        raise refuse("the model's \"vocab\" is not a mapping of token to integer id")
    if not read.merges_is_list:
        raise refuse("the model's \"merges\" is not a list")
    specials = special_tokens_of(data, refuse)
    try:
        ranks = read.ranks(specials, bool(model.get("ignore_merges")))
    except ValueError as e:
        raise refuse(str(e)) from None
    del read  # (the vocabulary and merges read are let go of once they are ranks)
    try:
        # (checked by the reading: kept as they are, not copied and checked again)
        return of_checked_ranks(tokenizer_class, ranks, pattern, specials, name=path.parent.name or "huggingface")
    except ValueError as e:
        raise refuse(str(e)) from None


# ------------------------------------------------------------------------------ training

# Training with HuggingFace ``tokenizers``' own objects: :func:`train_from_iterator` takes a
# ``tokenizers.Tokenizer`` and a ``BpeTrainer`` and leaves the tokenizer as
# ``tokenizer.train_from_iterator(texts, trainer=trainer)`` would (``tokenizer.to_str()`` equal as
# JSON), training with bpeforge's recipe and HuggingFace's tie-break
# (``tie_break="huggingface"``, see :mod:`bpeforge._training`).
#
# What is reproduced, and how (``docs/huggingface.md`` gives the arguments):
#
# - the pre-tokenizer: ``ByteLevel`` (its regex is GPT-2's, bpeforge's ``gpt2`` preset; without
#   it, each text is one span), or ``Sequence([Split(Regex(p), behavior="isolated"),
#   ByteLevel(use_regex=False)])`` with ``p`` the HuggingFace spelling of one of bpeforge's
#   presets or a regex of the constructs :mod:`bpeforge._oniguruma` lists (also with
#   ``behavior="removed", invert=True``); ``add_prefix_space`` puts a space before each text (each
#   piece of a ``Split``) that does not start with one;
# - the trainer's options: ``vocab_size``, ``min_frequency``, ``special_tokens``,
#   ``initial_alphabet`` (characters of the byte-level alphabet), ``limit_alphabet``,
#   ``max_token_length`` and ``show_progress`` (bpeforge's progress on stderr);
# - ``max_token_length``: HuggingFace counts a pair made with a merged token only if its token has
#   fewer than ``max_token_length`` characters (one per byte here), while a pair of two single
#   characters is always counted; in bpeforge's words (at most N bytes), N = max(that - 1, 2).
#
# Anything else (another model, a normalizer, a pre-tokenizer or regex outside that list,
# ``continuing_subword_prefix``, ``end_of_word_suffix``, added tokens already in the tokenizer) is
# refused with a ValueError naming it, never trained otherwise. ``tokenizers`` is imported only
# when called.

# A span per text: ByteLevel without its regex splits nothing.
WHOLE_TEXT = r"[\s\S]+"

# HuggingFace's pair counts are 32-bit signed integers.
HF_PAIR_COUNT_LIMIT = 1 << 31


class TextSplit:
    """How texts are cut into spans for HuggingFace's pre-tokenizer: bpeforge's ``pattern``,
    and whether a space goes before each text (``prefix_text``) or each span (``prefix_span``)
    that does not start with one."""

    def __init__(self, pattern: str, prefix_text: bool = False, prefix_span: bool = False) -> None:
        self.pattern = pattern
        self.prefix_text = prefix_text
        self.prefix_span = prefix_span


def cannot_reproduce(what: str) -> ValueError:
    return ValueError(f"bpeforge.huggingface.train_from_iterator cannot reproduce {what}")


def preset_of_regex(regex: str) -> Optional[str]:
    """The preset whose HuggingFace (Oniguruma) spelling is ``regex``, or None (a preset's own
    spelling, where it differs, splits otherwise in HuggingFace's engine: see
    :func:`oniguruma_regex`)."""
    return next((name for name, pattern in PATTERNS.items() if oniguruma_regex(pattern) == regex), None)


def split_of(pre_tokenizer: Optional[dict[str, Any]]) -> TextSplit:
    """The :class:`TextSplit` of a tokenizer's pre-tokenizer (its JSON form), or ValueError naming
    what is not supported."""
    if pre_tokenizer is None:
        raise cannot_reproduce("a tokenizer without a pre-tokenizer (give it pre_tokenizers.ByteLevel())")
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel":
        pattern = "gpt2" if pre_tokenizer.get("use_regex", True) else WHOLE_TEXT
        return TextSplit(pattern, prefix_text=bool(pre_tokenizer.get("add_prefix_space")))
    if kind == "Sequence":
        steps = pre_tokenizer.get("pretokenizers") or []
        if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel":
            split, level = steps
            if level.get("use_regex", True):
                raise cannot_reproduce("a ByteLevel with its regex after a Split (give it use_regex=False)")
            regex = (split.get("pattern") or {}).get("Regex")
            preset = None if regex is None else preset_of_regex(regex)
            try:
                pattern = preset or pattern_of_split(split)
            except oniguruma.NotPortable as e:
                raise cannot_reproduce(f"the Split regex: {e}") from None
            except ValueError as e:
                raise cannot_reproduce(str(e)) from None
            return TextSplit(pattern, prefix_span=bool(level.get("add_prefix_space")))
    raise cannot_reproduce(f"the pre-tokenizer {json.dumps(pre_tokenizer)[:200]}: only ByteLevel, or Sequence([Split(Regex(...), behavior='isolated'), ByteLevel(use_regex=False)])")


def recipe_and_split(tokenizer: Any, trainer: Any) -> tuple[Recipe, TextSplit]:
    """The recipe and the split that train what ``trainer`` trains for ``tokenizer``, both HF's
    objects, or ValueError naming what cannot be reproduced."""
    from tokenizers import trainers

    if not isinstance(trainer, trainers.BpeTrainer):
        raise cannot_reproduce(f"a {type(trainer).__name__}: only a tokenizers.trainers.BpeTrainer or ParityBpeTrainer")
    split = tokenizer_split(tokenizer)
    specials, initial = trainer_alphabet(trainer)
    length = trainer.max_token_length
    recipe = Recipe(
        trainer.vocab_size,
        pattern=split.pattern,
        special_tokens=specials,
        min_frequency=max(trainer.min_frequency, 1),  # HuggingFace's 0 and 1 are alike
        max_token_length=None if length is None else max(length - 1, 2),
        tie_break="huggingface",
        initial_alphabet=initial or None,
        limit_alphabet=trainer.limit_alphabet,
    )
    return recipe, split


def tokenizer_split(tokenizer: Any) -> TextSplit:
    """How ``tokenizer`` (HF's) cuts texts into spans for training, or ValueError naming what
    cannot be reproduced (another model, a normalizer, added tokens, the pre-tokenizer)."""
    config = json.loads(tokenizer.to_str())
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        raise cannot_reproduce(f"a {model.get('type')} model: only models.BPE")
    if config.get("normalizer") is not None:
        raise cannot_reproduce(f"the normalizer {config['normalizer'].get('type')} (bpeforge trains on the text as it is)")
    if config.get("added_tokens"):
        raise cannot_reproduce("a tokenizer that already has added tokens (HuggingFace keeps their old ids): start from a new Tokenizer")
    return split_of(config.get("pre_tokenizer"))


def trainer_alphabet(trainer: Any) -> tuple[list[str], list[int]]:
    """The special tokens (each once) and the initial alphabet's bytes of ``trainer`` (HF's
    ``BpeTrainer`` or ``ParityBpeTrainer``), or ValueError naming what cannot be reproduced."""
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if getattr(trainer, option, None):
            raise cannot_reproduce(f"the trainer's {option}={getattr(trainer, option)!r}")
    specials: list[str] = []
    for token in trainer.special_tokens:
        content = token.content
        if content not in specials:  # HuggingFace numbers a repeated special token once
            specials.append(content)
        if content in byte_of_character():
            raise cannot_reproduce(f"the special token {content!r}, a single byte-level character (HuggingFace gives that byte its id)")
    initial = []
    for char in trainer.initial_alphabet:
        if char not in byte_of_character():
            raise cannot_reproduce(f"the initial_alphabet character {char!r}, outside the byte-level alphabet (no byte-level text holds it)")
        initial.append(byte_of_character()[char])
    return specials, initial


def with_prefix_space(texts: Iterable[Any]) -> Iterator[Any]:
    """``texts`` (str or lists of str) with a space before each non-empty text that does not
    start with one, as ``ByteLevel(add_prefix_space=True)`` does."""
    for item in texts:
        if isinstance(item, str):
            yield item if item == "" or item.startswith(" ") else " " + item
        elif isinstance(item, (list, tuple)):
            yield [t if not isinstance(t, str) or t == "" or t.startswith(" ") else " " + t for t in item]
        else:
            raise TypeError(f"with add_prefix_space, items must be str or lists of str, got {type(item).__name__}")


def trained_ranks(recipe: Recipe, split: TextSplit, texts: Iterable[Any], *, progress: Any = False, num_threads: Optional[int] = None) -> TrainedRanks:
    """The training of ``recipe`` on ``texts`` cut as ``split`` says."""
    check_texts(texts)
    if split.prefix_text:
        texts = with_prefix_space(texts)
    training = Training(recipe, num_threads=num_threads)
    if not split.prefix_span:
        return training.run(texts, progress=progress)
    counts: dict[bytes, int] = {}
    for span, n in count(texts, pattern=recipe.pattern, num_threads=num_threads).items():
        if not span.startswith(b" "):
            span = b" " + span
        counts[span] = counts.get(span, 0) + n
    return training.run(counts=counts, progress=progress)


def huggingface_model(trained: TrainedRanks) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The vocabulary and merges of a training with HuggingFace's tie-break, spelled in the
    byte-level alphabet; ValueError where HuggingFace would have numbered otherwise (a merged
    token spelled as a special token, which it would give the special token's id)."""
    vocab = {name: i for i, name in enumerate(trained.special_tokens)}
    for token, rank in trained.ranks.items():
        spelled = byte_level(token)
        if spelled in vocab:
            raise ValueError(
                f"the merged token {spelled!r} is spelled as a special token, whose id HuggingFace gives it: not reproduced"
            )
        vocab[spelled] = rank
    by_id = {rank: token for token, rank in trained.ranks.items()}
    merges = []
    for left, right, _, count in trained.merges():
        if count >= HF_PAIR_COUNT_LIMIT:
            warnings.warn(
                f"a merge counted {count:,} times, past HuggingFace's 32-bit pair counts (2^31-1): bpeforge counts it "
                "exactly, HuggingFace's count would have wrapped around (so its training differs from here on)",
                stacklevel=3,
            )
        merges.append((byte_level(by_id[left]), byte_level(by_id[right])))
    return vocab, merges


def huggingface_tokenizer_json(trained: TrainedRanks) -> dict[str, Any]:
    """The ``tokenizer.json`` (as a dict) that HuggingFace's training with the same recipe
    writes: a new ``Tokenizer(models.BPE())`` whose pre-tokenizer is
    ``Sequence([Split(Regex(p), behavior="isolated"), ByteLevel(add_prefix_space=False,
    use_regex=False)])`` (``p``: the recipe's pattern in HuggingFace's spelling) and whose
    decoder is ``ByteLevel()``, trained by a ``BpeTrainer`` with the recipe's options (for a
    custom pattern that may leave text unmatched, the ``Split`` is ``Removed`` inverted: see
    :func:`split_step`). What the command line writes for ``--tie-break huggingface``;
    ValueError for a custom pattern using a construct HuggingFace's regex engine is not checked
    to match alike."""
    split = split_step(trained.pattern)
    vocab, merges = huggingface_model(trained)
    added = [
        {"id": i, "content": name, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for i, name in enumerate(trained.special_tokens)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                split,
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(sorted(vocab.items(), key=lambda item: item[1])),
            "merges": [list(m) for m in merges],
        },
    }


def train_from_iterator(
    tokenizer: Any,
    iterator: Iterable[Any],
    trainer: Any = None,
    dev_iterators: Optional[list[Iterable[Any]]] = None,
    *,
    ratio: Optional[list[float]] = None,
    num_threads: Optional[int] = None,
) -> None:
    """Trains ``tokenizer`` (a ``tokenizers.Tokenizer`` with a BPE model) on ``iterator`` (str or
    lists of str) as ``trainer`` (a ``tokenizers.trainers.BpeTrainer``; None for its defaults)
    says, leaving it as ``tokenizer.train_from_iterator(iterator, trainer=trainer)`` would:
    the same vocabulary, merges and added tokens, the model's other fields kept. What cannot be
    reproduced is refused with a ValueError naming it, before any text is read (see the
    module's doc).

    With a ``ParityBpeTrainer``, ``iterator`` is a list of one iterable per language, and
    ``dev_iterators`` (one per language) or ``ratio`` (target compression rates, else the
    trainer's) drive the choice of each merge's language: ``tokenizer`` is left as
    ``trainer.train_from_iterator(tokenizer, iterator, dev_iterators=..., ratio=...)`` would
    leave it (see :func:`train_parity`).

    >>> from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    >>> tok = Tokenizer(models.BPE()); tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> train_from_iterator(tok, ["low lower lowest"] * 5, trainers.BpeTrainer(vocab_size=20, show_progress=False))
    >>> tok.get_vocab_size(), tok.encode("lowest").tokens
    (15, ['low', 'e', 'st'])
    """
    from tokenizers import models, trainers

    if isinstance(trainer, getattr(trainers, "ParityBpeTrainer", ())):
        train_parity(tokenizer, cast(list, iterator), trainer, dev_iterators, ratio=ratio, num_threads=num_threads)  # checked there
        return
    if dev_iterators is not None or ratio is not None:
        raise TypeError("dev_iterators and ratio go with a tokenizers.trainers.ParityBpeTrainer")
    if trainer is None:
        trainer = trainers.BpeTrainer()
    recipe, split = recipe_and_split(tokenizer, trainer)
    trained = trained_ranks(recipe, split, iterator, progress=bool(trainer.show_progress), num_threads=num_threads)
    vocab, merges = huggingface_model(trained)
    old = tokenizer.model
    tokenizer.model = models.BPE(
        vocab=vocab,
        merges=merges,
        dropout=old.dropout,
        unk_token=old.unk_token,
        fuse_unk=old.fuse_unk,
        byte_fallback=old.byte_fallback,
        ignore_merges=old.ignore_merges,
    )
    tokenizer.add_special_tokens(trainer.special_tokens)


# ------------------------------------------------------------------------------ parity-aware

# HuggingFace's ``ParityBpeTrainer`` (tokenizers 0.23) reproduced by a recipe with ``parity``
# (docs/parity.md): its ``variant`` ("base" or "window", with ``window_size`` and ``alpha``),
# ``global_merges``, ``ratio`` and dev sets, ``num_merges`` (merges, or with ``total_symbols``
# the whole vocabulary), and the options it shares with ``BpeTrainer``. Its ties are broken by
# the spellings of the tokens (tie_break="huggingface" with parity does so); its alphabet is
# found over the training and dev texts of every language.


def parity_recipe(trainer: Any, split: TextSplit, vocab_size: int) -> Recipe:
    """The recipe of ``trainer`` (a ``ParityBpeTrainer``) for ``vocab_size`` tokens in all."""
    state = trainer.__getstate__()
    specials, initial = trainer_alphabet(trainer)
    length = state["max_token_length"]
    window = state["variant"] == "window"
    return Recipe(
        vocab_size,
        pattern=split.pattern,
        special_tokens=specials,
        min_frequency=max(state["min_frequency"], 1),  # HuggingFace's 0 and 1 are alike
        max_token_length=None if length is None else max(length - 1, 2),
        tie_break="huggingface",
        initial_alphabet=initial or None,
        limit_alphabet=state["limit_alphabet"],
        parity=state["variant"],
        parity_window=state["window_size"] if window else None,
        parity_alpha=state["alpha"] if window else None,
        global_merges=state["global_merges"],
    )


def split_counts(split: TextSplit, texts: Iterable[Any], pattern: str, num_threads: Optional[int] = None) -> _core.SpanCounts:
    """The span counts of ``texts`` cut as ``split`` says (a space put before each text or
    span that does not start with one, if it says so)."""
    check_texts(texts)
    if split.prefix_text:
        texts = with_prefix_space(texts)
    counts = count(texts, pattern=pattern, num_threads=num_threads)
    if not split.prefix_span:
        return counts
    spaced: dict[bytes, int] = {}
    for span, n in counts.items():
        if not span.startswith(b" "):
            span = b" " + span
        spaced[span] = spaced.get(span, 0) + n
    return _core.SpanCounts.from_mapping(spaced, pattern=pattern)


def train_parity(
    tokenizer: Any,
    iterators: list[Iterable[Any]],
    trainer: Any,
    dev_iterators: Optional[list[Iterable[Any]]] = None,
    *,
    ratio: Optional[list[float]] = None,
    num_threads: Optional[int] = None,
) -> TrainedRanks:
    """Trains ``tokenizer`` as ``trainer.train_from_iterator(tokenizer, iterators,
    dev_iterators=dev_iterators, ratio=ratio)`` would (``trainer`` a ``ParityBpeTrainer``):
    the model replaced by the BPE trained (HuggingFace's defaults for its other fields), the
    special tokens added. ``ratio`` overrides the trainer's; both are ignored with dev sets (an
    empty list of them counts as none). Refusals as :func:`train_from_iterator`'s. Returns the
    training, whose ``parity_trace`` tells how each language fared."""
    from tokenizers import models

    split = tokenizer_split(tokenizer)
    parity_recipe(trainer, split, 0)  # the trainer's options checked before any text is read
    if isinstance(iterators, (str, bytes)) or not isinstance(iterators, (list, tuple)):
        raise TypeError(f"with a ParityBpeTrainer, the texts are a list of one iterable per language, got {type(iterators).__name__}")
    if not iterators:
        raise ValueError("train_iterators must not be empty: give one iterable of texts per language")
    if dev_iterators is not None and len(dev_iterators) not in (0, len(iterators)):
        raise ValueError(f"dev_iterators length ({len(dev_iterators)}) must match train_iterators length ({len(iterators)})")
    state = trainer.__getstate__()
    pattern = resolve_pattern(split.pattern)
    train = [split_counts(split, texts, pattern, num_threads) for texts in iterators]
    dev = [split_counts(split, texts, pattern, num_threads) for texts in dev_iterators] if dev_iterators else None
    if dev is None:
        ratio = ratio if ratio is not None else state["ratio"]
    else:
        ratio = None
    if ratio is not None and len(ratio) != len(train):
        raise ValueError(f"ratio length ({len(ratio)}) does not match number of languages ({len(train)})")
    specials, initial = trainer_alphabet(trainer)
    seen = set(initial)
    for counts in train + (dev or []):
        seen.update(counts.byte_set())
    limit = state["limit_alphabet"]
    alphabet = len(seen) if limit is None else min(len(seen), limit)
    merges = state["num_merges"]
    vocab_size = merges if state["total_symbols"] else len(specials) + alphabet + merges
    recipe = parity_recipe(trainer, split, vocab_size)
    trained = Training(recipe, num_threads=num_threads).run(counts=train, dev=dev, ratio=ratio, progress=bool(state["show_progress"]))
    vocab, merge_list = huggingface_model(trained)
    tokenizer.model = models.BPE(vocab=vocab, merges=merge_list)
    tokenizer.add_special_tokens(trainer.special_tokens)
    return trained
