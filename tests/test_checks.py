"""bpeforge._checks: integer types other than int (NumPy's) are taken wherever an int is, bools
and floats are not; special ids are numbered on from any number of ranks at once."""

import signal

import pytest

import bpeforge

BYTES = {bytes([i]): i for i in range(256)}


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


def test_special_ids_follow_a_huge_number_of_ranks_at_once():
    """Numbering special tokens after ``n`` ranks does not walk the ``n`` ids (a vocab_size near
    2^31 stalled a minute before reading anything). The alarm's handler runs once the call
    returns, so a walk fails the test, however long it takes."""
    from bpeforge._checks import MAX_TOKEN_ID, special_token_ids

    def walked(signum, frame):
        raise AssertionError("special_token_ids walked the ranks' ids")

    previous = signal.signal(signal.SIGALRM, walked)
    signal.alarm(10)
    try:
        assert special_token_ids(["<|eos|>"], MAX_TOKEN_ID - 1) == {"<|eos|>": MAX_TOKEN_ID - 1}
        assert special_token_ids(["<|eos|>"], range(7, MAX_TOKEN_ID - 1)) == {"<|eos|>": MAX_TOKEN_ID - 1}
        with pytest.raises(ValueError, match=f"has id {MAX_TOKEN_ID}; special ids must be ints from 0 up to"):
            special_token_ids(["<|eos|>"], MAX_TOKEN_ID)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
