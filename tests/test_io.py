"""bpeforge._io, saving and loading: standard files, same encoding after reload, clear errors on
bad files, the token-bytes file, and tiktoken's cache of the ranks file."""

import json
import os
import struct
import tempfile

import pytest
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

import bpeforge
from bpeforge import _io as io
from bpeforge._io import HF_CONFIG_FILE, HF_TOKENIZER_FILE, META_FILE, RANKS_FILE, TOKEN_BYTES_FILE, read_token_bytes

SAVED = sorted([RANKS_FILE, META_FILE, TOKEN_BYTES_FILE, HF_TOKENIZER_FILE, HF_CONFIG_FILE])


def resign(folder):
    """Rewrites bpeforge.json with the checksums of the files as they are now, as if a save had
    written them: what load then finds wrong it finds by parsing, not by a checksum."""
    meta = json.loads((folder / META_FILE).read_text())
    meta["files"] = {name: io._sha256((folder / name).read_bytes()) for name in meta["files"]}
    meta.pop("sha256", None)
    meta["sha256"] = io._sha256(io._canonical(meta))
    (folder / META_FILE).write_text(json.dumps(meta))

BYTES = {bytes([i]): i for i in range(256)}
SAMPLE = "The quick brown fox; jumps over 12345 lazy dogs!\n\tdon't STOP — ünïcödé 日本語 🎉"


@pytest.fixture(scope="module")
def tok():
    texts = [SAMPLE, "hello world " * 20, "def f(x):\n    return x + 1\n"] * 5
    return bpeforge.Tokenizer.train_from_iterator(texts, 340, pattern="nanochat")


def test_round_trip(tok, tmp_path):
    tok.save(tmp_path / "tok")
    again = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert again.mergeable_ranks == tok.mergeable_ranks
    assert again.pattern == tok.pattern == bpeforge.PATTERNS["nanochat"]
    assert again.special_tokens == tok.special_tokens
    assert again.encode(SAMPLE) == tok.encode(SAMPLE)
    assert again.encode_special("<|bos|>") == tok.encode_special("<|bos|>")


def test_ranks_file_is_standard_tiktoken(tok, tmp_path):
    tok.save(tmp_path)
    assert tiktoken.load.load_tiktoken_bpe(str(tmp_path / RANKS_FILE)) == tok.mergeable_ranks


