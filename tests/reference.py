"""A slow, deliberately naive pure-Python reference of the bpeforge training specification.

It shares no code with bpeforge: splitting is done by the ``regex`` PyPI package, and every
merge step recounts every pair of every span from scratch. It is meant to be obviously correct,
not fast; keep the corpora you feed it small.

The specification:

1. Split each text with ``regex.findall(pattern, text)``; count each distinct non-empty span.
2. Each distinct span starts as its UTF-8 bytes, token ids 0..255 (id i < 256 is ``bytes([i])``).
3. Loop: the count of a pair (a, b) is the sum over spans of (span count x number of adjacent
   positions holding (a, b)); overlapping positions both count. Pick the pair with the highest
   count; among equal counts the smallest (a, b) tuple. Its bytes are bytes(a) + bytes(b): if
   those are not yet a token they become one with the next id, else the existing id is reused
   (no new rank). Replace (a, b) left to right, non-overlapping, in every span by that id.
   With a maximum token length, only pairs with len(bytes(a)) + len(bytes(b)) <= max_token_length
   are considered at all; with a maximum of words, only pairs whose bytes hold at most that many
   runs of bytes other than the space (b" ").
4. Stop when the number of tokens reaches vocab_size, no pair is left, or the best count is
   below min_frequency.
5. Output the ranks (token_bytes, id) for ids 0..n-1, and the merges (a, b, id, count).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, List, Optional, Tuple

import regex

# The GPT-4 (cl100k_base-style) split pattern, written out here independently of bpeforge so
# that the reference does not take its default from the code under test. test_reference.py
# checks that it equals bpeforge._core.DEFAULT_PATTERN.
GPT4_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)


# The superword stage's split pattern (docs/superword.md), written out here too; test_superword.py
# checks that it equals bpeforge's.
SUPERWORD_PATTERN = (
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)|[\r\n]+"
    r"|[\s\S](?:(?!\p{N}| ?[^\s\p{L}\p{N}]{2}| +(?!\S)|[\r\n])(?:(?<!:) |[^ ]))*"
)


def words(token: bytes) -> int:
    """The words of a token: its runs of bytes other than the space."""
    return len([w for w in token.split(b" ") if w])


def allowed(pairs: Counter, vocab, max_token_length: Optional[int], max_token_words: Optional[int]) -> Counter:
    """The pairs whose token keeps to the limits (bytes, words) that are given."""
    def keeps(p) -> bool:
        token = vocab[p[0]] + vocab[p[1]]
        return (max_token_length is None or len(token) <= max_token_length) and (max_token_words is None or words(token) <= max_token_words)

    return Counter({p: n for p, n in pairs.items() if keeps(p)})


def split(text: str, pattern: str) -> List[str]:
    """The non-empty spans of ``text``: ``regex.findall`` minus empty matches."""
    if regex.compile(pattern).groups:
        # findall would return the groups instead of the whole matches.
        raise ValueError("the reference only supports patterns without capturing groups")
    return [s for s in regex.findall(pattern, text) if s]


def count_spans(texts: Iterable[str], pattern: str) -> Counter:
    counts: Counter = Counter()
    for text in texts:
        for span in split(text, pattern):
            counts[span] += 1
    return counts


def count_pairs(words: List[Tuple[List[int], int]]) -> Counter:
    pairs: Counter = Counter()
    for ids, count in words:
        for pair in zip(ids, ids[1:]):
            pairs[pair] += count
    return pairs


def replace_pair(ids: List[int], pair: Tuple[int, int], new_id: int) -> List[int]:
    """Replaces ``pair`` by ``new_id`` left to right, non-overlapping."""
    if pair[0] not in ids:
        return ids  # nothing to replace (most spans, at most merges)
    out: List[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train(
    texts: Iterable[str],
    vocab_size: int,
    pattern: str = GPT4_PATTERN,
    min_frequency: int = 1,
    max_token_length: Optional[int] = None,
    max_token_words: Optional[int] = None,
):
    """Returns ``(ranks, merges)``: ranks is ``[(bytes, id)]`` for ids 0..n-1, merges is
    ``[(left_id, right_id, token_id, count)]`` in the order the merges were made."""
    return train_from_counts(count_spans(texts, pattern), vocab_size, min_frequency, max_token_length, max_token_words)


def characters(token: bytes) -> int:
    """The UTF-8 characters ``token`` starts, a first byte continuing a character counting as one."""
    started = sum(1 for b in token if b & 0xC0 != 0x80)
    return started + (1 if token and token[0] & 0xC0 == 0x80 else 0)


def train_from_counts(
    span_counts,
    vocab_size: int,
    min_frequency: int = 1,
    max_token_length: Optional[int] = None,
    max_token_words: Optional[int] = None,
    max_token_chars: Optional[int] = None,
):
    """Like :func:`train`, from spans already counted: ``{span (str or bytes): count}``; with
    ``max_token_chars``, only pairs whose token has at most that many :func:`characters`."""
    words = [
        (list(span.encode("utf-8") if isinstance(span, str) else span), count) for span, count in span_counts.items()
    ]
    vocab: List[bytes] = [bytes([i]) for i in range(256)]
    id_of = {b: i for i, b in enumerate(vocab)}
    merges: List[Tuple[int, int, int, int]] = []
    while len(vocab) < vocab_size:
        pairs = allowed(count_pairs(words), vocab, max_token_length, max_token_words)
        if max_token_chars is not None:
            pairs = Counter({p: n for p, n in pairs.items() if characters(vocab[p[0]] + vocab[p[1]]) <= max_token_chars})
        if not pairs:
            break
        # Highest count first, then the smallest (a, b) tuple.
        best = min(pairs, key=lambda p: (-pairs[p], p))
        best_count = pairs[best]
        if best_count < min_frequency:
            break
        new_bytes = vocab[best[0]] + vocab[best[1]]
        if new_bytes in id_of:
            new_id = id_of[new_bytes]  # the rare reuse: no new rank
        else:
            new_id = len(vocab)
            vocab.append(new_bytes)
            id_of[new_bytes] = new_id
        merges.append((best[0], best[1], new_id, best_count))
        # Each merge shortens at least one span by one, so the loop ends even when ids are
        # reused and the vocabulary does not grow.
        words = [(replace_pair(ids, best, new_id), count) for ids, count in words]
    ranks = [(b, i) for i, b in enumerate(vocab)]
    return ranks, merges


def train_ranks(texts: Iterable[str], vocab_size: int, pattern: str = GPT4_PATTERN, min_frequency: int = 1):
    return train(texts, vocab_size, pattern, min_frequency)[0]


def extend(
    texts: Iterable[str],
    base_ranks,
    first_id: int,
    new_tokens: int,
    pattern: str = GPT4_PATTERN,
    min_frequency: int = 1,
    max_token_length: Optional[int] = None,
    max_token_words: Optional[int] = None,
):
    """Continued BPE, naively: ``base_ranks`` (``{bytes: id}``, ids may have gaps) extended by up
    to ``new_tokens`` tokens numbered from ``first_id`` on, none longer than
    ``max_token_length`` bytes nor of more than ``max_token_words`` words (if given). The texts
    are split by ``pattern``, which need not be the one the base was trained with; each distinct
    span starts, whole, as
    tiktoken encodes it with the base's ranks (tiktoken, not bpeforge, encodes), then every pair
    is recounted before every merge, by the rule of :func:`train_from_counts` on the ids as they
    are. Returns ``(ranks, merges)`` as :func:`train` does, ranks sorted by id. A merge whose
    bytes are already a token is an AssertionError: no base that BPE training made allows one."""
    import tiktoken

    encoding = tiktoken.Encoding("reference", pat_str=pattern, mergeable_ranks=dict(base_ranks), special_tokens={})
    words = [(list(encoding._encode_single_piece(span.encode("utf-8"))), n) for span, n in count_spans(texts, pattern).items()]
    vocab = {i: b for b, i in base_ranks.items()}
    id_of = dict(base_ranks)
    merges: List[Tuple[int, int, int, int]] = []
    while len(vocab) < len(base_ranks) + new_tokens:
        pairs = allowed(count_pairs(words), vocab, max_token_length, max_token_words)
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < min_frequency:
            break
        new_bytes = vocab[best[0]] + vocab[best[1]]
        assert new_bytes not in id_of, f"the merge {best} gives the bytes of token {id_of[new_bytes]}"
        new_id = first_id + len(vocab) - len(base_ranks)
        vocab[new_id] = new_bytes
        id_of[new_bytes] = new_id
        merges.append((best[0], best[1], new_id, pairs[best]))
        words = [(replace_pair(ids, best, new_id), count) for ids, count in words]
    return sorted(((b, i) for i, b in vocab.items()), key=lambda r: r[1]), merges


def superword(
    texts: List[str],
    vocab_size: int,
    transition: int,
    pattern: str = GPT4_PATTERN,
    superword_pattern: str = SUPERWORD_PATTERN,
    max_token_words: Optional[int] = 4,
    min_frequency: int = 1,
):
    """SuperBPE's two stages, by their definition: training to ``transition`` ranks, then that
    extended on the same texts split by ``superword_pattern`` up to ``vocab_size`` ranks (no
    special tokens here). Returns ``(ranks, merges)`` as :func:`train` does."""
    ranks, merges = train(texts, transition, pattern, min_frequency, max_token_words=max_token_words)
    more, later = extend(
        texts, dict(ranks), len(ranks), vocab_size - len(ranks), superword_pattern, min_frequency, max_token_words=max_token_words
    )
    return more, merges + later
