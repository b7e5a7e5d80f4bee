"""The import of a HuggingFace ``tokenizer.json`` as bpeforge did it in Python (the whole file
read by ``json.loads``, the vocabulary and merges checked in Python): the slow, obviously
faithful reference that ``bpeforge.huggingface.from_huggingface`` (which reads and checks them
in Rust) is tested against, refusals and their messages included (tests/test_huggingface_import.py)."""

from __future__ import annotations

import os
from typing import Any, Optional, TypeVar, Union

from bpeforge import _core
from bpeforge.huggingface import NotRepresentable, byte_level, from_byte_level, merged_by_list, pattern_of_model, read_json, special_tokens_of

T = TypeVar("T")


def reference_from_huggingface(path: Union[str, os.PathLike], tokenizer_class: Any) -> Any:
    """A ``tokenizer_class`` from a HuggingFace ``tokenizer.json`` (or a folder holding one),
    encoding text with HF's ids. Raises :class:`NotRepresentable` (a ValueError) naming what
    tiktoken's model cannot reproduce."""
    path, data = read_json(path)

    def refuse(reason: str) -> NotRepresentable:
        return NotRepresentable(f"{path}: cannot read as a tiktoken-style tokenizer: {reason}")

    model = data["model"]
    pattern = pattern_of_model(data, refuse)  # (the package's: this reference is of the vocabulary and merges)
    vocab, merges = model.get("vocab"), model.get("merges")
    if not (isinstance(vocab, dict) and all(isinstance(t, str) and type(i) is int for t, i in vocab.items())):
        raise refuse("the model's \"vocab\" is not a mapping of token to integer id")
    if not isinstance(merges, list):
        raise refuse("the model's \"merges\" is not a list")
    specials = special_tokens_of(data, refuse)
    ids_of_specials = set(specials.values())
    ranks: dict[bytes, int] = {}
    # The file's JSON is let go of part by part as it is read (the vocabulary once it is ranks,
    # the merges once checked), so that for millions of tokens it is not held beside the
    # checks of the ranks and the tokenizer made of them (several times the ranks' size each).
    del data
    model.pop("vocab")
    for text, token_id in vocab.items():
        if token_id in ids_of_specials:
            if specials.get(text) != token_id:
                raise refuse(f"vocabulary entry {text!r} has id {token_id}, the id of a special token of another name")
            continue
        token = from_byte_level(text)
        if token is None or not token:
            raise refuse(f"vocabulary entry {text!r} (id {token_id}) is not spelled in the byte-level alphabet")
        ranks[token] = token_id
    del vocab
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise refuse(f"the single byte {bytes([missing[0]])!r} is not in the vocabulary ({len(missing)} bytes missing)")
    try:
        _core.check_ranks(ranks)  # the ids as tiktoken's model needs them, before the merges are read
    except ValueError as e:
        raise refuse(str(e)) from None
    check_merges(merges, ranks, refuse)
    if not model.get("ignore_merges"):
        check_tokens_are_reached(merges, ranks, refuse)
    del model, merges
    try:
        return tokenizer_class(ranks, pattern, specials, name=path.parent.name or "huggingface")
    except ValueError as e:
        raise refuse(str(e)) from None


def parse_merge(merge: Any) -> Optional[tuple[str, str]]:
    """A merge of the file (``"a b"`` or ``["a", "b"]``) as two strings, or None."""
    if isinstance(merge, str):
        parts = merge.split(" ")
        return (parts[0], parts[1]) if len(parts) == 2 else None
    if isinstance(merge, list) and len(merge) == 2 and all(isinstance(p, str) for p in merge):
        return merge[0], merge[1]
    return None


def check_merges(merges: list, ranks: dict[bytes, int], refuse: Any) -> None:
    """Raises ``refuse(...)`` unless each merge joins two tokens into a token, and the merges
    make tokens in the order of their ids: HF merges by the place in this list, tiktoken by the
    id made, so the two orders must be one. (A pair of tokens that is no merge but makes a
    token, which tiktoken would merge and HF not, is argued never to meet in
    ``docs/huggingface.md`` for merges made by training, and tested.) Every token of more than
    one byte must be made by some merge: HF reaches a token no merge makes only as a whole span
    (with ``ignore_merges``), where tiktoken merges its two parts inside longer spans too."""
    last = -1
    made = 0  # distinct ids made: the merges make them in increasing order
    for i, merge in enumerate(merges):
        pair = parse_merge(merge)
        left, right = (None, None) if pair is None else (from_byte_level(pair[0]), from_byte_level(pair[1]))
        if left is None or right is None:
            raise refuse(f"merge {i} ({merge!r}) is not two byte-level tokens")
        rank = ranks.get(left + right)
        if rank is None or left not in ranks or right not in ranks:
            raise refuse(f"merge {i} ({merge!r}) joins or makes a token that is not in the vocabulary")
        if rank < last:
            raise refuse(
                f"merge {i} ({merge!r}) makes id {rank}, after a merge that made id {last}: the merges' order does not "
                f"follow the ids they make, which tiktoken's ranks need"
            )
        made += rank != last
        last = rank
    if made < sum(len(token) > 1 for token in ranks):  # (counted, not listed: files of millions of merges)
        made_ids = set()
        for merge in merges:
            a, b = parse_merge(merge)  # type: ignore[misc]  # checked above
            made_ids.add(ranks[from_byte_level(a) + from_byte_level(b)])  # type: ignore[operator]
        unmade = [token for token, rank in ranks.items() if len(token) > 1 and rank not in made_ids]
        token = min(unmade, key=ranks.__getitem__)
        raise refuse(
            f"vocabulary entry {byte_level(token)!r} (id {ranks[token]}) is made by no merge: HF gives it only for a "
            f"span that is that token whole, where tiktoken also merges its parts inside longer spans"
            + (f" ({len(unmade)} such entries)" if len(unmade) > 1 else "")
        )


def check_tokens_are_reached(merges: list, ranks: dict[bytes, int], refuse: Any) -> None:
    """Without ``ignore_merges`` HF merges a span that is a token like any other, where tiktoken
    takes the token whole: raises ``refuse(...)`` unless merging each token's own bytes by the
    merges gives that token."""
    priority: dict[tuple[bytes, bytes], int] = {}
    for i, merge in enumerate(merges):
        left, right = parse_merge(merge)  # type: ignore[misc]  # check_merges ran first
        priority.setdefault((from_byte_level(left), from_byte_level(right)), i)  # type: ignore[arg-type]
    for token in ranks:
        parts = merged_by_list(token, priority, None)
        if parts != [token]:
            raise refuse(
                f"ignore_merges is off and the merges turn the token {byte_level(token)!r} into {len(parts)} parts, "
                f"where tiktoken takes a span that is a token whole"
            )
