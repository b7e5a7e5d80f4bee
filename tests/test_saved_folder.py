"""The saved folder (format version 2): every library loads it with the same ids, every file is
covered by a checksum (mutation tests), loading never follows a symlink out of the folder nor
echoes a file's contents, writers never follow a symlink planted at a temporary name, and the
chat template of ``tokenizer_config.json`` renders as :meth:`render_conversation` does."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken.load import load_tiktoken_bpe

import bpeforge
import bpeforge.cli
from bpeforge import _files as files, _io as io
from bpeforge.nanochat import RustBPETokenizer
from strategies import examples

V1 = Path(__file__).parent / "data" / "saved-v1"
TEXTS = ["hello world, hello there 12345", "low lower lowest <|bos|> ünïcödé 日本語", "def f(x):\n    return x + 1\n"] * 10
SAMPLE = "hello lowest 12345 there, ünïcödé\n\tdef f(x): return x"


@pytest.fixture(autouse=True)
def no_tiktoken_cache(monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would serve a file's old copy by its path


@pytest.fixture(scope="module")
def nano():
    return RustBPETokenizer.train_from_iterator(TEXTS, vocab_size=256 + 9 + 40)


@pytest.fixture
def saved(nano, tmp_path):
    nano.save(tmp_path / "tok")
    return tmp_path / "tok"


def test_every_library_loads_the_folder_with_the_same_ids(nano, saved):
    assert sorted(os.listdir(saved)) == sorted(io.SAVED_FILES)
    ids = nano.encode(SAMPLE)
    assert bpeforge.Tokenizer.load(saved).encode(SAMPLE) == ids
    enc = tiktoken.Encoding("t", pat_str=nano.pattern, mergeable_ranks=load_tiktoken_bpe(str(saved / io.RANKS_FILE)), special_tokens=nano.special_tokens)
    assert enc.encode_ordinary(SAMPLE) == ids
    hf = tokenizers.Tokenizer.from_file(str(saved / io.HF_TOKENIZER_FILE))
    assert hf.encode(SAMPLE).ids == ids
    assert hf.encode("<|bos|>hi").ids[0] == nano.get_bos_token_id()  # special tokens at their ids
    assert pickle.loads((saved / io.PICKLE_FILE).read_bytes()).encode_ordinary(SAMPLE) == ids  # nanochat's
    assert io.read_token_bytes(saved) == nano.token_bytes()
    config = json.loads((saved / io.HF_CONFIG_FILE).read_text())
    assert (config["bos_token"], config["eos_token"], config["pad_token"]) == ("<|bos|>", "<|assistant_end|>", "<|assistant_end|>")
    meta = json.loads((saved / io.META_FILE).read_text())
    assert meta["version"] == 2 and set(meta["files"]) == set(io.SAVED_FILES) - {io.META_FILE}


def test_transformers_loads_the_folder_when_installed(nano, saved):
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoTokenizer.from_pretrained(str(saved))
    assert auto(SAMPLE, add_special_tokens=False)["input_ids"] == nano.encode(SAMPLE)
    conversation = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}]
    assert auto.apply_chat_template(conversation, tokenize=True) == nano.render_conversation({"messages": conversation}, None)[0]


def test_a_custom_pattern_off_the_list_saves_without_the_huggingface_files(tmp_path):
    """(A custom pattern of the constructs docs/huggingface.md lists gets them: test_huggingface.py.)"""
    tok = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, r"\w+|\s+")
    tok.save(tmp_path / "t")
    assert sorted(os.listdir(tmp_path / "t")) == sorted([io.META_FILE, io.RANKS_FILE, io.TOKEN_BYTES_FILE])
    assert bpeforge.Tokenizer.load(tmp_path / "t").pattern == r"\w+|\s+"


def test_a_token_too_long_to_check_quickly_saves_without_the_huggingface_files(tmp_path):
    from bpeforge.huggingface import LONGEST_TOKEN_SAVED

    ranks = {bytes([i]): i for i in range(256)}
    token = b"a"
    while len(token) <= LONGEST_TOKEN_SAVED:
        token += token
        ranks[token] = len(ranks)
    tok = bpeforge.Tokenizer(ranks, "gpt4")
    tok.save(tmp_path / "t")
    assert io.HF_TOKENIZER_FILE not in os.listdir(tmp_path / "t")
    assert bpeforge.Tokenizer.load(tmp_path / "t").mergeable_ranks == ranks
    tok.save_huggingface(tmp_path / "hf")  # asked for: written regardless
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "hf" / io.HF_TOKENIZER_FILE)).encode("a" * 3000).ids == tok.encode("a" * 3000)


def test_a_folder_saved_by_version_1_still_loads():
    # Written by the version-1 writer (bpeforge's config in tokenizer.json), checked in.
    tok = bpeforge.Tokenizer.load(V1)
    assert tok.encode("hello lowest 12345") == [259, 265, 101, 115, 116, 32, 266, 267, 53]
    assert tok.special_tokens["<|bos|>"] == 268 and io.read_token_bytes(V1) == tok.token_bytes()


# ------------------------------------------------------------------------------ mutations


def flip(data: bytes, at: int) -> bytes:
    at %= len(data)
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.mark.parametrize("name", sorted(io.SAVED_FILES))
@pytest.mark.parametrize("where", [0, 0.5, -2])
def test_any_changed_byte_of_any_file_is_caught(saved, name, where):
    path = saved / name
    data = path.read_bytes()
    path.write_bytes(flip(data, int(len(data) * where) if isinstance(where, float) else where))
    with pytest.raises(bpeforge.TokenizerFileError, match=name.replace(".", r"\.")):
        bpeforge.Tokenizer.load(saved)


@pytest.mark.parametrize(
    "name, old, new",
    [
        (io.META_FILE, r"\\p{N}{1,2}", r"\\p{N}{1,3}"),  # the pattern: would encode differently
        (io.META_FILE, "<|user_start|>", "<|user_begin|>"),  # a special token's name
        (io.META_FILE, '"n_ranks": 296', '"n_ranks": 295'),
        (io.HF_CONFIG_FILE, '"bos_token": "<|bos|>"', '"bos_token": "<|user_start|>"'),
        (io.HF_CONFIG_FILE, "<|user_start|>' + ns.system", "<|user_end|>' + ns.system"),  # the chat template
        (io.HF_TOKENIZER_FILE, '"ignore_merges": true', '"ignore_merges": false'),
        (io.HF_TOKENIZER_FILE, r"\\p{N}{1,2}", r"\\p{N}{1,3}"),
    ],
)
def test_edits_that_would_change_the_encoding_are_caught(saved, name, old, new):
    path = saved / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(bpeforge.TokenizerFileError, match=r"does not match"):
        bpeforge.Tokenizer.load(saved)


def test_a_missing_file_that_bpeforge_json_names_is_caught(saved):
    (saved / io.HF_CONFIG_FILE).unlink()
    with pytest.raises(bpeforge.TokenizerFileError, match=f"{io.HF_CONFIG_FILE} is missing"):
        bpeforge.Tokenizer.load(saved)


# ------------------------------------------------------------------------------ symlinks


SECRET = "root:x:0:0:SECRET-LINE:/root:/bin/bash\n"


@pytest.mark.parametrize("name", sorted(io.SAVED_FILES))
def test_load_refuses_a_member_that_is_a_symlink(saved, tmp_path, name):
    outside = tmp_path / "passwd"
    outside.write_text(SECRET)
    (saved / name).unlink()
    (saved / name).symlink_to(outside)
    with pytest.raises(bpeforge.TokenizerFileError, match="symbolic link") as e:
        bpeforge.Tokenizer.load(saved)
    assert "SECRET" not in str(e.value)


def test_load_refuses_a_member_linked_to_a_copy_of_itself(nano, tmp_path):
    nano.save(tmp_path / "tok")
    for name in (io.META_FILE, io.RANKS_FILE):
        (tmp_path / name).write_bytes((tmp_path / "tok" / name).read_bytes())
        (tmp_path / "tok" / name).unlink()
        (tmp_path / "tok" / name).symlink_to(tmp_path / name)
        with pytest.raises(bpeforge.TokenizerFileError, match="symbolic link"):
            bpeforge.Tokenizer.load(tmp_path / "tok")
        (tmp_path / "tok" / name).unlink()
        (tmp_path / name).rename(tmp_path / "tok" / name)
    assert bpeforge.Tokenizer.load(tmp_path / "tok").encode(SAMPLE) == nano.encode(SAMPLE)


@pytest.mark.parametrize("name", [io.LEGACY_CONFIG_FILE, io.RANKS_FILE, io.TOKEN_BYTES_FILE])
def test_load_of_a_version_1_folder_refuses_symlinks_too(tmp_path, name):
    folder = tmp_path / "v1"
    shutil.copytree(V1, folder)
    (tmp_path / "passwd").write_text(SECRET)
    (folder / name).unlink()
    (folder / name).symlink_to(tmp_path / "passwd")
    with pytest.raises(bpeforge.TokenizerFileError, match="symbolic link") as e:
        bpeforge.Tokenizer.load(folder)
    assert "SECRET" not in str(e.value)


def test_errors_never_echo_a_file_s_contents(tmp_path):
    # A version-1 config without checksums lets the parser see a foreign file.
    folder = tmp_path / "v1"
    shutil.copytree(V1, folder)
    config = json.loads((folder / io.LEGACY_CONFIG_FILE).read_text())
    for key in ("ranks_sha256", "token_bytes_sha256", "n_ranks"):
        del config[key]
    (folder / io.LEGACY_CONFIG_FILE).write_text(json.dumps(config))
    for text in (SECRET, "U0VDUkVU 1\nU0VDUkVU 2\n", "!!SECRET 1\n", "YQ== SECRET\n"):
        (folder / io.RANKS_FILE).write_text(text)
        with pytest.raises(bpeforge.TokenizerFileError) as e:
            bpeforge.Tokenizer.load(folder)
        assert "SECRET" not in str(e.value), str(e.value)
    (folder / io.LEGACY_CONFIG_FILE).write_text('{"format": "SECRET"')
    with pytest.raises(bpeforge.TokenizerFileError) as e:
        bpeforge.Tokenizer.load(folder)
    assert "SECRET" not in str(e.value)


@pytest.fixture
def planted_names(monkeypatch, tmp_path):
    """Makes mkstemp and mkdtemp try the names of ``planted`` first: a symlink planted there
    (to a victim file or folder) must never be followed."""
    import tempfile

    planted = ["plantedx"]
    real = tempfile._get_candidate_names

    def candidates():
        names = real()

        class Names:
            def __iter__(self):
                return self

            def __next__(self):
                return planted.pop(0) if planted else next(names)

        return Names()

    monkeypatch.setattr(tempfile, "_get_candidate_names", candidates)
    return planted


def test_a_save_never_follows_a_symlink_planted_at_its_temporary_name(nano, tmp_path, planted_names):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    (tmp_path / ".tok.plantedx.tmp").symlink_to(victim)
    nano.save(tmp_path / "tok")
    assert planted_names == []  # the planted name was tried first
    assert sorted(os.listdir(victim)) == ["keep.txt"] and not (tmp_path / "tok").is_symlink()
    assert bpeforge.Tokenizer.load(tmp_path / "tok").encode(SAMPLE) == nano.encode(SAMPLE)


def test_a_file_write_never_follows_a_symlink_planted_at_its_temporary_name(tmp_path, planted_names):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / ".out.txt.plantedx.tmp").symlink_to(victim)
    files.write_file(tmp_path / "out.txt", b"new")
    assert planted_names == [] and victim.read_text() == "mine" and (tmp_path / "out.txt").read_bytes() == b"new"


def test_counts_never_follow_a_symlink_planted_at_the_old_temporary_names(tmp_path):
    counts = bpeforge.count(["hello world"] * 3)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    for thread in range(64):  # the names the previous writer used: .NAME.tmp-PID-THREAD
        (tmp_path / f".c.parquet.tmp-{os.getpid()}-{thread}").symlink_to(victim)
    counts.save(tmp_path / "c.parquet")
    assert victim.read_text() == "mine"
    assert bpeforge.SpanCounts.load(tmp_path / "c.parquet") == counts


def test_a_symlink_at_an_output_file_is_replaced_not_followed(tmp_path, nano, saved):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    (tmp_path / "t.tiktoken").symlink_to(victim)
    assert bpeforge.cli.main(["export", str(saved), "--format", "tiktoken", "-o", str(tmp_path / "t.tiktoken"), "--force"]) == 0
    assert victim.read_text() == "mine" and not (tmp_path / "t.tiktoken").is_symlink()
    (tmp_path / "c.parquet").symlink_to(victim)
    docs = tmp_path / "docs.txt"
    docs.write_text("hello world\n" * 5)
    r = subprocess.run([sys.executable, "-m", "bpeforge", "count", str(docs), "-q", "-o", str(tmp_path / "c.parquet"), "--force"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "mine" and not (tmp_path / "c.parquet").is_symlink()


# ------------------------------------------------------------------------------ --force


def test_export_refuses_an_existing_output_without_force(tmp_path, saved, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    main = bpeforge.cli.main
    assert main(["export", str(saved), "--format", "tiktoken", "-o", str(notes)]) == 1
    assert "already exists (use --force to replace it)" in capsys.readouterr().err and notes.read_text() == "mine"
    assert main(["export", str(saved), "--format", "tiktoken", "-o", str(notes), "--force"]) == 0  # a file: replaced
    assert load_tiktoken_bpe(str(notes)) == load_tiktoken_bpe(str(saved / io.RANKS_FILE))
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    for force in ([], ["--force"]):
        assert main(["export", str(saved), "--format", "huggingface", "-o", str(model)] + force) == 1
    assert "holds something other than a tokenizer bpeforge saved" in capsys.readouterr().err
    assert sorted(os.listdir(model)) == ["model.safetensors"]
    (tmp_path / "empty").mkdir()
    assert main(["export", str(saved), "--format", "huggingface", "-o", str(tmp_path / "empty")]) == 0  # empty: written
    assert main(["export", str(saved), "--format", "huggingface", "-o", str(tmp_path / "empty")]) == 1
    assert main(["export", str(saved), "--format", "huggingface", "-o", str(tmp_path / "empty"), "--force"]) == 0
    assert bpeforge.Tokenizer.load(tmp_path / "empty").mergeable_ranks == bpeforge.Tokenizer.load(saved).mergeable_ranks


def test_eval_plot_follows_the_rule_too(tmp_path, saved, capsys):
    pytest.importorskip("matplotlib")
    text = tmp_path / "t.txt"
    text.write_text(SAMPLE)
    plot = tmp_path / "plot.png"
    plot.write_bytes(b"mine")
    argv = ["eval", str(saved), "--text", str(text), "--plot", str(plot)]
    assert bpeforge.cli.main(argv) == 1
    assert "already exists (use --force to replace it)" in capsys.readouterr().err and plot.read_bytes() == b"mine"
    assert bpeforge.cli.main(argv + ["--force"]) == 0
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_count_checks_its_output_before_reading(tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("hello world\n")
    r = subprocess.run([sys.executable, "-m", "bpeforge", "count", str(docs), "-o", "/proc/bpeforge-no-such/c.parquet"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("bpeforge: error: cannot write the output /proc/bpeforge-no-such/c.parquet"), r.stderr
    assert "counting" not in r.stderr and "distinct spans" not in r.stdout


# ------------------------------------------------------------------------------ chat template


def render_template(folder: Path, messages: list, add_generation_prompt: bool = False) -> list:
    """The ids of ``messages`` as transformers' ``apply_chat_template(tokenize=True)`` makes
    them: the template rendered by Jinja in a sandbox (trim_blocks, lstrip_blocks), then encoded
    with the special tokens recognized and none added."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    config = json.loads((folder / io.HF_CONFIG_FILE).read_text())
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(config["chat_template"]).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=config["bos_token"], eos_token=config["eos_token"]
    )
    return tokenizers.Tokenizer.from_file(str(folder / io.HF_TOKENIZER_FILE)).encode(text, add_special_tokens=False).ids


