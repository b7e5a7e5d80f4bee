"""Every bad input gives a Python exception that names the problem, and leaves objects usable."""

import re

import pytest

import bpeforge


def test_vocab_size_below_bytes():
    with pytest.raises(ValueError, match="at least 256"):
        bpeforge.Trainer().train_from_iterator(["abc"], 255)


def test_vocab_size_below_bytes_plus_specials():
    with pytest.raises(ValueError, match="256 \\+ 2 special tokens"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 257, special_tokens=["<a>", "<b>"])


@pytest.mark.parametrize("bad", [-1, 2**40])
def test_vocab_size_out_of_range(bad):
    with pytest.raises(ValueError, match="vocab_size"):
        bpeforge.Trainer().train_from_iterator(["abc"], bad)


def test_item_not_str_names_position_and_type():
    with pytest.raises(TypeError, match="item 2 of the iterator is bytes, expected str"):
        bpeforge.Trainer().train_from_iterator(["a", "b", b"c"], 300)


def test_item_in_list_not_str():
    with pytest.raises(TypeError, match=r"item 1\[0\] of the iterator is int"):
        bpeforge.Trainer().train_from_iterator(["a", [5]], 300)


def test_not_iterable():
    with pytest.raises(TypeError, match="iterable"):
        bpeforge.Trainer().train_from_iterator(42, 300)


def test_invalid_pattern_carries_regex_error():
    with pytest.raises(ValueError, match="invalid split pattern.*"):
        bpeforge.Trainer("(unclosed")
    with pytest.raises(ValueError, match="invalid split pattern"):
        bpeforge.Trainer().train_from_iterator(["a"], 300, pattern="[z-a]")
    with pytest.raises(ValueError, match="invalid split pattern"):
        bpeforge.Tokenizer.train_from_iterator(["a"], 300, pattern="(?<bad")


def test_lone_surrogate_is_a_clear_error():
    with pytest.raises(ValueError, match="item 1 .*lone surrogate"):
        bpeforge.Trainer().train_from_iterator(["ok", "bad \ud800 text"], 300)


@pytest.mark.parametrize("option, value", [("buffer_size", 0), ("min_frequency", 0)])
def test_bad_options(option, value):
    with pytest.raises(ValueError, match=option):
        bpeforge.Trainer().train_from_iterator(["abc"], 300, **{option: value})


@pytest.mark.parametrize("n", [0, -3, 100000])
def test_bad_thread_count(n):
    with pytest.raises(ValueError, match="num_threads"):
        bpeforge.Trainer(num_threads=n)


class Boom(Exception):
    pass


def failing(after):
    for i in range(after):
        yield f"text number {i} with some words"
    raise Boom("the data source broke")


def test_iterator_exception_propagates_unchanged_and_trainer_stays_usable():
    t = bpeforge.Trainer()
    t.train_from_iterator(["hello hello"], 260)
    before = t.get_mergeable_ranks()
    with pytest.raises(Boom, match="the data source broke"):
        t.train_from_iterator(failing(20), 300, buffer_size=7)
    assert t.get_mergeable_ranks() == before, "a failed training must not change the trainer"
    t.train_from_iterator(["abc abc abc"], 258)
    assert [tok for tok, _ in t.get_mergeable_ranks()[256:]] == [b"ab", b"abc"]


def test_progress_callback_exception_stops_training():
    t = bpeforge.Trainer()

    def stop(phase, info):
        if phase == "merge":
            raise Boom("stop now")

    with pytest.raises(Boom):
        t.train_from_iterator(["the quick brown fox jumps"] * 50, 400, progress=stop)
    assert t.vocab_size == 256


