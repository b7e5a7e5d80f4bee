"""HuggingFace tokenizer.json both ways (bpeforge.huggingface): the exported file, loaded by
``tokenizers``, gives tiktoken's ids on hostile generated text for every preset pattern (and on
real corpora with BPEFORGE_CORPUS_DIR); a file trained by HF's ``BpeTrainer`` reads back into a
tokenizer giving HF's ids; what cannot be carried over exactly is refused by name.

``transformers`` is not installed by the test extra (it is heavy); ``tokenizers`` is what
``transformers.PreTrainedTokenizerFast`` runs, and it is tested here."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import huggingface as hf
from bpeforge._patterns import PATTERNS
from strategies import examples, texts

tokenizers = pytest.importorskip("tokenizers")

SPECIALS = ["<|bos|>", "<|endoftext|>", "<|user_start|>", "<pad>"]
LOOK_ALIKES = ["<|bos|", "|bos|>", "<|BOS|>", "< |bos|>", "<|bos |>", "<|endoftext|", "<pad", "pad>", "<|bos\u200b|>"]

HOSTILE = [
    "Hello world! The lowest   newer wider, don't DON'T I'LL we've ſ's K'd ﬆ ﬁle.",
    "\r\n\r\n  \n\n\n    \t\t x\r\n y\u00a0\u3000z\x85w\u2028v \x1c\x1d\x1e\x1f",
    " ".join(str(7 ** k) for k in range(40)) + " 1234567890123 ٣٤٥ १२३ ① ½",
    "日本語のテキスト、中文，한국어 éèê e\u0301\u0302 a\u0308\u0323 n\u0303",
    "emoji 😀👍🏽❤️🇫🇷👨‍👩‍👧🏳️‍🌈 ✨🔥💯",
    "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
    " " * 300 + "\n" * 50 + "end" + " " * 7,
    "<|bos|>><<|bos|><pad>pad><<pad>",  # special tokens glued to look-alikes
] + LOOK_ALIKES


def corpus() -> list[str]:
    return HOSTILE * 4 + [" ".join(HOSTILE)] * 2


def hostile_text():
    piece = st.one_of(texts(), st.sampled_from(LOOK_ALIKES), st.sampled_from(HOSTILE),
                      st.text(alphabet="0123456789", min_size=1, max_size=40),
                      st.text(alphabet=" \n\r\t", min_size=1, max_size=40))
    return st.lists(piece, max_size=6).map("".join)


# Custom patterns of the constructs bpeforge._oniguruma lists: one that matches every character
# (exported as an isolated Split), one that leaves spaces and punctuation unmatched (tiktoken
# drops them: exported as a Split that removes them).
CUSTOM = {
    "custom": r"(?i:[a-z]+)|[^\s\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}+|\s+(?!\S)|\s|[^\s\p{L}\p{N}]+",
    "custom-unmatched": r"\p{L}+|\p{N}",
}


@pytest.fixture(scope="module", params=[*PATTERNS, *CUSTOM])
def exported(request, tmp_path_factory):
    """(bpeforge tokenizer, HF tokenizer) of one preset or custom pattern, trained on hostile
    text, with special tokens at ids below, among and above the ranks."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pattern = CUSTOM.get(request.param, request.param)
        trained = bpeforge.Tokenizer.train_from_iterator(corpus(), vocab_size=600, pattern=pattern, special_tokens=[])
    ranks = {t: r + 2 for t, r in trained.mergeable_ranks.items()}
    top = max(ranks.values())
    specials = {SPECIALS[0]: 0, SPECIALS[1]: 1, SPECIALS[2]: top + 1, SPECIALS[3]: top + 7}
    tok = bpeforge.Tokenizer(ranks, trained.pattern, specials)
    folder = tmp_path_factory.mktemp(f"hf-{request.param}")
    tok.save_huggingface(folder)
    return tok, tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))


def hf_ids(h, text: str) -> list[int]:
    return h.encode(text, add_special_tokens=False).ids


