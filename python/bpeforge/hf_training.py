"""Training with HuggingFace ``tokenizers``' own objects: :func:`train_from_iterator` takes a
``tokenizers.Tokenizer`` and a ``BpeTrainer`` and leaves the tokenizer as
``tokenizer.train_from_iterator(texts, trainer=trainer)`` would (``tokenizer.to_str()`` equal as
JSON), training with bpeforge's recipe and HuggingFace's tie-break
(``tie_break="huggingface"``, see :mod:`bpeforge.training`).

What is reproduced, and how (``docs/huggingface.md`` gives the arguments):

- the pre-tokenizer: ``ByteLevel`` (its regex is GPT-2's, bpeforge's ``gpt2`` preset; without
  it, each text is one span), or ``Sequence([Split(Regex(p), behavior="isolated"),
  ByteLevel(use_regex=False)])`` with ``p`` the HuggingFace spelling of one of bpeforge's
  presets; ``add_prefix_space`` puts a space before each text (each piece of a ``Split``) that
  does not start with one;
- the trainer's options: ``vocab_size``, ``min_frequency``, ``special_tokens``,
  ``initial_alphabet`` (characters of the byte-level alphabet), ``limit_alphabet``,
  ``max_token_length`` and ``show_progress`` (bpeforge's progress on stderr);
- ``max_token_length``: HuggingFace counts a pair made with a merged token only if its token has
  fewer than ``max_token_length`` characters (one per byte here), while a pair of two single
  characters is always counted; in bpeforge's words (at most N bytes), N = max(that - 1, 2).

Anything else (another model, a normalizer, a pre-tokenizer or regex outside that list,
``continuing_subword_prefix``, ``end_of_word_suffix``, added tokens already in the tokenizer) is
refused with a ValueError naming it, never trained otherwise. ``tokenizers`` is imported only
when called.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Iterable, Iterator, Optional

from .huggingface import byte_level, byte_of_character, oniguruma_regex
from .patterns import PATTERNS
from .training import Recipe, TrainedRanks, Training, check_texts

__all__ = ["huggingface_tokenizer_json", "recipe_and_split", "train_from_iterator"]

# A span per text: ByteLevel without its regex splits nothing.
WHOLE_TEXT = r"[\s\S]+"

# HuggingFace's pair counts are 32-bit signed integers.
HF_PAIR_COUNT_LIMIT = 1 << 31


class Split:
    """How texts are cut into spans for HuggingFace's pre-tokenizer: bpeforge's ``pattern``,
    and whether a space goes before each text (``prefix_text``) or each span (``prefix_span``)
    that does not start with one."""

    def __init__(self, pattern: str, prefix_text: bool = False, prefix_span: bool = False) -> None:
        self.pattern = pattern
        self.prefix_text = prefix_text
        self.prefix_span = prefix_span


def refuse(what: str) -> ValueError:
    return ValueError(f"bpeforge.huggingface.train_from_iterator cannot reproduce {what}")


def preset_of_regex(regex: str) -> Optional[str]:
    """The preset whose HuggingFace (Oniguruma) spelling is ``regex``, or None."""
    for name, pattern in PATTERNS.items():
        try:
            if oniguruma_regex(pattern) == regex or pattern == regex:
                return name
        except ValueError:
            continue
    return None


def split_of(pre_tokenizer: Optional[dict[str, Any]]) -> Split:
    """The :class:`Split` of a tokenizer's pre-tokenizer (its JSON form), or ValueError naming
    what is not supported."""
    if pre_tokenizer is None:
        raise refuse("a tokenizer without a pre-tokenizer (give it pre_tokenizers.ByteLevel())")
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel":
        pattern = "gpt2" if pre_tokenizer.get("use_regex", True) else WHOLE_TEXT
        return Split(pattern, prefix_text=bool(pre_tokenizer.get("add_prefix_space")))
    if kind == "Sequence":
        steps = pre_tokenizer.get("pretokenizers") or []
        if len(steps) == 2 and steps[0].get("type") == "Split" and steps[1].get("type") == "ByteLevel":
            split, level = steps
            if level.get("use_regex", True):
                raise refuse("a ByteLevel with its regex after a Split (give it use_regex=False)")
            behavior, invert = split.get("behavior"), split.get("invert")
            if behavior != "Isolated" or invert:
                raise refuse(f"a Split with behavior={behavior!r}, invert={invert!r} (only 'isolated', not inverted)")
            regex = (split.get("pattern") or {}).get("Regex")
            if regex is None:
                raise refuse(f"a Split on a literal string ({split.get('pattern')!r}): give it tokenizers.Regex(...)")
            preset = preset_of_regex(regex)
            if preset is None:
                raise refuse(f"the Split regex {regex!r}: only the HuggingFace spellings of bpeforge's presets ({', '.join(PATTERNS)}) are supported")
            return Split(preset, prefix_span=bool(level.get("add_prefix_space")))
    raise refuse(f"the pre-tokenizer {json.dumps(pre_tokenizer)[:200]}: only ByteLevel, or Sequence([Split(Regex(...), behavior='isolated'), ByteLevel(use_regex=False)])")


def recipe_and_split(tokenizer: Any, trainer: Any) -> tuple[Recipe, Split]:
    """The recipe and the split that train what ``trainer`` trains for ``tokenizer``, both HF's
    objects, or ValueError naming what cannot be reproduced."""
    from tokenizers import trainers

    if not isinstance(trainer, trainers.BpeTrainer):
        raise refuse(f"a {type(trainer).__name__}: only a tokenizers.trainers.BpeTrainer")
    config = json.loads(tokenizer.to_str())
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        raise refuse(f"a {model.get('type')} model: only models.BPE")
    if config.get("normalizer") is not None:
        raise refuse(f"the normalizer {config['normalizer'].get('type')} (bpeforge trains on the text as it is)")
    if config.get("added_tokens"):
        raise refuse("a tokenizer that already has added tokens (HuggingFace keeps their old ids): start from a new Tokenizer")
    for option in ("continuing_subword_prefix", "end_of_word_suffix"):
        if getattr(trainer, option, None):
            raise refuse(f"the trainer's {option}={getattr(trainer, option)!r}")
    split = split_of(config.get("pre_tokenizer"))
    specials: list[str] = []
    for token in trainer.special_tokens:
        content = token.content
        if content not in specials:  # HuggingFace numbers a repeated special token once
            specials.append(content)
        if content in byte_of_character():
            raise refuse(f"the special token {content!r}, a single byte-level character (HuggingFace gives that byte its id)")
    initial = []
    for char in trainer.initial_alphabet:
        if char not in byte_of_character():
            raise refuse(f"the initial_alphabet character {char!r}, outside the byte-level alphabet (no byte-level text holds it)")
        initial.append(byte_of_character()[char])
    length = trainer.max_token_length
    recipe = Recipe(
        trainer.vocab_size,
        pattern=split.pattern,
        special_tokens=specials,
        min_frequency=max(trainer.min_frequency, 1),  # HuggingFace's 0 and 1 are alike
        max_token_length=None if length is None else max(length - 1, 2),
        tie_break="huggingface",
        initial_alphabet=initial or None,
        limit_alphabet=trainer.limit_alphabet,
    )
    return recipe, split


def with_prefix_space(texts: Iterable[Any]) -> Iterator[Any]:
    """``texts`` (str or lists of str) with a space before each non-empty text that does not
    start with one, as ``ByteLevel(add_prefix_space=True)`` does."""
    for item in texts:
        if isinstance(item, str):
            yield item if item == "" or item.startswith(" ") else " " + item
        elif isinstance(item, (list, tuple)):
            yield [t if not isinstance(t, str) or t == "" or t.startswith(" ") else " " + t for t in item]
        else:
            raise TypeError(f"with add_prefix_space, items must be str or lists of str, got {type(item).__name__}")


def trained_ranks(recipe: Recipe, split: Split, texts: Iterable[Any], *, progress: Any = False, num_threads: Optional[int] = None) -> TrainedRanks:
    """The training of ``recipe`` on ``texts`` cut as ``split`` says."""
    check_texts(texts)
    if split.prefix_text:
        texts = with_prefix_space(texts)
    training = Training(recipe, num_threads=num_threads)
    if not split.prefix_span:
        return training.run(texts, progress=progress)
    from .counts import count

    counts: dict[bytes, int] = {}
    for span, n in count(texts, pattern=recipe.pattern, num_threads=num_threads).items():
        if not span.startswith(b" "):
            span = b" " + span
        counts[span] = counts.get(span, 0) + n
    return training.run(counts=counts, progress=progress)


def huggingface_model(trained: TrainedRanks) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The vocabulary and merges of a training with HuggingFace's tie-break, spelled in the
    byte-level alphabet; ValueError where HuggingFace would have numbered otherwise (a merged
    token spelled as a special token, which it would give the special token's id)."""
    vocab = {name: i for i, name in enumerate(trained.special_tokens)}
    for token, rank in trained.ranks.items():
        spelled = byte_level(token)
        if spelled in vocab:
            raise ValueError(
                f"the merged token {spelled!r} is spelled as a special token, whose id HuggingFace gives it: not reproduced"
            )
        vocab[spelled] = rank
    by_id = {rank: token for token, rank in trained.ranks.items()}
    merges = []
    for left, right, _, count in trained.merges():
        if count >= HF_PAIR_COUNT_LIMIT:
            warnings.warn(
                f"a merge counted {count:,} times, past HuggingFace's 32-bit pair counts (2^31-1): bpeforge counts it "
                "exactly, HuggingFace's count would have wrapped around (so its training differs from here on)",
                stacklevel=3,
            )
        merges.append((byte_level(by_id[left]), byte_level(by_id[right])))
    return vocab, merges