@pytest.mark.parametrize("phase", ["count", "merge"])
def test_no_progress_report_comes_after_the_callback_raised(phase):
    # Enough texts and merges for several reports of each phase (counting reports after each
    # batch handed on, the merge loop every few merges): after the callback raised, training
    # stops and the callback is not called again, with the reports already made or queued.
    texts = [" ".join(f"w{(i * 7919 + k * 104729) % 5000}x{k % 13}" for k in range(400)) for i in range(1500)]
    calls = []
    bpeforge.Trainer().train_from_iterator(texts, 4000, progress=lambda p, info: calls.append(p))
    assert calls.count(phase) >= 3
    calls.clear()

    def progress(p, info):
        calls.append(p)
        if p == phase:
            raise Boom(phase)

    with pytest.raises(Boom):
        bpeforge.Trainer().train_from_iterator(texts, 4000, progress=progress)
    assert calls.count(phase) == 1 and calls[-1] == phase, calls[-5:]


def test_empty_iterator_gives_byte_tokenizer():
    t = bpeforge.Trainer()
    t.train_from_iterator(iter([]), 1000)
    assert t.get_mergeable_ranks() == [(bytes([i]), i) for i in range(256)]
    with pytest.warns(UserWarning, match="stopped at 256 ranks"):
        tok = bpeforge.Tokenizer.train_from_iterator([], 1000, special_tokens=["<|bos|>"])
    assert tok.n_vocab == 257
    assert tok.decode(tok.encode("héllo")) == "héllo"


def test_an_iterator_used_up_gives_a_warning_that_says_so():
    texts = (t for t in ["hello world"] * 10)
    bpeforge.Tokenizer.train_from_iterator(texts, 300, special_tokens=[])
    with pytest.warns(UserWarning, match=r"the iterable gave no text \(an iterator or generator that was already used up\?\)"):
        tok = bpeforge.Tokenizer.train_from_iterator(texts, 300, special_tokens=[])
    assert tok.n_vocab == 256


def test_a_dataframe_is_refused_for_its_column_names():
    class DataFrame:  # what pandas and polars call it: iterating one gives its column names
        def __iter__(self):
            return iter(["text", "id"])

    with pytest.raises(TypeError, match=r"a DataFrame, whose items are its column names; pass the text column, e.g. df\['text'\]"):
        bpeforge.Tokenizer.train_from_iterator(DataFrame(), 300)


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_a_missing_value_among_the_texts_is_named(missing):
    with pytest.raises(TypeError, match=r"item 1 of the iterator is (NoneType|float), expected str.*a missing value.*dropna\(\)"):
        bpeforge.Trainer().train_from_iterator(["a b", missing, "c d"], 300)
    with pytest.raises(TypeError) as e:
        bpeforge.Trainer().train_from_iterator(["a b", 1.5], 300)
    assert "missing value" not in str(e.value)


@pytest.mark.parametrize("progress", [True, "yes", 3])
def test_a_progress_that_is_not_callable_is_refused_before_any_text_is_read(progress):
    pulled = []

    def texts():
        pulled.append(1)
        yield "hello world"

    trainer = bpeforge.Trainer()
    with pytest.raises(TypeError, match=r"progress must be a callable taking \(phase, info\), or None; got"):
        trainer.train_from_iterator(texts(), 300, progress=progress)
    with pytest.raises(TypeError, match="progress must be a callable"):
        trainer.train_from_counts({"ab": 3}, 300, progress=progress)
    assert pulled == []


def test_train_from_counts_rejects_bad_items():
    t = bpeforge.Trainer()
    with pytest.raises(ValueError, match="count of item 0"):
        t.train_from_counts({"ab": -1}, 300)
    with pytest.raises(ValueError, match="count of item 0"):
        t.train_from_counts({"ab": 2**64}, 300)
    with pytest.raises(TypeError, match="item 0 of counts"):
        t.train_from_counts([("ab", 1, 2)], 300)
    with pytest.raises(ValueError, match="2\\^63"):
        t.train_from_counts({"abc": 2**63}, 300)


def test_tokenizer_rejects_broken_ranks():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="not the concatenation"):
        bpeforge.Tokenizer({**ranks, b"xyz": 256})
    with pytest.raises(ValueError, match="out of range"):
        bpeforge.Tokenizer({**ranks, b"ab": 300})
    swapped = dict(ranks)
    swapped[b"a"], swapped[b"b"] = swapped[b"b"], swapped[b"a"]
    with pytest.raises(ValueError, match="single byte"):
        bpeforge.Tokenizer(swapped)
    with pytest.raises(ValueError, match="256 single bytes"):
        bpeforge.Tokenizer({b"a": 0})