def check_same_ids(tok, h, text: str) -> None:
    """HF's ids are tiktoken's with the special tokens allowed (HF splits them out of text), and
    decode back to the same text through HF and through bpeforge (the text itself unless the
    pattern leaves some unmatched: both drop it)."""
    ids = tok.encoding.encode(text, allowed_special="all")
    assert hf_ids(h, text) == ids, text
    assert h.decode(ids, skip_special_tokens=False) == tok.decode(ids)
    if bpeforge._oniguruma.matches_every_character(tok.pattern):
        assert tok.decode(ids) == text


def test_the_presets_are_exported_with_tiktoken_ids_on_hostile_text(exported):
    tok, h = exported
    for text in HOSTILE + ["".join(HOSTILE)] + [s + t for s in SPECIALS for t in HOSTILE[:3]]:
        check_same_ids(tok, h, text)
    for n in range(1, 60):
        check_same_ids(tok, h, "7" * n + " x" + "8" * n)
        check_same_ids(tok, h, " " * n + "a" + "\n" * n + " " * n + "\r\n" * n)
    look_alikes = " ".join(LOOK_ALIKES)
    assert hf_ids(h, look_alikes) == tok.encode(look_alikes)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_text())
def test_hf_ids_equal_tiktokens_on_generated_text(exported, text):
    tok, h = exported
    check_same_ids(tok, h, text)


def test_the_written_files(tmp_path):
    tok = bpeforge.Tokenizer.train_from_iterator(corpus(), vocab_size=400, special_tokens=["<|bos|>", "<|endoftext|>"])
    tok.save_huggingface(tmp_path)
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert data["normalizer"] is None and data["model"]["type"] == "BPE" and data["model"]["ignore_merges"] is True
    split, byte_level = data["pre_tokenizer"]["pretokenizers"]
    assert split == {"type": "Split", "pattern": {"Regex": hf.oniguruma_regex(tok.pattern)}, "behavior": "Isolated", "invert": False}
    assert byte_level["type"] == "ByteLevel" and byte_level["add_prefix_space"] is False and byte_level["use_regex"] is False
    assert data["decoder"]["type"] == "ByteLevel"
    assert [(a["content"], a["id"], a["special"]) for a in data["added_tokens"]] == [(n, i, True) for n, i in tok.special_tokens.items()]
    vocab = data["model"]["vocab"]
    assert all(vocab[hf.byte_level(t)] == r for t, r in tok.mergeable_ranks.items())
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["bos_token"] == "<|bos|>" and config["eos_token"] == "<|endoftext|>"
    assert config["clean_up_tokenization_spaces"] is False


