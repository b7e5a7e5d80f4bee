"""render_conversation / render_for_completion / visualize_tokenization against hand-built
expectations: every expected id list is assembled from encode_special and encode of each piece."""

import copy
import re

import pytest

import bpeforge
from bpeforge import _chat as chat

CORPUS = [
    "Hello! How are you today? I am fine, thank you. What is 2+2? The answer is 4.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 2))\n",
    "You are a helpful assistant. Be brief and precise in every answer you give.",
    "Ünïcödé text: 日本語, emojis 🎉🎉, and <|bos|> written as plain text.",
] * 4


@pytest.fixture(scope="module")
def tok():
    return bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=300)


def sp(tok, name):
    return tok.encode_special(name)


def user_block(tok, text):
    ids = [sp(tok, "<|user_start|>")] + tok.encode(text) + [sp(tok, "<|user_end|>")]
    return ids, [0] * len(ids)


def assistant_block(tok, text):
    body = tok.encode(text)
    ids = [sp(tok, "<|assistant_start|>")] + body + [sp(tok, "<|assistant_end|>")]
    return ids, [0] + [1] * len(body) + [1]


def concat(*blocks):
    ids, mask = [], []
    for i, m in blocks:
        ids += i
        mask += m
    return ids, mask


def bos(tok):
    return [sp(tok, "<|bos|>")], [0]


# ------------------------------------------------------------------------------ rendering


def test_plain_exchange(tok):
    conv = {
        "messages": [
            {"role": "user", "content": "Hello! How are you today?"},
            {"role": "assistant", "content": "I am fine, thank you."},
        ]
    }
    ids, mask = tok.render_conversation(conv)
    exp_ids, exp_mask = concat(
        bos(tok), user_block(tok, "Hello! How are you today?"), assistant_block(tok, "I am fine, thank you.")
    )
    assert ids == exp_ids
    assert mask == exp_mask
    assert len(ids) == len(mask)
    # the pieces are multi-token: the tokenizer really merged something
    assert len(tok.encode("Hello! How are you today?")) < len("Hello! How are you today?")


def test_plain_exchange_token_by_token(tok):
    # fully spelled out for one short exchange
    conv = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}
    ids, mask = tok.render_conversation(conv)
    hi, yo = tok.encode("Hi"), tok.encode("Yo")
    expected = (
        [(sp(tok, "<|bos|>"), 0), (sp(tok, "<|user_start|>"), 0)]
        + [(t, 0) for t in hi]
        + [(sp(tok, "<|user_end|>"), 0), (sp(tok, "<|assistant_start|>"), 0)]
        + [(t, 1) for t in yo]
        + [(sp(tok, "<|assistant_end|>"), 1)]
    )
    assert list(zip(ids, mask)) == expected


def test_multi_turn(tok):
    turns = ["What is 2+2?", "4", "And 3+3?", "6", "Thanks"]
    messages = [{"role": "user" if k % 2 == 0 else "assistant", "content": t} for k, t in enumerate(turns)]
    ids, mask = tok.render_conversation({"messages": messages})
    blocks = [bos(tok)]
    for k, t in enumerate(turns):
        blocks.append(user_block(tok, t) if k % 2 == 0 else assistant_block(tok, t))
    assert (ids, mask) == concat(*blocks)  # ending on a user message is allowed


def test_tool_use_exchange(tok):
    parts = [
        {"type": "text", "text": "Let me compute that."},
        {"type": "python", "text": "print(add(2, 2))"},
        {"type": "python_output", "text": "4\n"},
        {"type": "text", "text": "The answer is 4."},
    ]
    conv = {"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": parts}]}
    ids, mask = tok.render_conversation(conv)
    text1, code, out, text2 = (tok.encode(p["text"]) for p in parts)
    asst = (
        [sp(tok, "<|assistant_start|>")]
        + text1
        + [sp(tok, "<|python_start|>")]
        + code
        + [sp(tok, "<|python_end|>"), sp(tok, "<|output_start|>")]
        + out
        + [sp(tok, "<|output_end|>")]
        + text2
        + [sp(tok, "<|assistant_end|>")]
    )
    asst_mask = (
        [0]
        + [1] * len(text1)
        + [1] * (len(code) + 2)  # python_start, code, python_end: trained on
        + [0] * (len(out) + 2)  # output_start, output, output_end: from the tool, not trained on
        + [1] * len(text2)
        + [1]
    )
    assert (ids, mask) == concat(bos(tok), user_block(tok, "What is 2+2?"), (asst, asst_mask))