def test_tokenizer_rejects_bad_special_tokens():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError, match="special ids must be"):
        bpeforge.Tokenizer(ranks, None, {"<x>": 10})
    with pytest.raises(ValueError, match="given twice"):
        bpeforge.Tokenizer(ranks, None, ["<x>", "<x>"])
    with pytest.raises(ValueError, match="share an id"):
        bpeforge.Tokenizer(ranks, None, {"<x>": 300, "<y>": 300})
    with pytest.raises(TypeError, match="not a str"):
        bpeforge.Tokenizer(ranks, None, "<x>")


def test_encode_special_unknown_name():
    tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, None, ["<|bos|>"])
    with pytest.raises(KeyError, match="not a special token"):
        tok.encode_special("<|eos|>")


def test_tokenizer_progress_callback_and_stats():
    events = []
    tok = bpeforge.Tokenizer.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog"] * 20, 280, progress=lambda p, i: events.append((p, dict(i))), num_threads=1
    )
    assert events[0][0] == "count" and events[0][1]["texts"] == 20
    merges = [i for p, i in events if p == "merge"]
    assert merges[-1]["done"] == merges[-1]["total"] == 280 - 256 - len(bpeforge.NANOCHAT_SPECIAL_TOKENS)
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


@pytest.mark.parametrize("pattern", ["a*", r"\w*", "(?=x)|y", r"\s*", r"(?=x)|\w+|\s+|[^\w\s]+", "(?:)"])
def test_pattern_matching_empty_strings_is_refused(pattern):
    # tiktoken raises a PanicException (not an Exception) on empty matches, and after one
    # fancy-regex skips a character (the "x" of "(?=x)|\w+"): refuse them first, everywhere.
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Trainer(pattern)
    with pytest.raises(ValueError, match="can match an empty string"):
        bpeforge.Trainer().train_from_iterator(["abc"], 300, pattern=pattern)


def test_an_empty_match_the_check_misses_stops_training():
    # Empty only right after three digits and an "x", which the check's probes do not hold.
    pattern = r"(?<=\d{3}x)|\S+|\s+"
    t = bpeforge.Trainer(pattern)
    t.train_from_iterator(["ab cd"], 260)
    before = t.get_mergeable_ranks()
    assert len(before) == 258  # "ab" and "cd"
    with pytest.raises(ValueError, match=r"matched an empty string \(at byte 4 of a text\)"):
        t.train_from_iterator(["ab", "123x yz"], 300)
    assert t.get_mergeable_ranks() == before  # the earlier training is kept