def test_every_way_of_making_a_token_is_a_merge():
    """tiktoken merges any two adjacent parts whose concatenation is a token; HF only listed
    pairs: every split of a token into two tokens is listed, by the rank it makes."""
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"bc": 257, b"abc": 258, b"cab": 259}
    assert hf.merges_of(ranks) == [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc"), (b"c", b"ab")]


def random_ranks(rng: random.Random, alphabet: bytes = b"abc") -> dict[bytes, int]:
    """Small valid ranks over ``alphabet``: each new token the concatenation of two earlier ones."""
    ranks = {bytes([b]): b for b in range(256)}
    pool = [bytes([b]) for b in alphabet]
    for _ in range(rng.randint(3, 12)):
        token = rng.choice(pool) + rng.choice(pool)
        if token not in ranks and len(token) <= 6:
            ranks[token] = len(ranks)
            pool.append(token)
    return ranks


def test_the_merge_loops_agree_on_every_short_string():
    """The argument of check_merges_agree, checked by brute force: for random small
    vocabularies, HF's loop over the exported merges and tiktoken's loop (both simulated, and
    tiktoken's against tiktoken itself) split every string of up to 6 bytes alike."""
    import tiktoken

    rng = random.Random(28)
    strings = [bytes(s) for n in range(1, 7) for s in itertools.product(b"abc", repeat=n)]
    for _ in range(60):
        ranks = random_ranks(rng)
        merges = hf.merges_of(ranks)
        hf.check_merges_agree(ranks, merges)
        priority: dict = {}
        for i, pair in enumerate(merges):
            priority.setdefault(pair, i)
        enc = tiktoken.Encoding("r", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
        for s in strings:
            parts = hf.merged_by_rank(s, ranks)
            assert [ranks[p] for p in parts] == enc.encode_ordinary(s.decode())
            assert hf.merged_by_list(s, priority, ranks) == parts


def test_the_compiled_check_finds_what_the_slow_one_finds():
    """The compiled core's check (run on every export) against check_merges_agree, on random
    small vocabularies and every string of up to 6 bytes (most of them no tie context): the
    first string each loop splits otherwise, or none, is the same."""
    rng = random.Random(29)
    strings = [bytes(s) for n in range(1, 7) for s in itertools.product(b"abc", repeat=n)]
    disagreed = 0
    for _ in range(80):
        ranks = random_ranks(rng)
        merges = hf.merges_of(ranks)
        # Half the lists shuffled whole, so that some disagree.
        shuffled = sorted(merges, key=lambda pair: rng.random()) if rng.random() < 0.5 else merges
        priority: dict = {}
        for i, pair in enumerate(shuffled):
            priority.setdefault(pair, i)
        slow = next(((s, hf.merged_by_list(s, priority, ranks), hf.merged_by_rank(s, ranks)) for s in strings
                     if hf.merged_by_list(s, priority, ranks) != hf.merged_by_rank(s, ranks)), None)
        fast = bpeforge._core.first_merge_disagreement(list(ranks.items()), shuffled, strings)
        assert (None if fast is None else tuple(fast)) == slow
        disagreed += slow is not None
    assert disagreed > 0, "some shuffled lists must disagree, or the test shows nothing"


def test_the_compiled_merges_are_merges_of_and_its_check():
    """huggingface_merges (what every export runs) against merges_of, tie_contexts and the slow
    check, on random small vocabularies and on real trained ones."""
    rng = random.Random(31)
    vocabularies = [random_ranks(rng) for _ in range(60)]
    vocabularies.append(bpeforge.Tokenizer.train_from_iterator(["the cat sat on the mat, aaa bbb abab"] * 9, 330, special_tokens=[]).mergeable_ranks)
    for ranks in vocabularies:
        merges, disagreement = bpeforge._core.huggingface_merges(list(ranks.items()))
        assert [tuple(m) for m in merges] == hf.merges_of(ranks)
        contexts = sorted(set(hf.tie_contexts(ranks, hf.merges_of(ranks))), key=lambda c: (len(c), c))
        assert disagreement == bpeforge._core.first_merge_disagreement(list(ranks.items()), hf.merges_of(ranks), contexts)
        if disagreement is None:
            hf.check_merges_agree(ranks, hf.merges_of(ranks))


def test_a_custom_pattern_is_exported_as_a_split_of_its_spelling(tmp_path):
    """Isolated where the pattern matches every character, else Removed inverted (HF then drops
    the text between matches, as tiktoken does)."""
    for pattern, behavior, invert in ((r"\S+|\s+$|\s+", "Isolated", False), (r"\p{L}+|\d{1,2}+", "Removed", True)):
        bpeforge.Tokenizer({bytes([b]): b for b in range(256)}, pattern).save_huggingface(tmp_path / behavior)
        data = json.loads((tmp_path / behavior / "tokenizer.json").read_text(encoding="utf-8"))
        split = data["pre_tokenizer"]["pretokenizers"][0]
        assert split == {"type": "Split", "pattern": {"Regex": bpeforge._oniguruma.to_oniguruma(pattern)}, "behavior": behavior, "invert": invert}
    assert split["pattern"]["Regex"] == r"\p{L}+|(?>\d{1,2})"


def test_save_writes_huggingfaces_files_for_a_custom_pattern_on_the_list(tmp_path):
    text = HOSTILE[0] + HOSTILE[2]
    on_list = bpeforge.Tokenizer.train_from_iterator(corpus(), vocab_size=300, pattern=r"\p{L}+|\p{N}{1,2}+|[^\p{L}\p{N}]", special_tokens=[])
    on_list.save(tmp_path / "on")
    h = tokenizers.Tokenizer.from_file(str(tmp_path / "on" / "tokenizer.json"))
    assert hf_ids(h, text) == on_list.encode(text)
    off_list = bpeforge.Tokenizer(on_list.mergeable_ranks, r"\w+|\W")
    off_list.save(tmp_path / "off")  # saved all the same, without HuggingFace's files
    assert not (tmp_path / "off" / "tokenizer.json").exists() and bpeforge.Tokenizer.load(tmp_path / "off").pattern == r"\w+|\W"


def test_what_hf_would_encode_otherwise_is_refused(tmp_path):
    custom = bpeforge.Tokenizer({bytes([b]): b for b in range(256)}, r"\S+|\w+")
    with pytest.raises(ValueError, match=r"cannot export: the split pattern '\\\\S\+\|\\\\w\+' uses \\w \(at position 4\)"):
        custom.save_huggingface(tmp_path / "a")
    assert not (tmp_path / "a").exists()
    tricky = bpeforge.Tokenizer({bytes([b]): b for b in range(256)}, None, {"Ġx": 300})
    with pytest.raises(ValueError, match=r"special token 'Ġx' reads in the byte-level alphabet as the text b' x'"):
        tricky.save_huggingface(tmp_path / "b")
    clash = bpeforge.Tokenizer({bytes([b]): b for b in range(256)} | {b"<a": 256, b"<a>": 257}, None, {"<a>": 300})
    with pytest.raises(ValueError, match="spelled like a rank's token"):
        clash.save_huggingface(tmp_path / "c")
    ok = bpeforge.Tokenizer({bytes([b]): b for b in range(256)})
    ok.save(tmp_path / "saved")
    before = {p.name: p.read_bytes() for p in (tmp_path / "saved").iterdir()}
    ok.save_huggingface(tmp_path / "saved")  # a saved folder is what the export writes: the same files
    assert {p.name: p.read_bytes() for p in (tmp_path / "saved").iterdir()} == before
    import tiktoken

    unchecked = bpeforge.Tokenizer.from_encoding(
        tiktoken.Encoding("odd", pat_str=PATTERNS["gpt4"], mergeable_ranks={bytes([b]): b for b in range(256)} | {b"abc": 256}, special_tokens={})
    )
    with pytest.raises(ValueError, match=r"cannot (save|export): invalid mergeable ranks: rank 256 \(b'abc'\) is not the concatenation"):
        unchecked.save_huggingface(tmp_path / "d")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="it is a file"):
        ok.save_huggingface(tmp_path / "file")


def test_transformers_loads_the_export(tmp_path):
    """transformers (not in the test extra: it is large) runs the same tokenizers underneath:
    skipped when it is not installed."""
    transformers = pytest.importorskip("transformers")
    tok = bpeforge.Tokenizer.train_from_iterator(corpus(), vocab_size=400, special_tokens=["<|bos|>", "<|endoftext|>"])
    tok.save_huggingface(tmp_path)
    text = HOSTILE[0] + "<|bos|>" + HOSTILE[1]
    ids = tok.encoding.encode(text, allowed_special="all")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    for t in (fast, auto):
        assert t(text)["input_ids"] == ids and t.decode(ids) == text
    assert (auto.bos_token, auto.eos_token) == ("<|bos|>", "<|endoftext|>")


# ------------------------------------------------------------------------------ import


# Custom Split regexes (Oniguruma's spelling) on the list: cl100k_base's own spelling, whose
# possessive {1,3}+ Oniguruma reads as ({1,3})+, and one that leaves text unmatched, which HF's
# isolated Split keeps as pieces.
CUSTOM_HF = {"cl100k-as-oniguruma-reads-it": PATTERNS["cl100k_base"], "letters-digits-isolated": r"\p{L}+|\p{N}"}


def hf_trained(pattern_name: str, *, gpt2_style: bool, ignore_merges: bool, specials=("<|endoftext|>", "<pad>"), vocab_size=500):
    """A ByteLevel BPE trained by HF's BpeTrainer (special tokens at ids 0..k-1, the alphabet in
    HF's order): GPT-2's own pre-tokenizer, or a preset (or a regex of CUSTOM_HF) as a Split
    before ByteLevel."""
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers

    h = tokenizers.Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if gpt2_style:
        h.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        h.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(CUSTOM_HF.get(pattern_name) or hf.oniguruma_regex(PATTERNS[pattern_name])), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    h.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(specials), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    h.train_from_iterator(corpus(), trainer)
    return h


IMPORTS = [("gpt2", True, False), ("gpt2", True, True)] + [(name, False, flag) for name in PATTERNS for flag in (False, True)] + [
    (name, False, True) for name in CUSTOM_HF
]


@pytest.fixture(scope="module", params=IMPORTS, ids=[f"{n}-{'bytelevel' if g else 'split'}-{'ignore' if i else 'merges'}" for n, g, i in IMPORTS])
def imported(request, tmp_path_factory):
    name, gpt2_style, ignore_merges = request.param
    h = hf_trained(name, gpt2_style=gpt2_style, ignore_merges=ignore_merges)
    folder = tmp_path_factory.mktemp("hf-trained")
    h.save(str(folder / "tokenizer.json"))
    return bpeforge.Tokenizer.from_huggingface(folder), h


def test_a_bpetrainer_file_reads_back_with_hf_ids(imported):
    tok, h = imported
    assert tok.special_tokens == {"<|endoftext|>": 0, "<pad>": 1}
    assert sorted(tok.mergeable_ranks.values()) == list(range(2, h.get_vocab_size()))
    for text in HOSTILE + ["".join(HOSTILE), "<|endoftext|>" + HOSTILE[0] + "<pad>"]:
        check_same_ids(tok, h, text)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_text())