def huggingface_tokenizer_json(trained: TrainedRanks) -> dict[str, Any]:
    """The ``tokenizer.json`` (as a dict) that HuggingFace's training with the same recipe
    writes: a new ``Tokenizer(models.BPE())`` whose pre-tokenizer is
    ``Sequence([Split(Regex(p), behavior="isolated"), ByteLevel(add_prefix_space=False,
    use_regex=False)])`` (``p``: the recipe's pattern in HuggingFace's spelling) and whose
    decoder is ``ByteLevel()``, trained by a ``BpeTrainer`` with the recipe's options. What the
    command line writes for ``--tie-break huggingface``; ValueError for a custom pattern (only
    the presets' spelling for HuggingFace's regex engine is checked)."""
    from .patterns import pattern_label

    if pattern_label(trained.pattern) == "custom regex":
        raise ValueError(
            "a custom split pattern: HuggingFace splits with another regex engine (Oniguruma), checked against "
            f"bpeforge's only for the presets ({', '.join(PATTERNS)})"
        )
    vocab, merges = huggingface_model(trained)
    added = [
        {"id": i, "content": name, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for i, name in enumerate(trained.special_tokens)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": oniguruma_regex(trained.pattern)}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": dict(sorted(vocab.items(), key=lambda item: item[1])),
            "merges": [list(m) for m in merges],
        },
    }


