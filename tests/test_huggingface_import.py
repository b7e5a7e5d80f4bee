"""``Tokenizer.from_huggingface`` (the vocabulary and merges read and checked by the compiled
core) against the Python import it replaced (tests/huggingface_reference.py: the whole file read
by ``json.loads``, every check in Python) on generated ``tokenizer.json`` files: the same
tokenizer, or the same refusal with the same message."""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import huggingface as hf
from bpeforge._patterns import PATTERNS
from huggingface_reference import reference_from_huggingface
from strategies import examples

tokenizers = pytest.importorskip("tokenizers")

TEXT = "low lower lowest newer wider the then there 'tis x1 x12 \n\n tabs\tand  spaces " * 3


@lru_cache(maxsize=None)
def base_file(kind: str) -> str:
    """The JSON text of a small valid tokenizer.json: bpeforge's export (``ignore_merges``,
    merges as strings, every way of making a token), or HuggingFace's BpeTrainer's (no
    ``ignore_merges``, merges as lists, special tokens first)."""
    if kind == "bpeforge":
        tok = bpeforge.Tokenizer.train_from_iterator([TEXT], vocab_size=290, special_tokens=["<|bos|>", "<|eos|>"])
        return json.dumps(hf.to_huggingface(tok), ensure_ascii=False)
    from tokenizers import decoders, models, pre_tokenizers, trainers

    h = tokenizers.Tokenizer(models.BPE())
    h.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(PATTERNS["gpt2"]), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    h.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<pad>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    h.train_from_iterator([TEXT], trainer)
    return h.to_str()