@pytest.mark.parametrize("cache", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "default"])
def test_tiktoken_reads_a_saved_file_anew_after_a_save_replaces_it(tok, tmp_path, monkeypatch, cache):
    # tiktoken caches local files too, by path, and would serve the old file's copy.
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    if cache == "default":  # $TMPDIR/data-gym-cache
        (tmp_path / "tmp").mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    else:
        monkeypatch.setenv(cache, str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    first = bpeforge.Tokenizer.train_from_iterator(["abc abd " * 50], 262, special_tokens=[])
    for folder in ("out/tok", "./dot/tok", "out/../up/tok", tmp_path / "abs"):
        path = os.path.join(folder, RANKS_FILE)  # (as a user would join it: `./` kept)
        first.save(folder)
        assert tiktoken.load.load_tiktoken_bpe(path) == first.mergeable_ranks  # (now cached)
        tok.save(folder)
        assert tiktoken.load.load_tiktoken_bpe(path) == tok.mergeable_ranks
        assert tiktoken.load.load_tiktoken_bpe(os.path.abspath(path)) == tok.mergeable_ranks


def test_no_temporary_files_left(tok, tmp_path):
    tok.save(tmp_path)
    tok.save(tmp_path)  # overwriting works too
    assert sorted(p.name for p in tmp_path.iterdir()) == SAVED


def test_missing_directory_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        bpeforge.Tokenizer.load(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=META_FILE):
        bpeforge.Tokenizer.load(tmp_path)


def saved(tok, tmp_path):
    tok.save(tmp_path)
    return tmp_path / RANKS_FILE, tmp_path / META_FILE


def test_truncated_ranks(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    ranks.write_bytes(b"".join(lines[:300]))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match="truncated"):
        bpeforge.Tokenizer.load(tmp_path)


def test_truncated_mid_line(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    data = ranks.read_bytes()
    ranks.write_bytes(data[: len(data) - 3])
    resign(tmp_path)
    last = len(data.splitlines())
    with pytest.raises(bpeforge.TokenizerFileError, match=f"{RANKS_FILE}:{last}: rank"):
        bpeforge.Tokenizer.load(tmp_path)


@pytest.mark.parametrize(
    "line, message",
    [(b"!!notbase64 300\n", "the token is not valid base64"), (b"YWJj\n", "expected 'base64-token rank'"), (b"YWJj x\n", "the rank is not an integer")],
)
def test_corrupt_line_names_file_and_line(tok, tmp_path, line, message):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    lines[299] = line
    ranks.write_bytes(b"".join(lines))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match=f"{RANKS_FILE}:300: {message}"):
        bpeforge.Tokenizer.load(tmp_path)


def test_duplicate_token(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    lines[300] = lines[299].split()[0] + b" 300\n"
    ranks.write_bytes(b"".join(lines))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match=":301: the token of this line already has rank 299"):
        bpeforge.Tokenizer.load(tmp_path)


def test_a_rank_given_twice_names_the_line(tok, tmp_path):
    ranks, _ = saved(tok, tmp_path)
    lines = ranks.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].split()[0] + b" 300\n"
    ranks.write_bytes(b"".join(lines))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match=rf":{len(lines)}: rank 300 is given twice"):
        bpeforge.Tokenizer.load(tmp_path)
    lines[-1] = lines[-1].split()[0] + b" -3\n"
    ranks.write_bytes(b"".join(lines))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match=rf":{len(lines)}: rank -3 is out of range"):
        bpeforge.Tokenizer.load(tmp_path)


def test_not_our_json(tok, tmp_path):
    _, config = saved(tok, tmp_path)
    config.write_text(json.dumps({"model": {"type": "BPE"}}))
    with pytest.raises(bpeforge.TokenizerFileError, match="not a bpeforge tokenizer"):
        bpeforge.Tokenizer.load(tmp_path)
    config.write_text("{not json")
    with pytest.raises(bpeforge.TokenizerFileError, match="not valid JSON"):
        bpeforge.Tokenizer.load(tmp_path)


def test_wrong_version(tok, tmp_path):
    _, config = saved(tok, tmp_path)
    data = json.loads(config.read_text())
    data["version"] = 99
    config.write_text(json.dumps(data))
    with pytest.raises(bpeforge.TokenizerFileError, match="version 99 is not supported"):
        bpeforge.Tokenizer.load(tmp_path)


def test_a_save_cut_off_between_files_is_caught(tok, tmp_path):
    tok.save(tmp_path)
    other = bpeforge.Tokenizer.train_from_iterator(["completely different text " * 30], 300)
    other.save(tmp_path / "other")
    # As if a crash came after the new ranks were in place but before the new config.
    (tmp_path / RANKS_FILE).write_bytes((tmp_path / "other" / RANKS_FILE).read_bytes())
    data = json.loads((tmp_path / META_FILE).read_text())
    data["n_ranks"] = len(other.mergeable_ranks)
    (tmp_path / META_FILE).write_text(json.dumps(data))
    with pytest.raises(bpeforge.TokenizerFileError, match="does not match"):
        bpeforge.Tokenizer.load(tmp_path)


def test_token_bytes_from_another_save_are_caught(tok, tmp_path):
    tok.save(tmp_path)
    other = bpeforge.Tokenizer.train_from_iterator(["completely different text " * 30], 300)
    other.save(tmp_path / "other")
    # As two saves into one folder at once can leave it: the other's token bytes with our config.
    (tmp_path / TOKEN_BYTES_FILE).write_bytes((tmp_path / "other" / TOKEN_BYTES_FILE).read_bytes())
    with pytest.raises(bpeforge.TokenizerFileError, match="token_bytes.npy does not match"):
        bpeforge.Tokenizer.load(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match="does not match"):
        read_token_bytes(tmp_path)
    (tmp_path / TOKEN_BYTES_FILE).unlink()
    with pytest.raises(bpeforge.TokenizerFileError, match="is missing"):
        bpeforge.Tokenizer.load(tmp_path)