@pytest.mark.parametrize("pattern", ["gtp4", "o200k", "", "hello world"])
def test_a_pattern_with_no_regex_syntax_is_taken_for_a_misspelt_preset(pattern):
    # It would split out nothing but copies of itself: training would learn nothing, silently.
    with pytest.raises(ValueError, match="no such preset.*cl100k_base"):
        bpeforge.Trainer(pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Trainer().train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Tokenizer.train_from_iterator(["abc"], 300, pattern=pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, pattern)
    with pytest.raises(ValueError, match="no such preset"):
        bpeforge.split("abc", pattern)
    bpeforge.Trainer(".")  # one regex character is enough


def test_split_takes_preset_names():
    for name, regex in bpeforge.PATTERNS.items():
        text = "Hello world's 12345  \n\n x"
        assert bpeforge.split(text, name) == bpeforge.split(text, regex) == bpeforge.split(text, name, fast=False)


def test_trainer_takes_preset_names():
    t = bpeforge.Trainer("gpt2")
    assert t.get_pattern() == bpeforge.resolve_pattern("gpt2")
    t.train_from_iterator(["hello world"] * 5, 300, pattern="nanochat")
    assert t.get_pattern() == bpeforge.resolve_pattern("nanochat") and t.vocab_size > 256


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


def test_a_trainer_busy_training_refuses_a_second_training_and_keeps_its_results_readable():
    t = bpeforge.Trainer()
    t.train_from_iterator(["abc abc abc"], 258)
    seen = {}

    def progress(phase, info):
        if phase == "merge" and not seen:
            seen["merges"] = t.get_merges()  # the previous training's, while this one runs
            with pytest.raises(RuntimeError, match="already training"):
                t.train_from_iterator(["x"], 300)

    t.train_from_iterator(["the quick brown fox"] * 10, 265, progress=progress)
    assert [m[:3] for m in seen["merges"]] == [(97, 98, 256), (256, 99, 257)]
    assert t.vocab_size == 265


def test_a_failed_training_keeps_the_previous_stats():
    t = bpeforge.Trainer()
    t.train_from_iterator(["hello world"] * 4, 260)
    before = t.stats
    with pytest.raises(ValueError, match="2\\^63"):
        t.train_from_counts({"abc": 2**63}, 300)
    assert t.stats == before and t.vocab_size == 260


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"vocab_size": 2**63}, ValueError, "vocab_size must be at least 256"),
        ({"vocab_size": 300.0}, TypeError, "vocab_size must be an int"),
        ({"vocab_size": 300, "min_frequency": 10**20}, ValueError, "min_frequency must be between"),
        ({"vocab_size": 300, "min_frequency": True}, TypeError, "min_frequency must be an int"),
        ({"vocab_size": 300, "buffer_size": 2**70}, ValueError, "buffer_size must be between"),
    ],
)
def test_numeric_options_are_checked_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        bpeforge.Trainer().train_from_iterator(["abc"], **kwargs)


def test_a_single_str_is_not_taken_for_an_iterable_of_texts():
    with pytest.raises(TypeError, match=r"got a str .*pass \[text\]"):
        bpeforge.Tokenizer.train_from_iterator("hello world", 300)


BYTES = {bytes([i]): i for i in range(256)}


def test_a_panic_inside_tiktoken_is_a_runtime_error():
    # fancy-regex gives up on this pattern (its backtracking limit); tiktoken then panics, which
    # Python sees as a BaseException that `except Exception` does not catch.
    tok = bpeforge.Tokenizer(BYTES, r"(?:a|a)+(?!x)b|\S+|\s+")
    for call in (lambda: tok.encode("a" * 40), lambda: tok.encode(["a" * 40]), lambda: tok.encode("a" * 40, prepend=0)):
        with pytest.raises(RuntimeError, match="tiktoken failed while encoding.*backtracking"):
            call()
    assert tok.encode("ab") == [97, 98]  # and it still encodes what it can


def test_a_tokenizer_with_another_byte_order_saves_and_loads(tmp_path):
    import tiktoken

    # OpenAI's encodings order the single bytes their own way.
    enc = tiktoken.Encoding("x", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): (i + 128) % 256 for i in range(256)},
                            special_tokens={"<|e|>": 256})
    tok = bpeforge.Tokenizer.from_encoding(enc)
    tok.save(tmp_path / "t")
    back = bpeforge.Tokenizer.load(tmp_path / "t")
    assert back.mergeable_ranks == tok.mergeable_ranks and back.special_tokens == {"<|e|>": 256}
    assert back.encode("hi") == enc.encode_ordinary("hi") == [232, 233]


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
        with pytest.raises(ValueError, match="special ids must be ints from 256"):
            bpeforge.Tokenizer(BYTES, special_tokens={"<a>": bad})


def test_load_names_the_folder_of_an_out_of_range_special_id(tmp_path):
    import json

    bpeforge.Tokenizer(BYTES, special_tokens={"<|bos|>": 256}).save(tmp_path / "t")
    config = json.loads((tmp_path / "t" / "tokenizer.json").read_text())
    config["special_tokens"]["<|bos|>"] = 2**64
    (tmp_path / "t" / "tokenizer.json").write_text(json.dumps(config))
    with pytest.raises(bpeforge.TokenizerFileError, match="special ids must be"):
        bpeforge.Tokenizer.load(tmp_path / "t")