def test_imported_ids_equal_hfs_on_generated_text(imported, text):
    tok, h = imported
    check_same_ids(tok, h, text)


def test_import_of_small_bpetrainer_files_agrees_on_every_short_string(tmp_path):
    """HF's merges list one pair per token, where tiktoken merges any two parts making a token:
    for BPE-trained merges these never part; checked on every string of up to 7 letters of
    small vocabularies trained on random words."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    rng = random.Random(3)
    strings = ["".join(s) for n in range(1, 8) for s in itertools.product("abc", repeat=n)]
    for round_ in range(25):
        words = ["".join(rng.choice("abc") for _ in range(rng.randint(1, 8))) for _ in range(40)]
        h = tokenizers.Tokenizer(models.BPE(ignore_merges=bool(round_ % 2)))
        h.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(tokenizers.Regex(PATTERNS["gpt2"]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
        h.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=256 + rng.randint(3, 25), initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
        h.train_from_iterator([" ".join(words)] * 3, trainer)
        h.save(str(tmp_path / "tokenizer.json"))
        tok = bpeforge.Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
        for s in strings:
            assert tok.encode(s) == hf_ids(h, s), (words, s)


def edited(tmp_path: Path, edit) -> Path:
    h = hf_trained("gpt4", gpt2_style=False, ignore_merges=False)
    data = json.loads(h.to_str())
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def drop_byte(data):
    vocab = data["model"]["vocab"]
    del vocab["Ā"]  # byte 0x00
    data["model"]["merges"] = [m for m in data["model"]["merges"] if "Ā" not in "".join(m)]


def swap_merges(data):
    merges = data["model"]["merges"]
    merges[0], merges[5] = merges[5], merges[0]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(normalizer={"type": "NFC"}), "it has a normalizer \\('NFC'\\)"),
        (lambda d: d["model"].update(type="WordPiece"), "the model is 'WordPiece', not BPE"),
        (drop_byte, "the single byte b'\\\\x00' is not in the vocabulary"),
        (swap_merges, "the merges' order does not follow the ids they make"),
        (lambda d: d["added_tokens"].append({**d["added_tokens"][0], "id": 9999, "content": "hello", "special": False}),
         "added token 'hello' \\(id 9999\\) is not special"),
        (lambda d: d["added_tokens"][0].update(lstrip=True), "has single_word/lstrip/rstrip set"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": "\\S+|\\w+"}), r"its pre-tokenizer's Split: the split pattern .* uses \\w \(at position 4\)"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"][0].update(behavior="Merged"), "its pre-tokenizer's Split: a Split with behavior='Merged'"),
        (lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(use_regex=True), "its pre-tokenizer is not a byte-level one"),
        (lambda d: d.update(pre_tokenizer={"type": "ByteLevel", "add_prefix_space": True, "use_regex": True}), "its pre-tokenizer"),
        (lambda d: d.update(decoder={"type": "WordPiece"}), "its decoder is 'WordPiece'"),
        (lambda d: d.update(post_processor={"type": "TemplateProcessing"}), "post-processor \\('TemplateProcessing'\\) adds tokens"),
        (lambda d: d["model"].update(byte_fallback=True), "byte_fallback"),
        (lambda d: d["model"]["vocab"].update({"日": 9000}), "vocabulary entry '日' \\(id 9000\\) is not spelled in the byte-level alphabet"),
        (lambda d: d["model"].update(vocab=[1, 2]), "\"vocab\" is not a mapping of token to integer id"),
        (lambda d: d["model"].update(merges="a b"), "\"merges\" is not a list"),
        (lambda d: d["added_tokens"].append("<x>"), "\"added_tokens\" is not a list of tokens"),
        (lambda d: d["model"]["vocab"].update({"ab": 300, "ba": 300}), "rank 300 is given twice|have the same"),
    ],
)
def test_import_refuses_what_it_cannot_reproduce(tmp_path, edit, message):
    path = edited(tmp_path, edit)
    with pytest.raises(ValueError, match=message) as e:
        bpeforge.Tokenizer.from_huggingface(path)
    assert str(path) in str(e.value)


def test_import_without_ignore_merges_refuses_a_token_its_merges_do_not_reach(tmp_path):
    # bytes 0, 1, 2 (Ā ā Ă in the alphabet): xy, yz, then xyz made as x + yz. The bytes of xyz
    # merge into xy + z (xy is listed first), so HF never gives xyz; tiktoken takes it whole.
    def unreachable(data):
        vocab, merges = data["model"]["vocab"], data["model"]["merges"]
        for pair in (["Ā", "ā"], ["ā", "Ă"], ["Ā", "āĂ"]):
            vocab["".join(pair)] = max(vocab.values()) + 1
            merges.append(pair)

    path = edited(tmp_path, unreachable)
    h = tokenizers.Tokenizer.from_file(str(path))
    assert len(h.encode("\x00\x01\x02").ids) == 2
    with pytest.raises(ValueError, match="ignore_merges is off and the merges turn the token 'ĀāĂ' into 2 parts"):
        bpeforge.Tokenizer.from_huggingface(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"]["ignore_merges"] = True
    path.write_text(json.dumps(data), encoding="utf-8")
    tok, h = bpeforge.Tokenizer.from_huggingface(path), tokenizers.Tokenizer.from_file(str(path))
    assert tok.encode("\x00\x01\x02") == hf_ids(h, "\x00\x01\x02") == [data["model"]["vocab"]["ĀāĂ"]]


def test_import_refuses_a_token_no_merge_makes(tmp_path):
    # With ignore_merges HF gives such a token only for a span that is that token whole; tiktoken
    # would merge "Q" + "Z" inside "QZQ" too.
    def unmade(data):
        data["model"]["ignore_merges"] = True
        data["model"]["vocab"]["QZ"] = max(data["model"]["vocab"].values()) + 1

    path = edited(tmp_path, unmade)
    h = tokenizers.Tokenizer.from_file(str(path))
    qz = h.token_to_id("QZ")
    assert hf_ids(h, "QZ") == [qz] and qz not in hf_ids(h, "QZQ")
    with pytest.raises(ValueError, match=f"vocabulary entry 'QZ' \\(id {qz}\\) is made by no merge") as e:
        bpeforge.Tokenizer.from_huggingface(path)
    assert str(path) in str(e.value)


def test_import_names_a_bad_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        bpeforge.Tokenizer.from_huggingface(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ValueError, match="not valid JSON"):
        bpeforge.Tokenizer.from_huggingface(tmp_path / "bad.json")
    (tmp_path / "deep.json").write_text("[" * 200_000)
    with pytest.raises(ValueError, match="deep.json: not a HuggingFace tokenizer.json \\(its JSON is nested too deeply"):
        bpeforge.Tokenizer.from_huggingface(tmp_path / "deep.json")
    # A folder saved by bpeforge's format version 1, whose tokenizer.json was bpeforge's config
    # (version 2's is HuggingFace's own, read like any other).
    v1 = Path(__file__).parent / "data" / "saved-v1"
    with pytest.raises(ValueError, match="a bpeforge tokenizer's config.*Tokenizer.load"):
        bpeforge.Tokenizer.from_huggingface(v1)
    bpeforge.Tokenizer({bytes([b]): b for b in range(256)}).save(tmp_path / "saved")
    assert bpeforge.Tokenizer.from_huggingface(tmp_path / "saved").mergeable_ranks == {bytes([b]): b for b in range(256)}


def test_export_then_import_is_the_same_tokenizer(exported, tmp_path):
    tok, _ = exported
    tok.save_huggingface(tmp_path)
    back = bpeforge.Tokenizer.from_huggingface(tmp_path)
    assert (back.mergeable_ranks, back.special_tokens) == (tok.mergeable_ranks, tok.special_tokens)
    if tok.pattern in PATTERNS.values():
        assert back.pattern == tok.pattern
    else:  # a custom pattern comes back in another spelling that splits alike
        for text in HOSTILE + ["".join(HOSTILE)]:
            assert bpeforge.split(text, back.pattern) == bpeforge.split(text, tok.pattern)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt4", "cl100k_base", "nanochat", "gpt2", "o200k_base"])
def test_hf_splits_every_code_point_as_tiktokens_engine(name):
    """Oniguruma's Unicode tables and case folding against tiktoken's: every code point, in
    contexts that reach each alternative of the presets (letters, digits, contractions in either
    case, whitespace and newlines), splits into the same pieces as with bpeforge's splitter,
    which splits as fancy-regex, tiktoken's engine, does (tests/core/ check that)."""
    from tokenizers import Regex, pre_tokenizers

    pattern = PATTERNS[name]
    split = pre_tokenizers.Split(Regex(hf.oniguruma_regex(pattern)), behavior="isolated")
    differ = []
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        text = f"x{c}x 1{c}1 {c} \n{c}{c}'S{c}'{c}"
        if [piece for piece, _ in split.pre_tokenize_str(text)] != bpeforge.split(text, pattern):
            differ.append(f"U+{cp:04X}")
    assert differ == []