def test_saves_into_one_folder_from_two_threads(tmp_path):
    """Each save writes its own temporary files, and what the folder ends up holding is one
    tokenizer, whole, or a mix that load refuses: never a mix that loads."""
    import threading

    tokenizers = [
        bpeforge.Tokenizer.train_from_iterator([text * 40], 270 + 5 * i)
        for i, text in enumerate(["first corpus of words ", "zweites Korpus aus Wörtern "])
    ]
    for round in range(20):
        errors = []

        def save(t):
            try:
                t.save(tmp_path)
            except Exception as e:  # noqa: BLE001 - any error fails the test below
                errors.append(e)

        threads = [threading.Thread(target=save, args=(t,)) for t in tokenizers]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == [], f"round {round}: {errors}"
        try:
            loaded = bpeforge.Tokenizer.load(tmp_path)
        except bpeforge.TokenizerFileError:
            continue
        assert loaded.mergeable_ranks in [t.mergeable_ranks for t in tokenizers]
        assert read_token_bytes(tmp_path) == loaded.token_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == SAVED


def byte_ranks():
    return {bytes([i]): i for i in range(256)}


@pytest.mark.parametrize(
    "ranks, pattern, specials, message",
    [
        ({**byte_ranks(), b"abc": 300}, r"\S+|\s+", {}, "not the concatenation of two tokens of lower rank"),
        ({**byte_ranks(), b"ab": 256}, r"\S+|\s+", {"<|bos|>": 100}, "special token '<|bos|>' has id 100"),
        (byte_ranks(), r"\S*|\s+", {}, "empty"),
        ({**{bytes([i]): i for i in range(255)}, b"ab": 255}, r"\S+|\s+", {}, "byte 0xff is not a token"),
        ({**byte_ranks(), b"": 256}, r"\S+|\s+", {}, "the empty token has rank 256"),
    ],
)
def test_save_refuses_what_load_would_refuse_and_leaves_the_folder(tok, tmp_path, ranks, pattern, specials, message):
    import tiktoken

    tok.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    wrapped = bpeforge.Tokenizer.from_encoding(
        tiktoken.Encoding("odd", pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    )
    with pytest.raises(ValueError, match=message):
        wrapped.save(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_save_that_fails_leaves_the_folder_as_it_was(tok, tmp_path, monkeypatch):
    import bpeforge._io

    tok.save(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    other = bpeforge.Tokenizer.train_from_iterator(["completely different text " * 30], 280)

    def too_big(tokenizer):
        raise MemoryError()

    monkeypatch.setattr(bpeforge._io, "token_bytes_npy", too_big)
    with pytest.raises(MemoryError, match=r"one entry per id up to \d+ \(the largest special token id\)"):
        other.save(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(version=True), "version True is not supported"),
        (lambda c: c.update(n_ranks="340"), "n_ranks"),
    ],
)
def test_config_fields_of_the_wrong_type(tok, tmp_path, edit, message):
    _, config = saved(tok, tmp_path)
    data = json.loads(config.read_text())
    edit(data)
    config.write_text(json.dumps(data))
    resign(tmp_path)
    with pytest.raises(bpeforge.TokenizerFileError, match=message):
        bpeforge.Tokenizer.load(tmp_path)


def test_config_nested_too_deeply(tok, tmp_path):
    _, config = saved(tok, tmp_path)
    config.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(bpeforge.TokenizerFileError, match="nested too deeply"):
        bpeforge.Tokenizer.load(tmp_path)


def test_load_checks_the_ranks_it_parsed(tmp_path, monkeypatch):
    """load parses the ranks file and checks its checksum on the same bytes: a save that
    replaces the file in between cannot pair one save's ranks with another's config."""
    import bpeforge._io as io

    a, b = (
        bpeforge.Tokenizer.train_from_iterator([text * 40], 270, special_tokens=specials)
        for text, specials in [("first corpus of words ", ["<|a|>"]), ("zweites Korpus aus Wörtern ", ["<|b|>"])]
    )
    assert len(a.mergeable_ranks) == len(b.mergeable_ranks)
    b.save(tmp_path / "b")
    a.save(tmp_path / "a")
    b.save(tmp_path)
    # As a save of A had written its ranks but not yet its config...
    (tmp_path / RANKS_FILE).write_bytes((tmp_path / "a" / RANKS_FILE).read_bytes())
    parse = io.read_tiktoken

    def parse_then_save_b(*args, **kwargs):
        ranks = parse(*args, **kwargs)
        # ... and a save of B then put its ranks back, right after load parsed A's.
        (tmp_path / RANKS_FILE).write_bytes((tmp_path / "b" / RANKS_FILE).read_bytes())
        return ranks

    monkeypatch.setattr(io, "read_tiktoken", parse_then_save_b)
    with pytest.raises(bpeforge.TokenizerFileError, match="does not match"):
        bpeforge.Tokenizer.load(tmp_path)


def test_save_to_a_tiktoken_name_is_refused_and_load_of_a_ranks_file_names_its_folder(tok, tmp_path):
    # save writes a folder: a path named like a ranks file is refused before anything is written
    with pytest.raises(ValueError, match=r"names a \.tiktoken ranks file.*'.*named'"):
        tok.save(tmp_path / "named.tiktoken")
    with pytest.raises(ValueError, match=r"names a \.tiktoken ranks file"):
        tok.save(tmp_path / "NAMED.TIKTOKEN")
    assert list(tmp_path.iterdir()) == []
    # a trailing slash says a folder is meant
    tok.save(f"{tmp_path}/slashed.tiktoken/")
    assert (tmp_path / "slashed.tiktoken" / RANKS_FILE).is_file()
    # a folder of that name saved before stays writable (an existing folder is what it names)
    (tmp_path / "old.tiktoken").mkdir()
    tok.save(tmp_path / "old.tiktoken")
    assert bpeforge.Tokenizer.load(tmp_path / "old.tiktoken").mergeable_ranks == tok.mergeable_ranks
    # load of the .tiktoken file the command line writes beside its folder points at the folder
    tok.save(tmp_path / "named")
    (tmp_path / "named.tiktoken").write_bytes((tmp_path / "named" / RANKS_FILE).read_bytes())
    with pytest.raises(FileNotFoundError, match=r"ranks file, not a folder.*load_tiktoken_bpe.*named'.*beside it"):
        bpeforge.Tokenizer.load(tmp_path / "named.tiktoken")
    (tmp_path / "lone.tiktoken").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"ranks file, not a folder \(read it with tiktoken\.load\.load_tiktoken_bpe\)$") as e:
        bpeforge.Tokenizer.load(tmp_path / "lone.tiktoken")
    assert "beside" not in str(e.value)
    # the suffix in any case, as save's refusal takes it
    (tmp_path / "Upper.TIKTOKEN").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"ranks file, not a folder"):
        bpeforge.Tokenizer.load(tmp_path / "Upper.TIKTOKEN")


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


