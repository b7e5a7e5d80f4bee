"""bpeforge.huggingface.train_from_iterator against HuggingFace ``tokenizers`` itself: the same
``Tokenizer`` and ``BpeTrainer`` trained by both must serialize to equal JSON, for every
supported pre-tokenizer and every trainer option, on generated corpora full of ties and on real
text (Python's own sources); and what cannot be reproduced is refused, naming it."""

from __future__ import annotations

import json
import sysconfig
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers  # noqa: E402

import bpeforge  # noqa: E402
from bpeforge.huggingface import byte_level, oniguruma_regex, train_from_iterator  # noqa: E402
from bpeforge._patterns import PATTERNS  # noqa: E402
from strategies import examples  # noqa: E402

BYTE_LEVEL_ALPHABET = pre_tokenizers.ByteLevel.alphabet()


def split_then_byte_level(preset: str, prefix: bool = False, regex: str = "", behavior: str = "isolated"):
    """A Split of ``preset`` in HuggingFace's spelling (or of ``regex``), then a ByteLevel."""
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(regex or oniguruma_regex(PATTERNS[preset])), behavior=behavior, invert=behavior == "removed"),
            pre_tokenizers.ByteLevel(add_prefix_space=prefix, use_regex=False),
        ]
    )


# Split regexes of the constructs bpeforge._oniguruma lists, in Oniguruma's spelling: one that
# matches every character; one that leaves text unmatched (an isolated Split keeps it as
# pieces, a removed and inverted one drops it); cl100k_base's own spelling, whose possessive
# {1,3}+ Oniguruma reads as ({1,3})+ (any number of digits).
CUSTOM = r"(?i:'s|'t)|[^\s\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s"
UNMATCHED = r"\p{L}+|\p{N}|\n"


# Every supported pre-tokenizer, by name (made anew for each tokenizer).
PRE_TOKENIZERS = {
    "byte-level": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False),
    "byte-level-prefix": lambda: pre_tokenizers.ByteLevel(add_prefix_space=True),
    "byte-level-no-regex": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    "byte-level-no-regex-prefix": lambda: pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=False),
    "split-gpt4": lambda: split_then_byte_level("gpt4"),
    "split-gpt4-prefix": lambda: split_then_byte_level("gpt4", prefix=True),
    "split-o200k": lambda: split_then_byte_level("o200k_base"),
    "split-custom": lambda: split_then_byte_level("", regex=CUSTOM),
    "split-custom-prefix": lambda: split_then_byte_level("", prefix=True, regex=CUSTOM),
    "split-unmatched-isolated": lambda: split_then_byte_level("", regex=UNMATCHED),
    "split-unmatched-isolated-prefix": lambda: split_then_byte_level("", prefix=True, regex=UNMATCHED),
    "split-unmatched-removed": lambda: split_then_byte_level("", regex=UNMATCHED, behavior="removed"),
    "split-cl100k-as-oniguruma-reads-it": lambda: split_then_byte_level("", regex=PATTERNS["cl100k_base"]),
}


def tokenizer_with(pre: str) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = PRE_TOKENIZERS[pre]()
    return tok


def both(pre: str, texts: list, **options) -> tuple[dict, dict]:
    """HuggingFace's training and bpeforge's of a new tokenizer with pre-tokenizer ``pre``, as JSON."""
    options = {k: v for k, v in options.items() if v is not None}  # BpeTrainer takes no None
    options.setdefault("show_progress", False)
    theirs = tokenizer_with(pre)
    theirs.train_from_iterator(texts, trainer=trainers.BpeTrainer(**options))
    ours = tokenizer_with(pre)
    train_from_iterator(ours, texts, trainers.BpeTrainer(**options))
    return json.loads(theirs.to_str()), json.loads(ours.to_str())


def assert_same(theirs: dict, ours: dict) -> None:
    if theirs != ours:  # the first merge that differs says more than the whole JSON
        merges = zip(theirs["model"]["merges"], ours["model"]["merges"])
        first = next(((i, a, b) for i, (a, b) in enumerate(merges) if a != b), None)
        differ = [k for k in theirs if theirs[k] != ours.get(k)]
        pytest.fail(f"fields {differ} differ; first merge that differs (index, HF, bpeforge): {first}")