# ------------------------------------------------------------------------------ real corpora


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["gpt4", "o200k_base", "gpt2"])
def test_corpus_ids_equal_both_ways(tmp_path, pattern):
    folder = os.environ.get("BPEFORGE_CORPUS_DIR")
    if not folder:
        pytest.skip("set BPEFORGE_CORPUS_DIR to a folder of corpora (kernel-docs.txt, kernel-code.txt)")
    texts_ = []
    for name in ("kernel-docs.txt", "kernel-code.txt"):
        path = Path(folder) / name
        if path.is_file():
            with open(path, encoding="utf-8", errors="replace") as f:
                texts_ += f.read(4_000_000).split("\n\n")
    if not texts_:
        pytest.skip(f"no kernel-docs.txt or kernel-code.txt in {folder}")
    train, held_out = texts_[: len(texts_) * 3 // 4], texts_[len(texts_) * 3 // 4 :]
    tok = bpeforge.Tokenizer.train_from_iterator(train, vocab_size=8192, pattern=pattern, special_tokens=["<|bos|>"])
    tok.save_huggingface(tmp_path / "out")
    h = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    batch = h.encode_batch(held_out, add_special_tokens=False)
    assert [e.ids for e in batch] == tok.encode(held_out)
    hh = hf_trained(pattern, gpt2_style=False, ignore_merges=False, vocab_size=8192)
    hh.save(str(tmp_path / "trained.json"))
    back = bpeforge.Tokenizer.from_huggingface(tmp_path / "trained.json")
    assert [e.ids for e in hh.encode_batch(held_out, add_special_tokens=False)] == back.encode(held_out)