def test_load_names_the_folder_of_an_out_of_range_special_id(tmp_path):
    import json

    bpeforge.Tokenizer(BYTES, special_tokens={"<|bos|>": 256}).save(tmp_path / "t")
    config = json.loads((tmp_path / "t" / META_FILE).read_text())
    config["special_tokens"]["<|bos|>"] = 2**64
    (tmp_path / "t" / META_FILE).write_text(json.dumps(config))
    resign(tmp_path / "t")
    with pytest.raises(bpeforge.TokenizerFileError, match="special ids must be"):
        bpeforge.Tokenizer.load(tmp_path / "t")


def test_token_bytes_numpy_and_npy(tok, tmp_path):
    np = pytest.importorskip("numpy")
    arr = tok.token_bytes(as_numpy=True)
    assert arr.dtype == np.int32 and arr.tolist() == tok.token_bytes()
    data = io.token_bytes_npy(tok)
    (tmp_path / "tb.npy").write_bytes(data)
    loaded = np.load(tmp_path / "tb.npy", allow_pickle=False)
    assert loaded.dtype == np.int32 and loaded.tolist() == tok.token_bytes()
    # and numpy's own file reads back without numpy
    np.save(tmp_path / "np.npy", arr)
    assert io.read_token_bytes(tmp_path / "np.npy") == tok.token_bytes()
    assert (tmp_path / "np.npy").read_bytes() == data


