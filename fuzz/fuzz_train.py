"""Coverage-guided fuzzing of the whole Python path with atheris: training on arbitrary text and
patterns, the tiktoken export, encode/decode, save/load, and the reference trainer on small
inputs. Any exception but the documented ValueError/TypeError for bad input is a finding.

    pip install atheris regex
    python fuzz/fuzz_train.py $(mktemp -d) fuzz/corpus_train -max_total_time=600

(libFuzzer adds new inputs to the first folder: a fresh one keeps fuzz/corpus_train, the
checked-in seeds, as it is.)
"""

import os
import sys
import tempfile
import unicodedata
import warnings

import atheris

with atheris.instrument_imports():
    import bpeforge

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import reference  # noqa: E402

# Training stops early on most fuzzed inputs (too few pairs): expected, and it says so each time.
warnings.filterwarnings("ignore", message="training stopped at", category=UserWarning)

PRESETS = sorted(bpeforge.PATTERNS)
REGEX_PIECES = ["\\s+", "\\S+", "\\p{L}+", "\\p{N}{1,3}", "[a-z]", ".", "(?i:'s)", "(?!\\S)", "|", "(", ")", "*", "+", "?", "a"]
SAVE_DIR = tempfile.mkdtemp(prefix="bpeforge-fuzz-")


def same_unicode_in_both_engines(text):
    """Python's `regex` follows a newer Unicode than the Rust tables that bpeforge and tiktoken
    share: characters it knows and they do not (unassigned in this Python, or U+0295, which
    moved from Ll to Lo) split differently there, which is no bpeforge bug."""
    return all(unicodedata.category(c) != "Cn" and c != "\u0295" for c in text)


def pattern_from(fdp):
    choice = fdp.ConsumeIntInRange(0, len(PRESETS) + 1)
    if choice < len(PRESETS):
        return bpeforge.PATTERNS[PRESETS[choice]], True
    n = fdp.ConsumeIntInRange(1, 6)
    return "".join(REGEX_PIECES[fdp.ConsumeIntInRange(0, len(REGEX_PIECES) - 1)] for _ in range(n)), False


def test_one_input(data):
    fdp = atheris.FuzzedDataProvider(data)
    pattern, is_preset = pattern_from(fdp)
    vocab_size = fdp.ConsumeIntInRange(256, 420)
    specials = ["<|bos|>", "<|x|>"][: fdp.ConsumeIntInRange(0, 2)]
    texts = [fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 64)) for _ in range(fdp.ConsumeIntInRange(0, 6))]
    texts = texts * fdp.ConsumeIntInRange(1, 3)
    if vocab_size < 256 + len(specials):
        vocab_size = 256 + len(specials)
    try:
        tok = bpeforge.Tokenizer.train_from_iterator(texts, vocab_size, pattern=pattern, special_tokens=specials)
    except bpeforge.NoTextError:
        assert not any(texts), texts  # only for no text at all
        return
    except ValueError as e:
        expected = ("invalid split pattern", "split pattern failed", "can match an empty string", "matched an empty string", "no such preset")
        if is_preset or not any(reason in str(e) for reason in expected):
            raise
        return
    if is_preset and sum(map(len, texts)) < 200 and all(map(same_unicode_in_both_engines, texts)):
        ranks = sorted(tok.mergeable_ranks.items(), key=lambda x: x[1])
        assert ranks == reference.train_ranks(texts, vocab_size - len(specials), pattern), "differs from the reference"
    for text in texts + ["".join(texts), "<|bos|>"]:
        ids = tok.encode(text)
        # tiktoken (like training) drops text the pattern does not match: what comes back is
        # what bpeforge's own splitter keeps, which also checks it against tiktoken's regex.
        kept = "".join(bpeforge.split(text, pattern))
        assert tok.decode(ids) == kept, (text, kept, ids)
        assert sum(tok.token_bytes()[i] for i in ids) == len(kept.encode())
    tok.save(SAVE_DIR)
    again = bpeforge.Tokenizer.load(SAVE_DIR)
    assert again.mergeable_ranks == tok.mergeable_ranks and again.special_tokens == tok.special_tokens


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
