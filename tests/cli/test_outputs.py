"""bpeforge.cli.outputs: what `bpeforge train -o` writes (the folder and the .tiktoken file),
--force and what it may replace, and tiktoken reading the new files anew."""

import shutil
import subprocess
import sys

import tiktoken.load

from .helpers import ENV, check_saved, no_outputs_in, run


def test_output_naming_and_force(corpus, tmp_path):
    d, _ = corpus
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "named.tiktoken")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "named.tiktoken").is_file() and (tmp_path / "named" / "tokenizer.json").is_file()
    r = run("train", d / "docs.txt", "--vocab-size", 350, "-o", tmp_path / "named", "--force")
    assert r.returncode == 0, r.stderr
    assert check_saved(tmp_path / "named").n_vocab == 350
    assert sorted(p.name for p in tmp_path.iterdir()) == ["named", "named.tiktoken"]  # no temporary leftovers
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "new" / "deeper" / "tok")
    assert r.returncode == 0 and (tmp_path / "new" / "deeper" / "tok.tiktoken").is_file()
    # the suffix in any case, as save and load take it: the file keeps the case typed
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "cased" / "Tok.TikToken")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "cased").iterdir()) == ["Tok", "Tok.TikToken"]
    ranks = (tmp_path / "cased" / "Tok" / "tokenizer.tiktoken").read_bytes()
    assert (tmp_path / "cased" / "Tok.TikToken").read_bytes() == ranks and len(ranks.splitlines()) > 256
    # a folder named like a ranks file is refused before anything is read or written
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "x.tiktoken.tiktoken")
    assert r.returncode == 2 and "named like a .tiktoken ranks file" in r.stderr, r.stderr
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "x.TIKTOKEN.tiktoken")
    assert r.returncode == 2 and "named like a .tiktoken ranks file" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_force_replaces_a_linked_output_folder_without_leftovers(corpus, tmp_path):
    d, _ = corpus
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "real")
    assert r.returncode == 0, r.stderr
    (tmp_path / "link").symlink_to("real")
    r = run("train", d / "docs.txt", "--vocab-size", 350, "-o", tmp_path / "link", "--force")
    assert r.returncode == 0, r.stderr
    # The link is replaced by the new folder; the folder it pointed to is left as it was.
    assert check_saved(tmp_path / "link").n_vocab == 350 and not (tmp_path / "link").is_symlink()
    assert check_saved(tmp_path / "real").n_vocab == 300
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "link.tiktoken", "real", "real.tiktoken"]


def test_tiktoken_reads_the_outputs_anew_after_a_forced_retrain(corpus, tmp_path, monkeypatch):
    # tiktoken caches local files by path: retraining to the same -o must not leave it the old copy.
    d, _ = corpus
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    env = {**ENV, "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache")}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    for output in ("out/tok", "./dot/tok.tiktoken", "x/../up/tok/", "cased/Tok.TikToken"):
        stem, suffix = output.rstrip("/").removesuffix(".tiktoken").removesuffix(".TikToken"), ".tiktoken"
        if output.endswith(".TikToken"):
            suffix = ".TikToken"  # the file keeps the case typed, and is read anew under that name
        for vocab in (300, 340):
            r = subprocess.run(
                [sys.executable, "-m", "bpeforge", "train", str(d / "docs.txt"), "-o", output, "--vocab-size", str(vocab), "--force"],
                cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
            )
            assert r.returncode == 0, r.stderr
            # Read as typed, and absolute: tiktoken keys its cache by the string.
            for path in (stem + suffix, stem + "/tokenizer.tiktoken", str(tmp_path / stem) + suffix):
                assert len(tiktoken.load.load_tiktoken_bpe(path)) == vocab - 9, (output, path)


def test_an_output_path_through_a_missing_folder_creates_only_what_it_names(corpus, tmp_path):
    d, _ = corpus
    r = run("train", d / "docs.txt", "-o", "a/../b", "--vocab-size", 300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert no_outputs_in(tmp_path) == ["b", "b.tiktoken"]
    check_saved(tmp_path / "b")


def test_force_ignores_what_an_interrupted_save_left(corpus, tmp_path):
    d, _ = corpus
    assert run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "tok").returncode == 0
    (tmp_path / "tok" / ".tokenizer.json.k2j_x9a0.tmp").write_text("{")  # a file's save cut off
    (tmp_path / ".tok.ab12cd34.tmp").mkdir()  # a folder's save cut off, beside it
    r = run("train", d / "docs.txt", "--vocab-size", 350, "-o", tmp_path / "tok", "--force")
    assert r.returncode == 0, r.stderr
    assert check_saved(tmp_path / "tok").n_vocab == 350
    # Only such files: a folder of that name, or another name, is the user's.
    mine = tmp_path / "tok" / ".tokenizer.json.\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668.tmp"  # digits, not ASCII ones
    mine.write_text("mine")
    r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "tok", "--force")
    assert r.returncode == 1 and "holds something other than a tokenizer" in r.stderr
    assert mine.read_text() == "mine"
    mine.unlink()
    for name in (".tokenizer.json.12345678.tmp", ".tokenizer.json.notes.tmp"):
        (tmp_path / "tok" / name).mkdir()
        (tmp_path / "tok" / name / "thesis.txt").write_text("precious")
        r = run("train", d / "docs.txt", "--vocab-size", 300, "-o", tmp_path / "tok", "--force")
        assert r.returncode == 1 and "holds something other than a tokenizer" in r.stderr
        assert (tmp_path / "tok" / name / "thesis.txt").read_text() == "precious"
        shutil.rmtree(tmp_path / "tok" / name)
