"""bpeforge._training, the one training path of Tokenizer.train_from_iterator and `bpeforge
train`: options checked before any text is read, the early-stop warning, progress, the stats."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
import reference
from strategies import corpora, examples

BYTES = {bytes([i]): i for i in range(256)}


def test_vocab_size_below_bytes_plus_specials():
    with pytest.raises(ValueError, match="256 \\+ 2 special tokens"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 257, special_tokens=["<a>", "<b>"])


def test_the_low_level_trainer_keeps_rustbpes_byte_tokenizer_for_no_text():
    t = bpeforge.Trainer()
    t.train_from_iterator(iter([]), 1000)
    assert t.get_mergeable_ranks() == [(bytes([i]), i) for i in range(256)]
    t.train_from_counts({}, 1000)
    assert t.vocab_size == 256


@pytest.mark.parametrize(
    "texts, message",
    [
        ([], r"no text to train on: the iterable gave no texts \(an iterator or generator that was already used up\?"),
        ([""], "no text to train on: the iterable gave 1 text, all empty"),
        (["", [""], []], "no text to train on: the iterable gave 2 texts, all empty"),
    ],
)
def test_no_text_at_all_is_a_value_error_that_says_what_was_seen(texts, message):
    with pytest.raises(bpeforge._errors.NoTextError, match=message) as caught:
        bpeforge.Tokenizer.train_from_iterator(texts, 1000, special_tokens=["<|bos|>"])
    assert isinstance(caught.value, ValueError)


def test_an_iterator_used_up_is_a_value_error_that_says_so():
    texts = (t for t in ["hello world"] * 10)
    bpeforge.Tokenizer.train_from_iterator(texts, 300, special_tokens=[])
    with pytest.raises(ValueError, match=r"gave no texts \(an iterator or generator that was already used up\?"):
        bpeforge.Tokenizer.train_from_iterator(texts, 300, special_tokens=[])


def test_arrow_arrays_of_nulls_only_are_no_text():
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(ValueError, match="no texts .*all null"):
        bpeforge.Tokenizer.train_from_iterator([pa.array([None, None], pa.string())], 300)


def test_text_that_gives_no_pair_is_still_a_tokenizer_with_a_warning():
    # Text, but nothing to merge: an early stop (a warning), not an error.
    with pytest.warns(UserWarning, match="stopped at 256 ranks of the 300 asked for: no pair is left"):
        tok = bpeforge.Tokenizer.train_from_iterator(["x", "y"], 300, special_tokens=[])
    assert tok.n_vocab == 256
    with pytest.warns(UserWarning, match="no pair occurs 5 times or more"):
        bpeforge.Tokenizer.train_from_iterator(["ab"] * 4, 300, special_tokens=[], min_frequency=5)


def test_a_dataframe_is_refused_for_its_column_names():
    class DataFrame:  # what pandas and polars call it: iterating one gives its column names
        def __iter__(self):
            return iter(["text", "id"])

    with pytest.raises(TypeError, match=r"a DataFrame, whose items are its column names; pass the text column, e.g. df\['text'\]"):
        bpeforge.Tokenizer.train_from_iterator(DataFrame(), 300)


def test_tokenizer_progress_callback_and_stats():
    events = []
    tok = bpeforge.Tokenizer.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog"] * 20, 280, progress=lambda p, i: events.append((p, dict(i))), num_threads=1
    )
    assert events[0][0] == "count" and events[0][1]["texts"] == 20
    merges = [i for p, i in events if p == "merge"]
    assert merges[-1]["done"] == merges[-1]["total"] == 280 - 256 - len(bpeforge._base.NANOCHAT_SPECIAL_TOKENS)
    assert tok.training_stats["texts"] == 20
    assert tok.training_stats["bytes"] == 20 * 43
    # The last count report comes once everything is counted: here one batch, one thread.
    counts = [i for p, i in events if p == "count"]
    assert counts[-1]["spans"] == tok.training_stats["distinct_spans"] == 9  # "the" and " the" differ


def test_tokenizer_progress_true_writes_to_stderr(capsys):
    bpeforge.Tokenizer.train_from_iterator(["hello world"] * 50, 270, progress=True)
    assert "Progress: 100%" in capsys.readouterr().err


def test_tokenizer_progress_must_be_bool_or_callable():
    with pytest.raises(TypeError, match="progress must be"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 300, progress="yes")


def test_bad_special_tokens_are_refused_before_reading_any_data():
    def never():
        raise AssertionError("the iterator must not be touched")
        yield

    with pytest.raises(TypeError, match="not a str"):
        bpeforge.Tokenizer.train_from_iterator(never(), 300, special_tokens="<|bos|>")
    with pytest.raises(ValueError, match="given twice"):
        bpeforge.Tokenizer.train_from_iterator(never(), 300, special_tokens=["<|a|>", "<|a|>"])
    with pytest.raises(ValueError, match="non-empty"):
        bpeforge.Tokenizer.train_from_iterator(never(), 300, special_tokens=[""])


def test_one_long_run_trains_and_exports_in_linear_time():
    import time

    start = time.perf_counter()
    tok = bpeforge.Tokenizer.train_from_iterator(["a" * 1_000_000], 300, special_tokens=[])
    assert time.perf_counter() - start < 5
    assert tok.decode(tok.encode("a" * 1000)) == "a" * 1000


def test_a_single_str_is_not_taken_for_an_iterable_of_texts():
    with pytest.raises(TypeError, match=r"not str \(wrap the text in a list\)|got a str .*pass \[text\]"):
        bpeforge.Tokenizer.train_from_iterator("hello world", 300)


def test_special_tokens_are_checked_before_reading_any_data_and_bounded():
    def never():
        raise AssertionError("the iterator must not be touched")
        yield

    with pytest.raises(ValueError, match="lone surrogate"):
        bpeforge.Tokenizer.train_from_iterator(never(), 300, special_tokens=["<|x\ud800|>"])
    with pytest.raises(TypeError, match="not a dict"):
        bpeforge.Tokenizer.train_from_iterator(never(), 300, special_tokens={"<|bos|>": 299})
    with pytest.raises(ValueError, match="at most 2147483648, got 2147483658"):
        bpeforge.Tokenizer.train_from_iterator(never(), 2**31 + 10)
    for bad in (2**31, 2**40, 2**70):
        with pytest.raises(ValueError, match="special ids must be ints from 0 up to 2147483647"):
            bpeforge.Tokenizer(BYTES, special_tokens={"<a>": bad})


@settings(max_examples=examples(40), deadline=None)
@given(texts=corpora(), max_token_chars=st.integers(2, 4), max_token_length=st.one_of(st.none(), st.integers(2, 9)))
def test_max_token_chars_trains_what_the_reference_trains(texts, max_token_chars, max_token_length):
    # Characters are UTF-8's: the corpora's CJK, accents and emoji take 2-4 bytes each.
    texts = texts + ["x y"]
    tok = quietly_train(texts, 330, max_token_chars=max_token_chars, max_token_length=max_token_length)
    ranks, _ = reference.train_from_counts(
        reference.count_spans(texts, tok.pattern), 330, max_token_length=max_token_length, max_token_chars=max_token_chars
    )
    assert tok.mergeable_ranks == dict(ranks)
    assert max(reference.characters(t) for t in tok.mergeable_ranks) <= max_token_chars


def quietly_train(texts, vocab_size, **options):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small corpora run out of pairs
        return bpeforge.Tokenizer.train_from_iterator(texts, vocab_size, special_tokens=[], **options)