# Texts without a special token's name in them (HuggingFace would read it as the token).
texts = st.text(st.characters(codec="utf-8", exclude_characters="<"), max_size=20)
parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "python", "text": t}, texts),
        st.builds(lambda t: {"type": "python_output", "text": t}, texts),
    ),
    max_size=3,
)


@st.composite
def conversations(draw):
    messages = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(texts)})
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(texts)})
        if draw(st.booleans()):
            # parts with a text part between tool parts, never two text parts side by side
            content = draw(st.one_of(texts, parts.map(lambda ps: [{"type": "text", "text": "ok"}] + ps)))
            messages.append({"role": "assistant", "content": content})
        else:
            messages.append({"role": "assistant", "content": draw(texts)})
    return messages


@pytest.fixture(scope="module")
def nano_folder(nano, tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat") / "tok"
    nano.save(folder)
    return folder


@settings(max_examples=examples(60), deadline=None)
@given(conversations())
def test_the_chat_template_renders_as_render_conversation(nano, nano_folder, messages):
    assert render_template(nano_folder, messages) == nano.render_conversation({"messages": messages}, None)[0]
    if messages[-1]["role"] == "assistant" and len(messages) > 1 + (messages[0]["role"] == "system"):
        assert render_template(nano_folder, messages[:-1], add_generation_prompt=True) == nano.render_for_completion(messages, None)


def test_no_chat_template_without_nanochat_s_special_tokens(tmp_path):
    tok = bpeforge.Tokenizer.train_from_iterator(TEXTS, 280, special_tokens=["<|endoftext|>"])
    tok.save(tmp_path / "t")
    config = json.loads((tmp_path / "t" / io.HF_CONFIG_FILE).read_text())
    assert "chat_template" not in config and config["bos_token"] == config["eos_token"] == config["pad_token"] == "<|endoftext|>"


# ------------------------------------------------------------------------------ fallbacks, leftovers


def test_without_rename_exchange_a_folder_is_replaced_in_two_renames(nano, tmp_path, monkeypatch):
    import errno

    other = bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, "gpt4")
    other.save(tmp_path / "tok")

    def unsupported(source, target, flags):
        raise OSError(errno.EINVAL, "not supported by this file system")

    monkeypatch.setattr(files, "renameat2", unsupported)
    nano.save(tmp_path / "tok")
    assert bpeforge.Tokenizer.load(tmp_path / "tok").encode(SAMPLE) == nano.encode(SAMPLE)
    assert sorted(os.listdir(tmp_path)) == ["tok"]  # the old folder removed, nothing left beside it