def test_write_and_read_token_bytes(tok, tmp_path):
    path = io.write_token_bytes(tok, tmp_path)
    assert path == tmp_path / TOKEN_BYTES_FILE
    assert io.read_token_bytes(tmp_path) == tok.token_bytes()
    assert io.read_token_bytes(path) == tok.token_bytes()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: b"NOTNUMPY" + d[8:], "not a .npy file"),
        (lambda d: d[:-4], "truncated"),
        (lambda d: d.replace(b"<i4", b"<f8"), "int32"),
    ],
)
def test_read_token_bytes_rejects_bad_files(tok, tmp_path, mutate, message):
    path = tmp_path / TOKEN_BYTES_FILE
    path.write_bytes(mutate(io.token_bytes_npy(tok)))
    with pytest.raises(bpeforge.TokenizerFileError, match=message):
        io.read_token_bytes(path)


def test_npy_header_alignment():
    byte_ranks = {bytes([i]): i for i in range(256)}
    for n_special in [0, 1, 7, 800, 9_800]:  # shapes of 3 to 5 digits
        tok = bpeforge.Tokenizer(byte_ranks, special_tokens=[f"<|s{k}|>" for k in range(n_special)])
        data = io.token_bytes_npy(tok)
        (header_len,) = struct.unpack("<H", data[8:10])
        assert (10 + header_len) % 64 == 0 and data[10 + header_len - 1 : 10 + header_len] == b"\n"
        assert len(data) == 10 + header_len + 4 * tok.n_vocab


def test_save_writes_token_bytes(tok, tmp_path):
    tok.save(tmp_path)
    assert io.read_token_bytes(tmp_path) == tok.token_bytes()


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.binary(min_size=1, max_size=40), st.integers(0, 2**31 - 1), max_size=30))
def test_the_tiktoken_text_is_base64_lines_by_rank_that_tiktoken_reads_back(extra):
    """The ``.tiktoken`` text, made in place in Rust: one ``base64(token) rank`` line per token,
    by rank (Python's base64 as the reference), and tiktoken's own loader reads the ranks back."""
    import base64

    ranks = {**{bytes([i]): i + 2**31 for i in range(256)}, **extra}  # distinct ranks, apart from `extra`'s
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    expected = b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in by_rank)
    text = io.ranks_to_tiktoken(ranks)
    assert text == expected
    assert io.ranks_to_tiktoken(by_rank) == text  # pairs as well as a dict
    if len(set(ranks.values())) == len(ranks):
        path = os.path.join(tempfile.mkdtemp(), "r.tiktoken")
        with open(path, "wb") as f:
            f.write(text)
        assert tiktoken.load.load_tiktoken_bpe(path) == ranks


def test_the_tiktoken_text_of_a_bad_ranks_argument_is_a_type_error():
    with pytest.raises(TypeError, match="ranks must be a dict of bytes to int rank"):
        io.ranks_to_tiktoken({"a": 1})
    with pytest.raises(ValueError, match="rank -1 of .* is out of range"):
        io.ranks_to_tiktoken({b"a": -1})