def test_train_from_counts_takes_any_mapping_and_checks_counts():
    import collections.abc
    import types

    class Counts(collections.abc.Mapping):
        def __init__(self, d):
            self.d = d

        def __getitem__(self, k):
            return self.d[k]

        def __iter__(self):
            return iter(self.d)

        def __len__(self):
            return len(self.d)

    counts = {"hello": 5, " world": 3, "hell": 2}
    expected = bpeforge.Trainer()
    expected.train_from_counts(counts, 270)
    for mapping in (types.MappingProxyType(counts), Counts(counts)):
        t = bpeforge.Trainer()
        t.train_from_counts(mapping, 270)
        assert t.get_merges() == expected.get_merges()
    for bad, kind in (("3", TypeError), (True, TypeError), (3.0, TypeError), (-3, ValueError), (2**64, ValueError)):
        with pytest.raises(kind, match="the count of item 0 must be"):
            bpeforge.Trainer().train_from_counts({"ab": bad}, 300)


def test_trainer_refuses_a_single_str():
    with pytest.raises(TypeError, match="got a str"):
        bpeforge.Trainer().train_from_iterator("hello world", 300)


def test_evaluate_checks_num_threads():
    with pytest.raises(ValueError, match="num_threads must be a positive int, got 0"):
        bpeforge.evaluate([bpeforge.Tokenizer(BYTES)], ["hi"], num_threads=0)


@pytest.mark.parametrize(
    "ranks, kind, message",
    [
        ({"a": 0}, TypeError, "a token is str"),
        ({b"a": 1.0}, TypeError, "the rank of b'a' is 1.0"),
        ({b"a": True}, TypeError, "the rank of b'a' is True"),
        ({**BYTES, b"ab": -1}, ValueError, "rank -1 of b'ab' is out of range: 257 ranks must be 0 to 256"),
        ({**BYTES, b"ab": 2**70}, ValueError, "257 ranks must be 0 to 256"),
    ],
)
def test_bad_ranks_name_the_problem(ranks, kind, message):
    with pytest.raises(kind, match=re.escape(message)):
        bpeforge.Tokenizer(ranks)


def test_render_for_completion_needs_a_user_message():
    tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 3, 300)
    conversation = [{"role": "system", "content": "be brief"}, {"role": "assistant", "content": "hi"}]
    with pytest.raises(ValueError, match="only a system message before the assistant message"):
        tok.render_for_completion(conversation)


class Int:
    """An integer that is not an int, as NumPy's are: it has __index__."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


def test_integer_types_other_than_int_are_taken():
    counts = {"hello": 5, " world": 3}
    t = bpeforge.Trainer()
    t.train_from_counts({k: Int(v) for k, v in counts.items()}, Int(260), min_frequency=Int(1))
    expected = bpeforge.Trainer()
    expected.train_from_counts(counts, 260)
    assert t.get_merges() == expected.get_merges()
    tok = bpeforge.Tokenizer({bytes([i]): Int(i) for i in range(256)})
    assert tok.mergeable_ranks == BYTES and tok.encode("hi") == [104, 105]
    tok = bpeforge.Tokenizer.train_from_iterator(["ab ab"] * 3, Int(260), special_tokens=[], min_frequency=Int(1))
    assert tok.n_vocab == 258  # and the early stop's warning read min_frequency

    class FloatLike:  # a NumPy 0-d float array: __index__ refuses
        def __index__(self):
            raise TypeError("only integer scalar arrays can be converted to a scalar index")

    for bad in (True, 1.0, "1", FloatLike()):
        with pytest.raises(TypeError, match="min_frequency must be an int"):
            bpeforge.Trainer().train_from_counts({"ab": 1}, 300, min_frequency=bad)
        with pytest.raises(TypeError, match="the count of item 0 must be an int"):
            bpeforge.Trainer().train_from_counts({"ab": bad}, 300)
        with pytest.raises(TypeError, match="vocab_size must be an int"):
            bpeforge.Tokenizer.train_from_iterator(["ab"], bad)