def test_without_symlinks_train_writes_a_copy_beside_the_folder(tmp_path, monkeypatch):
    import errno

    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(TEXTS))

    def no_symlinks(*args, **kwargs):
        raise OSError(errno.EPERM, "symlinks are not supported here")

    monkeypatch.setattr(os, "symlink", no_symlinks)
    for vocab in ("280", "290"):  # a first save, then one replacing it
        argv = ["train", str(docs), "-q", "--vocab-size", vocab, "-o", str(tmp_path / "out" / "T"), "--force"]
        assert bpeforge.cli.main(argv) == 0
        ranks = bpeforge.Tokenizer.load(tmp_path / "out" / "T").mergeable_ranks
        assert len(ranks) == int(vocab) - 9
        assert not (tmp_path / "out" / "T.tiktoken").is_symlink() and load_tiktoken_bpe(str(tmp_path / "out" / "T.tiktoken")) == ranks


def test_a_folder_holding_other_files_keeps_them(nano, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    bpeforge.Tokenizer({bytes([i]): i for i in range(256)}, "gpt4").save(model)
    nano.save(model)  # file by file, bpeforge.json last
    assert (model / "model.safetensors").read_bytes() == b"weights"
    assert bpeforge.Tokenizer.load(model).encode(SAMPLE) == nano.encode(SAMPLE)
    assert sorted(os.listdir(tmp_path)) == ["model"]


def test_leftovers_of_killed_saves_are_removed_unless_a_live_save_holds_them(nano, tmp_path, monkeypatch):
    import fcntl

    dead = tmp_path / ".tok.deadbeef.tmp"  # a folder a killed save left
    dead.mkdir()
    (dead / io.RANKS_FILE).write_text("half")
    live = tmp_path / ".tok.alive123.tmp"  # one a save under way holds
    live.mkdir()
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        nano.save(tmp_path / "tok")
        assert dead.exists()  # too recent to be taken for a leftover (its save may have just begun)
        monkeypatch.setattr(files, "LEFTOVER_AGE", 0.0)
        nano.save(tmp_path / "tok")
        assert not dead.exists() and live.exists()
    finally:
        os.close(fd)
    planted = tmp_path / ".tok.symlink1.tmp"
    planted.symlink_to(tmp_path / "tok")
    nano.save(tmp_path / "tok")
    assert planted.is_symlink() and (tmp_path / "tok" / io.META_FILE).is_file()  # a symlink is never followed