def dumps(value: Any) -> str:
    """JSON of ``value`` where a :class:`Pairs` is an object written pair by pair (a key may
    come twice, as a file may have it)."""
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {dumps(v)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return dumps(Pairs(value.items()))
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class Pairs(list):
    pass


BYTE_LEVEL = list(hf.byte_level_alphabet().values())
texts = st.text(st.sampled_from(BYTE_LEVEL[:40] + BYTE_LEVEL[-70:] + ["日", " ", "<", "|", "\\", "'", '"']), max_size=4)
ids = st.one_of(
    st.integers(-3, 320), st.sampled_from([2**31, 2**31 - 1, 2**63, 2**63 - 1, 2**64 - 1, -(2**63)]), st.floats(0, 300, allow_nan=False),
    st.booleans(), st.none(), st.text(max_size=2), st.lists(st.integers(0, 9), max_size=2),
)
merge_values = st.one_of(
    st.lists(texts, min_size=1, max_size=3).map(" ".join),
    st.lists(texts, min_size=0, max_size=3),
    st.lists(st.one_of(texts, st.integers(0, 5), st.none()), min_size=2, max_size=2),
    st.integers(0, 9), st.none(), st.dictionaries(st.text(max_size=2), st.integers(0, 3), max_size=2),
)

EDITS = [
    "drop_vocab", "add_vocab", "dup_vocab", "change_id", "swap_merges", "drop_merge", "add_merge", "merges_as_lists",
    "merges_as_strings", "flip_ignore", "merges_first", "added_not_special", "added_id", "vocab_not_mapping", "merges_not_list",
    "truncate", "drop_added", "pre_tokenizer", "unreachable",
]


@st.composite
def tokenizer_files(draw) -> str:
    """The text of a tokenizer.json: a base file with a few edits, which may or may not leave it
    one that can be read."""
    data = json.loads(base_file(draw(st.sampled_from(["bpeforge", "huggingface"]))))
    model = data["model"]
    vocab = Pairs(model["vocab"].items())
    merges = model["merges"]
    order = ["type", "vocab", "merges"]
    truncate = None
    for edit in draw(st.lists(st.sampled_from(EDITS), max_size=3)):
        if edit in ("drop_vocab", "add_vocab", "dup_vocab", "change_id", "added_id", "unreachable") and not isinstance(vocab, Pairs):
            continue
        if edit == "drop_vocab" and vocab:
            del vocab[draw(st.integers(0, len(vocab) - 1))]
        elif edit == "add_vocab":
            vocab.insert(draw(st.integers(0, len(vocab))), (draw(texts), draw(ids)))
        elif edit == "dup_vocab" and vocab:
            vocab.append((vocab[draw(st.integers(0, len(vocab) - 1))][0], draw(ids)))
        elif edit == "change_id" and vocab:
            i = draw(st.integers(0, len(vocab) - 1))
            vocab[i] = (vocab[i][0], draw(st.integers(-1, len(vocab) + 2)))
        elif edit == "swap_merges" and isinstance(merges, list) and merges:
            i, j = draw(st.integers(0, len(merges) - 1)), draw(st.integers(0, len(merges) - 1))
            merges[i], merges[j] = merges[j], merges[i]
        elif edit == "drop_merge" and isinstance(merges, list) and merges:
            del merges[draw(st.integers(0, len(merges) - 1))]
        elif edit == "add_merge" and isinstance(merges, list):
            merges.insert(draw(st.integers(0, len(merges))), draw(merge_values))
        elif edit == "merges_as_lists" and isinstance(merges, list):
            merges = [m.split(" ") if isinstance(m, str) else m for m in merges]
        elif edit == "merges_as_strings" and isinstance(merges, list):
            merges = [" ".join(m) if isinstance(m, list) and all(isinstance(p, str) for p in m) else m for m in merges]
        elif edit == "flip_ignore":
            model["ignore_merges"] = not model.get("ignore_merges")
        elif edit == "merges_first":
            order = ["merges", "type", "vocab"]
        elif edit == "added_not_special" and data["added_tokens"]:
            data["added_tokens"][0]["special"] = False
        elif edit == "added_id" and data["added_tokens"]:
            data["added_tokens"][-1]["id"] = draw(st.integers(0, len(vocab) + 2))
        elif edit == "drop_added":
            data["added_tokens"] = []
        elif edit == "vocab_not_mapping":
            vocab = draw(st.sampled_from([[1, 2], None, "x", 3]))
        elif edit == "merges_not_list":
            merges = draw(st.sampled_from([{"a": 1}, None, "a b"]))
        elif edit == "unreachable" and isinstance(merges, list):
            # bytes 0, 1, 2: xy, yz, then xyz made as x + yz, which merging xyz's bytes never gives
            top = max((i for _, i in vocab if type(i) is int), default=0)
            for k, pair in enumerate((["Ā", "ā"], ["ā", "Ă"], ["Ā", "āĂ"])):
                vocab.append(("".join(pair), top + 1 + k))
                merges.append(pair)
        elif edit == "truncate":
            truncate = draw(st.floats(0, 1))
        elif edit == "pre_tokenizer":
            data["pre_tokenizer"] = draw(st.sampled_from([None, {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]))
    fields = {"type": "BPE", "vocab": vocab, "merges": merges}
    rest = Pairs((k, v) for k, v in model.items() if k not in fields)
    data["model"] = Pairs([(k, fields[k]) for k in order] + rest)
    text = dumps(data)
    if truncate is not None:
        text = text[: int(len(text) * truncate)]
    return text


def outcome(read, path: Path) -> tuple:
    try:
        tok = read(path, bpeforge.Tokenizer)
    except Exception as e:  # the refusal: its type and message
        return type(e).__name__, str(e)
    return "read", list(tok.mergeable_ranks.items()), tok.special_tokens, tok.pattern, tok._name


@settings(max_examples=examples(300), deadline=None)
@given(text=tokenizer_files())
def test_import_reads_and_refuses_as_the_python_import(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tokenizer.json"
        path.write_text(text, encoding="utf-8")
        assert outcome(hf.from_huggingface, path) == outcome(reference_from_huggingface, path)


def test_the_base_files_read_and_a_generated_edit_refuses():
    """The generator's base files are read (so the property above compares tokenizers, not only
    refusals), and an edit is refused by both."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "tokenizer.json"
        for kind in ("bpeforge", "huggingface"):
            path.write_text(base_file(kind), encoding="utf-8")
            assert outcome(hf.from_huggingface, path)[0] == "read"
            assert outcome(hf.from_huggingface, path) == outcome(reference_from_huggingface, path)
        data = json.loads(base_file("huggingface"))
        data["model"]["merges"][3], data["model"]["merges"][7] = data["model"]["merges"][7], data["model"]["merges"][3]
        path.write_text(json.dumps(data), encoding="utf-8")
        got = outcome(hf.from_huggingface, path)
        assert got[0] == "NotRepresentable" and "the merges' order does not follow the ids they make" in got[1]
        assert got == outcome(reference_from_huggingface, path)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"model": {"type": "BPE", "vocab": {}, "merges": []}, "x": [1, 2', "not valid JSON \\(Expecting ',' delimiter"),
        ("\ufeff{}", "not valid JSON \\(Unexpected UTF-8 BOM"),
        ("[" * 200 + "]" * 200, "nested too deeply"),
        ('{"model": {"type": "BPE", "vocab": ' + "[" * 200_000, "nested too deeply"),
        ('{"model": {"vocab": {"a": NaN}}}', "not valid JSON \\(.*line 1 column"),
    ],
)
def test_import_names_json_it_cannot_read(tmp_path, text, message):
    """Syntax errors are named by Python's json as before; JSON nested deeper than 128 (serde_json's
    limit) is too deep; what Python's json reads but JSON forbids (NaN) is not valid JSON."""
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(hf.NotRepresentable, match=message) as e:
        bpeforge.Tokenizer.from_huggingface(path)
    assert str(path) in str(e.value)


def test_a_lone_surrogate_escape_is_named(tmp_path):
    """Python's json reads "\\ud800", serde_json (rightly) not: the refusal names it, rather than
    calling the file invalid JSON."""
    hf.save_huggingface(bpeforge.Tokenizer({bytes([i]): i for i in range(256)}), tmp_path)
    path = tmp_path / "tokenizer.json"
    data = json.loads(path.read_text())
    data["model"]["vocab"]["\ud800"] = 999
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"holds a lone surrogate escape \(such as \\ud800\)"):
        bpeforge.Tokenizer.from_huggingface(tmp_path)