def cut_is_unambiguous(texts: list, pre: str, limit, initial: list) -> bool:
    """Whether ``limit_alphabet`` cuts the alphabet where no two characters tie (HuggingFace
    breaks such ties in its hash order, so no trainer can promise its choice there)."""
    if limit is None:
        return True
    tok = tokenizer_with(pre)
    counts: Counter = Counter()
    for text in texts:
        for item in text if isinstance(text, list) else [text]:
            for word, _ in tok.pre_tokenizer.pre_tokenize_str(item):
                counts.update(word)
    for char in initial:
        counts[char] = float("inf")
    if len(counts) <= limit:
        return True
    ordered = sorted(counts.values(), reverse=True)
    return ordered[limit - 1] != ordered[limit] if limit > 0 else True


# Small alphabets with spaces, newlines and a few multi-byte characters: many equal counts.
PIECES = ["a", "b", "ab", "ba", " ", "  ", "\n", "é", "中", "'s", "1", "22", "x.y", "\t"]
texts_with_ties = st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), min_size=1, max_size=20).map(
    lambda texts: texts * 2 + texts[:3]
)

trainer_options = st.fixed_dictionaries(
    {
        "vocab_size": st.integers(0, 320),
        "min_frequency": st.integers(0, 3),
        "special_tokens": st.sampled_from([[], ["<|endoftext|>"], ["<s>", "</s>", "<pad>"]]),
        "initial_alphabet": st.sampled_from([[], ["z", "Ġ"], BYTE_LEVEL_ALPHABET]),
        "limit_alphabet": st.one_of(st.none(), st.integers(0, 12)),
        "max_token_length": st.one_of(st.none(), st.integers(0, 6)),
    }
)


@settings(max_examples=examples(60), deadline=None)
@given(texts=texts_with_ties, pre=st.sampled_from(sorted(PRE_TOKENIZERS)), options=trainer_options)
def test_generated_corpora_train_what_huggingface_trains(texts, pre, options):
    assume(cut_is_unambiguous(texts, pre, options["limit_alphabet"], options["initial_alphabet"]))
    assert_same(*both(pre, texts, **options))


@pytest.mark.slow
@settings(max_examples=examples(1000), deadline=None)
@given(texts=texts_with_ties, pre=st.sampled_from(sorted(PRE_TOKENIZERS)), options=trainer_options)
def test_many_generated_corpora_train_what_huggingface_trains(texts, pre, options):
    assume(cut_is_unambiguous(texts, pre, options["limit_alphabet"], options["initial_alphabet"]))
    assert_same(*both(pre, texts, **options))


def python_sources(package: str) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"]) / package
    return [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))]


@pytest.fixture(scope="module")
def real_text() -> list[str]:
    texts = python_sources("json") + python_sources("email")
    assert sum(map(len, texts)) > 300_000
    return texts


@pytest.mark.parametrize("pre", sorted(PRE_TOKENIZERS))
def test_real_text_trains_what_huggingface_trains(real_text, pre):
    if "no-regex" in pre:  # a text is one word: HuggingFace's merges scan it whole, slowly
        real_text = real_text[:6]
    theirs, ours = both(pre, real_text, vocab_size=1200, special_tokens=["<|endoftext|>"], min_frequency=2)
    assert len(theirs["model"]["merges"]) > 800
    assert_same(theirs, ours)


@pytest.mark.parametrize(
    "options",
    [
        {"vocab_size": 1000, "initial_alphabet": BYTE_LEVEL_ALPHABET},
        {"vocab_size": 600, "limit_alphabet": 60},
        {"vocab_size": 1000, "max_token_length": 5},
        {"vocab_size": 1000, "max_token_length": 2},
        {"vocab_size": 5000, "min_frequency": 40},
    ],
    ids=["initial-alphabet", "limit-alphabet", "max-token-length-5", "max-token-length-2", "min-frequency"],
)
def test_real_text_with_trainer_options_trains_what_huggingface_trains(real_text, options):
    assume(cut_is_unambiguous(real_text, "byte-level", options.get("limit_alphabet"), options.get("initial_alphabet", [])))
    assert_same(*both("byte-level", real_text, **options))


def test_show_progress_reports_and_trains_the_same(real_text, capfd):
    theirs, ours = both("byte-level", real_text[:5], vocab_size=400, show_progress=True)
    assert_same(theirs, ours)
    assert "merg" in capfd.readouterr().err.lower()


def test_batches_of_texts_train_as_the_texts_do(real_text):
    theirs, _ = both("byte-level-prefix", real_text, vocab_size=500)
    ours = tokenizer_with("byte-level-prefix")
    train_from_iterator(ours, [real_text[i : i + 7] for i in range(0, len(real_text), 7)], trainers.BpeTrainer(vocab_size=500))
    assert_same(theirs, json.loads(ours.to_str()))