def train_from_iterator(tokenizer: Any, iterator: Iterable[Any], trainer: Any = None, *, num_threads: Optional[int] = None) -> None:
    """Trains ``tokenizer`` (a ``tokenizers.Tokenizer`` with a BPE model) on ``iterator`` (str or
    lists of str) as ``trainer`` (a ``tokenizers.trainers.BpeTrainer``; None for its defaults)
    says, leaving it as ``tokenizer.train_from_iterator(iterator, trainer=trainer)`` would:
    the same vocabulary, merges and added tokens, the model's other fields kept. What cannot be
    reproduced is refused with a ValueError naming it, before any text is read (see the
    module's doc).

    >>> from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    >>> tok = Tokenizer(models.BPE()); tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    >>> train_from_iterator(tok, ["low lower lowest"] * 5, trainers.BpeTrainer(vocab_size=20, show_progress=False))
    >>> tok.get_vocab_size(), tok.encode("lowest").tokens
    (20, ['low', 'est'])
    """
    from tokenizers import models, trainers

    if trainer is None:
        trainer = trainers.BpeTrainer()
    recipe, split = recipe_and_split(tokenizer, trainer)
    trained = trained_ranks(recipe, split, iterator, progress=bool(trainer.show_progress), num_threads=num_threads)
    vocab, merges = huggingface_model(trained)
    old = tokenizer.model
    tokenizer.model = models.BPE(
        vocab=vocab,
        merges=merges,
        dropout=old.dropout,
        unk_token=old.unk_token,
        fuse_unk=old.fuse_unk,
        byte_fallback=old.byte_fallback,
        ignore_merges=old.ignore_merges,
    )
    tokenizer.add_special_tokens(trainer.special_tokens)