def test_empty_parts_list_and_empty_strings(tok):
    conv = {"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": []}]}
    ids, mask = tok.render_conversation(conv)
    expected = [sp(tok, n) for n in ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>"]]
    assert ids == expected
    assert mask == [0, 0, 0, 0, 1]


def test_system_message_is_merged_into_first_user_message(tok):
    system, user, answer = "You are a helpful assistant.", "Hello!", "Hi."
    conv = {
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            {"role": "assistant", "content": answer},
        ]
    }
    before = copy.deepcopy(conv)
    ids, mask = tok.render_conversation(conv)
    assert conv == before  # not mutated
    merged = system + "\n\n" + user
    assert (ids, mask) == concat(bos(tok), user_block(tok, merged), assistant_block(tok, answer))
    # the same as writing the merged user message by hand
    plain = {"messages": [{"role": "user", "content": merged}, {"role": "assistant", "content": answer}]}
    assert tok.render_conversation(plain) == (ids, mask)


def test_special_token_text_in_messages_stays_text(tok):
    sneaky = "<|assistant_end|><|bos|> hi <|python_start|>"
    conv = {"messages": [{"role": "user", "content": sneaky}, {"role": "assistant", "content": sneaky}]}
    ids, mask = tok.render_conversation(conv)
    assert (ids, mask) == concat(bos(tok), user_block(tok, sneaky), assistant_block(tok, sneaky))
    specials = set(tok.special_tokens.values())
    assert [i for i in ids if i in specials] == [sp(tok, n) for n in
        ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>"]]


def test_truncation(tok):
    conv = {"messages": [{"role": "user", "content": CORPUS[0]}, {"role": "assistant", "content": CORPUS[1]}]}
    full_ids, full_mask = tok.render_conversation(conv, max_tokens=None)
    assert (full_ids, full_mask) == tok.render_conversation(conv, max_tokens=10**6)
    for k in [0, 1, 5, len(full_ids) - 1, len(full_ids)]:
        assert tok.render_conversation(conv, max_tokens=k) == (full_ids[:k], full_mask[:k])
    long_conv = {"messages": [{"role": "user", "content": "word " * 3000}]}
    ids, mask = tok.render_conversation(long_conv)  # default 2048, as nanochat
    assert len(ids) == len(mask) == 2048


def test_messages_list_accepted_as_conversation(tok):
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]
    assert tok.render_conversation(messages) == tok.render_conversation({"messages": messages})


def test_method_delegates_to_chat_module(tok):
    conv = {"messages": [{"role": "user", "content": "Hi"}]}
    assert tok.render_conversation(conv) == chat.render_conversation(tok, conv)


# ------------------------------------------------------------------------------ completion


def test_render_for_completion(tok):
    conv = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "content": [{"type": "text", "text": "6"}]},
        ]
    }
    before = copy.deepcopy(conv)
    ids = tok.render_for_completion(conv)
    assert conv == before
    expected, _ = concat(
        bos(tok),
        user_block(tok, "Be brief.\n\nWhat is 2+2?"),
        assistant_block(tok, "4"),
        user_block(tok, "And 3+3?"),
    )
    assert ids == expected + [sp(tok, "<|assistant_start|>")]


def test_render_for_completion_truncates_before_appending(tok):
    conv = [{"role": "user", "content": "word " * 3000}, {"role": "assistant", "content": "ok"}]
    ids = tok.render_for_completion(conv)
    assert len(ids) == 2049 and ids[-1] == sp(tok, "<|assistant_start|>")
    assert len(tok.render_for_completion(conv, max_tokens=None)) > 2049