def test_the_model_keeps_its_other_fields(real_text):
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    theirs = Tokenizer.from_str(tok.to_str())
    theirs.train_from_iterator(real_text[:4], trainer=trainers.BpeTrainer(vocab_size=400, show_progress=False))
    train_from_iterator(tok, real_text[:4], trainers.BpeTrainer(vocab_size=400, show_progress=False))
    assert_same(json.loads(theirs.to_str()), json.loads(tok.to_str()))


def test_the_recipe_trains_the_same_ids_as_a_bpeforge_tokenizer(real_text):
    # With every byte in its alphabet, HuggingFace's training is a tiktoken tokenizer too: the
    # same ids for the same tokens, and the same encoding of text.
    tok = tokenizer_with("split-gpt4")
    train_from_iterator(tok, real_text, trainers.BpeTrainer(vocab_size=900, special_tokens=["<|endoftext|>"], initial_alphabet=BYTE_LEVEL_ALPHABET, show_progress=False))
    ours = bpeforge.Tokenizer.train_from_iterator(real_text, 900, pattern="gpt4", special_tokens=["<|endoftext|>"], tie_break="huggingface", initial_alphabet=bytes(range(256)))
    vocab = tok.get_vocab()
    assert {byte_level(t): i for t, i in ours.mergeable_ranks.items()} | ours.special_tokens == vocab
    sample = real_text[0][:3000]
    assert ours.encode_ordinary(sample) == tok.encode(sample).ids


def test_bytes_left_out_of_the_alphabet_make_no_tiktoken_tokenizer():
    with pytest.raises(bpeforge._errors.OptionError, match=r"left \d+ single bytes out of the alphabet") as e:
        bpeforge.Tokenizer.train_from_iterator(["abc abc"], 20, special_tokens=[], tie_break="huggingface")
    assert e.value.option == "tie_break"


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda tok, tr: setattr(tok, "normalizer", normalizers.NFKC()), "normalizer NFKC"),
        (lambda tok, tr: setattr(tok, "model", models.WordPiece()), "WordPiece model"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", pre_tokenizers.Whitespace()), "pre-tokenizer"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", None), "without a pre-tokenizer"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\w+|\W+"), "isolated"), pre_tokenizers.ByteLevel(use_regex=False)])), r"the Split regex: the split pattern '\\\\w\+\|\\\\W\+' uses \\w \(at position 0\)"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"(?i:\p{Lu})"), "isolated"), pre_tokenizers.ByteLevel(use_regex=False)])), r"the property \\p\{Lu\} in a case-insensitive group"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Split(" ", "isolated"), pre_tokenizers.ByteLevel(use_regex=False)])), "literal string"),
        (lambda tok, tr: setattr(tok, "pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r"\s+"), "removed"), pre_tokenizers.ByteLevel(use_regex=False)])), "behavior='Removed'"),
        (lambda tok, tr: setattr(tr, "continuing_subword_prefix", "##"), "continuing_subword_prefix"),
        (lambda tok, tr: setattr(tr, "end_of_word_suffix", "</w>"), "end_of_word_suffix"),
        (lambda tok, tr: setattr(tr, "special_tokens", ["a"]), "special token 'a'"),
        (lambda tok, tr: setattr(tr, "initial_alphabet", ["中"]), "initial_alphabet character '中'"),
        (lambda tok, tr: tok.add_special_tokens(["<x>"]), "already has added tokens"),
    ],
)
def test_what_cannot_be_reproduced_is_refused_naming_it(change, named):
    tok = tokenizer_with("byte-level")
    trainer = trainers.BpeTrainer(vocab_size=300, show_progress=False)
    change(tok, trainer)
    before = tok.to_str()
    with pytest.raises(ValueError, match=named):
        train_from_iterator(tok, ["some text"], trainer)
    assert tok.to_str() == before  # refused before anything changed


def test_another_trainer_is_refused():
    with pytest.raises(ValueError, match="WordPieceTrainer"):
        train_from_iterator(tokenizer_with("byte-level"), ["x"], trainers.WordPieceTrainer())


# ------------------------------------------------------------------------------ the command line


