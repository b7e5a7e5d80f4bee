"""Every bad input to the compiled core (bpeforge.Trainer) gives a Python exception that names
the problem, and leaves the trainer usable."""

import pytest

import bpeforge


def test_vocab_size_below_bytes():
    with pytest.raises(ValueError, match="at least 256"):
        bpeforge.Trainer().train_from_iterator(["abc"], 255)


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


BYTES = {bytes([i]): i for i in range(256)}


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