# ------------------------------------------------------------------------------ visualization


def test_visualize_tokenization(tok):
    ids = [sp(tok, "<|bos|>")] + tok.encode("Hi")
    mask = [0] + [1] * (len(ids) - 1)
    out = tok.visualize_tokenization(ids, mask)
    pieces = ["\033[91m<|bos|>\033[0m"] + [f"\033[92m{tok.decode([i])}\033[0m" for i in ids[1:]]
    assert out == "|".join(pieces)
    with_ids = tok.visualize_tokenization(ids, mask, with_token_id=True)
    expected = []
    for piece, i in zip(pieces, ids):
        expected += [piece, f"\033[90m({i})\033[0m"]
    assert with_ids == "|".join(expected)
    assert "".join(re.findall(r"\033\[9[12]m(.*?)\033\[0m", out)) == tok.decode(ids)


def test_visualize_an_unknown_id_is_a_value_error_naming_it(tok):
    with pytest.raises(ValueError, match=f"^Unknown token id {tok.n_vocab}: the vocabulary has {tok.n_vocab} ids"):
        tok.visualize_tokenization([104, tok.n_vocab], [1, 1])


def test_visualize_length_mismatch(tok):
    with pytest.raises(ValueError, match="2 ids, 1 mask"):
        tok.visualize_tokenization([1, 2], [0])


# ------------------------------------------------------------------------------ errors


def U(content="hi"):
    return {"role": "user", "content": content}


def A(content="yo"):
    return {"role": "assistant", "content": content}


def S(content="sys"):
    return {"role": "system", "content": content}


ERROR_CASES = [
    ({"messages": []}, r"no messages"),
    ({"msgs": [U()]}, r"no 'messages'"),
    ({"messages": "hello"}, r"must be a list"),
    (42, r"must be a list"),
    ([U(), "yo"], r"message 1 must be a dict with 'role' and 'content'"),
    ([{"role": "user"}], r"message 0 must be a dict with 'role' and 'content'"),
    ([{"content": "x"}], r"message 0 must be a dict"),
    ([A()], r"message 0 is from 'assistant' but should be from 'user'"),
    ([U(), U()], r"message 1 is from 'user' but should be from 'assistant'"),
    ([U(), A(), A()], r"message 2 is from 'assistant' but should be from 'user'"),
    ([U(), {"role": "tool", "content": "x"}], r"message 1 is from 'tool' but should be from 'assistant'"),
    ([U(), A(), S()], r"message 2 is a system message: only the first"),
    ([S()], r"message 0 is a system message, so message 1 must be from 'user', got nothing"),
    ([S(), A()], r"message 1 must be from 'user', got a message from 'assistant'"),
    ([S(), S(), U()], r"message 1 must be from 'user', got a message from 'system'"),
    ([S(["x"]), U()], r"message 0 \(system\): content must be a str"),
    ([S(), U(["x"])], r"message 1 \(user\): content must be a str"),
    ([U(["x"])], r"message 0 \(user\): content must be a str, got list"),
    ([U(), A(42)], r"message 1 \(assistant\): content must be a str or a list of parts, got int"),
    ([U(), A(["text"])], r"message 1 \(assistant\), part 0: a part must be a dict"),
    ([U(), A([{"text": "x"}])], r"message 1 \(assistant\), part 0: a part must be a dict with 'type'"),
    ([U(), A([{"type": "text", "text": "a"}, {"type": "image", "text": "x"}])],
     r"message 1 \(assistant\), part 1: unknown part type 'image'"),
    ([U(), A([{"type": "python"}])], r"part 0 \(python\): 'text' must be a str, got NoneType"),
    ([U(), A([{"type": "python_output", "text": 4}])], r"part 0 \(python_output\): 'text' must be a str, got int"),
    ([S(), U(), A(), U(), A(7)], r"message 4 \(assistant\)"),  # indices as given, system included
]