def cli_json_training(docs: list, vocab_size: int, special_tokens: list, initial_alphabet: list, pre: str = "split-gpt4") -> dict:
    """HuggingFace's training of what ``bpeforge train --tie-break huggingface`` describes in its
    tokenizer.json: a Split of the pattern (gpt4 unless ``pre`` says), a regex-less ByteLevel, a
    ByteLevel decoder."""
    from tokenizers import decoders

    tok = tokenizer_with(pre)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special_tokens, initial_alphabet=initial_alphabet, show_progress=False)
    tok.train_from_iterator(docs, trainer=trainer)
    return json.loads(tok.to_str())


@pytest.mark.parametrize("all_bytes", [False, True], ids=["bytes-seen", "initial-alphabet-all"])
def test_the_command_line_writes_huggingfaces_tokenizer_json(tmp_path, real_text, all_bytes):
    import subprocess
    import sys

    docs = real_text[:20]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "tok"
    args = ["train", str(path), "-o", str(out), "--holdout", "0", "--vocab-size", "700", "--special-tokens", "<|endoftext|>", "--tie-break", "huggingface"]
    done = subprocess.run([sys.executable, "-m", "bpeforge", *args, *(["--initial-alphabet", "all"] if all_bytes else [])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    want = cli_json_training(docs, 700, ["<|endoftext|>"], BYTE_LEVEL_ALPHABET if all_bytes else [])
    assert_same(want, json.loads((out / "tokenizer.json").read_text(encoding="utf-8")))
    assert Tokenizer.from_file(str(out / "tokenizer.json")).encode("def f(x): pass").ids
    tiktoken_file = tmp_path / "tok.tiktoken"
    if all_bytes:
        assert tiktoken_file.exists()
    else:
        assert not tiktoken_file.exists()
        assert "no .tiktoken written" in done.stdout and "single bytes are not in HuggingFace's alphabet" in done.stdout


def test_progress_counts_the_merges_huggingfaces_alphabet_leaves_room_for(real_text):
    # Fewer than 256 bytes are seen: the merges to make are vocab_size less that alphabet.
    events = []
    recipe = bpeforge._training.Recipe(400, special_tokens=["<s>"], tie_break="huggingface")
    trained = bpeforge._training.Training(recipe).run(real_text[:5], progress=lambda phase, info: events.append((phase, info)))
    merges = [info for phase, info in events if phase == "merge"]
    alphabet = 256 - len(trained.missing_bytes)
    assert alphabet < 256 and len(trained.ranks) == 399
    assert merges[-1]["done"] == merges[-1]["total"] == 399 - alphabet
    # Its merges are reported with HuggingFace's ids, as the trainer gives them.
    left, right, token, count = trained.merges()[-1]
    assert (merges[-1]["pair"], merges[-1]["token"], merges[-1]["count"]) == ((left, right), token, count) and token == 399


@pytest.mark.parametrize(
    "pattern, pre",
    [(r"(?i:'s|'t)|[^\s\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s", "split-custom"), (r"\p{L}+|\p{N}|\n", "split-unmatched-removed")],
    ids=["custom", "custom-unmatched"],
)
def test_the_command_line_writes_huggingfaces_tokenizer_json_for_a_custom_pattern(tmp_path, real_text, pattern, pre):
    """A custom --pattern of listed constructs: the tokenizer.json's Split is its Oniguruma
    spelling (removed and inverted where it leaves text unmatched, which bpeforge drops), and
    HuggingFace's training with it is bpeforge's."""
    from bpeforge.cli import main

    docs = real_text[:20]
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    out = tmp_path / "tok"
    args = ["train", str(path), "-o", str(out), "--holdout", "0", "--vocab-size", "600", "--tie-break", "huggingface", "--pattern", pattern, "-q",
            "--special-tokens", "<|endoftext|>"]
    assert main(args) == 0
    assert_same(cli_json_training(docs, 600, ["<|endoftext|>"], [], pre=pre), json.loads((out / "tokenizer.json").read_text(encoding="utf-8")))


def test_the_command_line_refuses_a_custom_pattern_off_the_list_before_training(tmp_path, capsys):
    from bpeforge.cli import main

    path = tmp_path / "docs.txt"
    path.write_text("some text\n", encoding="utf-8")
    args = ["train", str(path), "-o", str(tmp_path / "tok"), "--vocab-size", "300", "--tie-break", "huggingface", "--pattern", r"\w+|\s"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and r"--tie-break huggingface: --pattern: the split pattern '\\w+|\\s' uses \w (at position 0)" in err
    assert not (tmp_path / "tok").exists()