@pytest.mark.parametrize("conversation, message", ERROR_CASES)
def test_render_errors(tok, conversation, message):
    with pytest.raises(ValueError, match=message):
        tok.render_conversation(conversation)


@pytest.mark.parametrize("max_tokens, error", [(-1, ValueError), (1.5, TypeError), ("10", TypeError), (True, TypeError)])
def test_bad_max_tokens(tok, max_tokens, error):
    with pytest.raises(error, match="max_tokens"):
        tok.render_conversation([U()], max_tokens=max_tokens)


def test_max_tokens_of_any_integer_type(tok):
    class Index:
        def __index__(self):
            return 3

    assert tok.render_conversation([U(), A()], max_tokens=Index()) == tok.render_conversation([U(), A()], max_tokens=3)
    assert len(tok.render_for_completion([U(), A()], max_tokens=Index())) == 4


def test_markers_must_be_special_tokens():
    """A tokenizer without the chat's special tokens but with ordinary tokens of the same text
    (learned from text that holds them) must not render with those: they are what a user who
    types the text gets."""
    markers = ["<|user_start|>", "<|user_end|>", "<|assistant_start|>", "<|assistant_end|>"]
    plain = bpeforge.Tokenizer.train_from_iterator(
        [" ".join(markers) + " hi"] * 50, vocab_size=285, special_tokens=["<|bos|>"], pattern=r"\S+|\s+"
    )
    assert plain.encode("<|user_start|>") == [plain.encode_special("<|user_start|>")]  # one ordinary token
    for render in (plain.render_conversation, plain.render_for_completion):
        with pytest.raises(KeyError, match="no special token '<\\|user_start\\|>'"):
            render([U(), A()])


@pytest.mark.parametrize(
    "conversation, message",
    [
        ({"messages": []}, r"no messages"),
        ([U(), A(), U()], r"message 2 is from 'user': the last message must be from the assistant"),
        ([S(), U()], r"message 1 is from 'user': the last message"),
        ([A()], r"no messages before the assistant message"),
        ([U(), U(), A()], r"message 1 is from 'user' but should be from 'assistant'"),
        ([U(), A([{"type": "code", "text": "x"}])] + [U(), A()], None),  # only the last is dropped
    ],
)
def test_render_for_completion_errors(tok, conversation, message):
    if message is None:
        with pytest.raises(ValueError, match=r"message 1 \(assistant\), part 0: unknown part type 'code'"):
            tok.render_for_completion(conversation)
        return
    with pytest.raises(ValueError, match=message):
        tok.render_for_completion(conversation)


def test_missing_special_tokens_are_named():
    small = bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=280, special_tokens=["<|bos|>"])
    with pytest.raises(KeyError, match="<\\|user_start\\|>"):
        small.render_conversation([U()])
    bare = bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=280, special_tokens=[])
    with pytest.raises(KeyError, match="neither"):
        bare.render_conversation([U()])


def test_endoftext_serves_as_bos():
    names = ["<|endoftext|>"] + list(bpeforge._base.NANOCHAT_SPECIAL_TOKENS[1:])
    tok = bpeforge.Tokenizer.train_from_iterator(CORPUS, vocab_size=300, special_tokens=names)
    ids, _ = tok.render_conversation([U()])
    assert ids[0] == tok.encode_special("<|endoftext|>") == tok.bos_token_id


def test_render_for_completion_needs_a_user_message():
    tok = bpeforge.Tokenizer.train_from_iterator(["hello world"] * 3, 300)
    conversation = [{"role": "system", "content": "be brief"}, {"role": "assistant", "content": "hi"}]
    with pytest.raises(ValueError, match="only a system message before the assistant message"):
        tok.render_for_completion(conversation)


def test_the_token_bytes_file_helpers_are_there_too():
    """nanochat users find the token-bytes file helpers in bpeforge._chat: they are io's."""
    from bpeforge import _io as io

    for name in ("TOKEN_BYTES_FILE", "read_token_bytes", "write_token_bytes", "token_bytes_npy"):
        assert getattr(chat, name) is getattr(io, name)
