"""funasr_char kind: decode is FunASR's sentence_postprocess (the funasr package as oracle when it
imports, and the facts' vectors always); encode's greedy rule; the two decode contracts."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import TokenIdError, TokenizerAssetError, TokenizerSpec, build_tokenizer
from tltok_jit.kinds.funasr_postprocess import sentence_postprocess

# Paraformer's layout: <blank> <s> </s> first, <unk> last; tokens chosen to reach every branch.
TOKENS = ["<blank>", "<s>", "</s>", "你", "好", "世", "界", "hel@@", "lo", "world", "a", "b", "c", "i", "m",
          "is", "big", "1", "2", "，", "。", "don't", "'", "x@@", "he@@", "l@@", "wor@@", "ld", "ok", "d",
          "HEL@@", "LO", "你好", "吗", "\u2581hello", "é", "ab", "A", "<OOV>", "第", "名", "123", "abc", "<unk>"]


def funasr_oracle():
    mod = pytest.importorskip("funasr.utils.postprocess_utils",
                              reason="funasr not installed (pip install funasr --no-deps)")
    return mod.sentence_postprocess


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    p = tmp_path_factory.mktemp("funasr") / "tokens.json"
    p.write_text(json.dumps(TOKENS, ensure_ascii=False), encoding="utf-8")
    return build_tokenizer(TokenizerSpec("funasr_char", {"tokens": p}))


VECTORS = [
    (["你", "好", "世", "界"], "你好世界"),
    (["hel@@", "lo", "world"], "hello world"),
    (["he@@", "l@@", "lo", "wor@@", "ld"], "hello world"),
    (["你", "好", "hel@@", "lo", "world", "再", "见"], "你好hello world再见"),
    (["a", "b", "c"], "ABC"),
    (["a", "b"], "AB"),
    (["a"], "a"),
    (["i", "b", "m", "is", "big"], "IBM is big"),
    (["我", "用", "a", "b", "c", "的"], "我用ABC的"),
    (["ok", "a", "b", "c", "d", "ok"], "ok ABCD ok"),
    (["<s>", "你", "好", "</s>"], "你好"),
    (["你", "<unk>", "好"], "你好"),
    (["你", "<blank>", "好"], "你<blank>好"),
    (["1", "2", "3"], "123"),
    (["abc", "123"], "abc123"),
    (["第", "1", "名"], "第1名"),
    (["don't", "go"], "don't go"),
    (["你", "好", "，", "世", "界", "。"], "你好，世界。"),
    (["hello", "，", "world"], "hello ，world"),
    (["hel@@", "你"], "你"),
    (["HEL@@", "LO"], "HELLO"),
    (["你好", "吗"], "你好吗"),
    (["\u2581hello", "\u2581world"], "\u2581hello\u2581world"),
    ([], ""),
    (["<s>", "</s>"], ""),
]


@pytest.mark.parametrize("words, sentence", VECTORS)
def test_postprocess_vectors(words, sentence):
    assert sentence_postprocess(words) == sentence


@pytest.mark.parametrize("words, sentence", VECTORS)
def test_postprocess_vectors_oracle(words, sentence):
    assert funasr_oracle()(words)[0] == sentence


@SETTINGS
@given(words=st.lists(st.sampled_from(TOKENS + ["go", "再", "见", " ", "", "@", "x y", "Ab"]), max_size=12))
def test_postprocess_equals_funasr(words):
    assert sentence_postprocess(words) == funasr_oracle()(list(words))[0]


def test_kind_properties(tok):
    assert tok.supports_encode
    assert tok.vocab_size == len(TOKENS)
    ix = TOKENS.index
    assert tok.special_ids == frozenset({0, 1, 2, ix("<OOV>"), ix("<unk>")})
    assert tok.decode([1, 3, 4, 0, 2]) == "你好"
    assert tok.decode([ix("a"), ix("b"), ix("c")]) == "ABC"


def test_special_ids_option(tmp_path):
    p = tmp_path / "tokens.json"
    p.write_text(json.dumps(TOKENS, ensure_ascii=False), encoding="utf-8")
    tok = build_tokenizer(TokenizerSpec("funasr_char", {"tokens": p}, {"special_ids": [2]}))
    assert tok.special_ids == frozenset({1, 2, TOKENS.index("<OOV>"), TOKENS.index("<unk>")})
    assert tok.decode([3, 0, 4]) == "你<blank>好"
    with pytest.raises(TokenIdError):
        build_tokenizer(TokenizerSpec("funasr_char", {"tokens": p}, {"special_ids": [len(TOKENS)]}))


def test_encode_rule(tok):
    ix = TOKENS.index
    assert tok.encode("你好hello world") == [ix("你"), ix("好"), ix("hel@@"), ix("lo"), ix("world")]
    assert tok.decode(tok.encode("你好hello world")) == "你好hello world"
    assert tok.encode("abc 123") == [ix("abc"), ix("123")]
    assert tok.encode("abc123") == [ix("<unk>")] * 3 + [ix("123")]  # "abc" ends no run: it would need "abc@@"
    assert tok.encode("再") == [ix("<unk>")]  # not in the vocabulary
    assert tok.encode("hellq") == [ix("hel@@"), ix("l@@"), ix("<unk>")]
    assert tok.encode("  ") == []


def test_bad_ids(tok):
    for bad in ([-1], [len(TOKENS)], [0.5]):
        with pytest.raises(TokenIdError):
            tok.decode(bad)


@pytest.mark.parametrize("content, match", [
    ('{"a": 1}', "expected a JSON array"),
    ('["a", 1]', "entry 1 is int"),
    ('["a", "b", "a"]', "entry 2 duplicates token 'a'"),
    ("[", "not readable JSON"),
    ("[]", "holds no tokens"),
])
def test_garbled_tokens_json(tmp_path, content, match):
    p = tmp_path / "tokens.json"
    p.write_text(content)
    with pytest.raises(TokenizerAssetError, match=match):
        build_tokenizer(TokenizerSpec("funasr_char", {"tokens": p}))


ids_st = st.lists(st.integers(0, len(TOKENS) - 1), max_size=14)


@SETTINGS
@given(ids=ids_st)
def test_decode_equals_funasr(tok, ids):
    assert tok.decode(ids) == funasr_oracle()([TOKENS[i] for i in ids if i not in tok.special_ids])[0]


@SETTINGS
@given(ids=ids_st, cuts=cut_lists)
def test_incremental_contract(tok, ids, cuts):
    check_incremental(tok, ids, cuts)


@SETTINGS
@given(ids=ids_st)
def test_pieces_contract(tok, ids):
    check_pieces(tok, ids)


# Tokens that the mode test reads differently (a space, a washed name inside): nothing settles early.
ODD_TOKENS = TOKENS + [" ", "x y", "a<s>", "1@@", "你a", "", "@"]


@pytest.fixture(scope="module")
def odd_tok(tmp_path_factory):
    p = tmp_path_factory.mktemp("funasr_odd") / "tokens.json"
    p.write_text(json.dumps(ODD_TOKENS, ensure_ascii=False), encoding="utf-8")
    return build_tokenizer(TokenizerSpec("funasr_char", {"tokens": p}))


def test_mode_sensitive_vocabulary_revision(odd_tok):
    # ["x y", "lo"] is all-alphabetic ("x y lo"); a following "1" makes it mixed ("x ylo1").
    ix = ODD_TOKENS.index
    assert odd_tok.decode([ix("x y"), ix("lo")]) == "x y lo"
    assert odd_tok.decode([ix("x y"), ix("lo"), ix("1")]) == "x ylo1"
    check_incremental(odd_tok, [ix("x y"), ix("lo"), ix("1")], [2])


@SETTINGS
@given(ids=st.lists(st.integers(0, len(ODD_TOKENS) - 1), max_size=14), cuts=cut_lists)
def test_incremental_contract_odd_tokens(odd_tok, ids, cuts):
    check_incremental(odd_tok, ids, cuts)
    assert odd_tok.decode(ids) == funasr_oracle()([ODD_TOKENS[i] for i in ids if i not in odd_tok.special_ids])[0]


@pytest.mark.parametrize("words, cuts", [
    (["hel@@", "<blank>", "<blank>", "<blank>", "<blank>", "lo"], [5]),    # specials alone settle nothing
    (["hel@@", "<blank>", "<blank>", "<blank>", "你", "lo", "<blank>"], [5]),  # "hel" waits across "你": 你hello
])
def test_incremental_pending_piece_survives_the_window(tok, words, cuts):
    ids = [TOKENS.index(w) for w in words]
    check_incremental(tok, ids, cuts)


def test_incremental_holds_back_little(tok):
    words = ["你", "好", "hel@@", "lo", "world", "，", "a", "b", "c", "的", "ok", "。"] * 60
    ids = [TOKENS.index(w) if w in TOKENS else TOKENS.index("<unk>") for w in words]
    state, deltas, longest = {}, [], 0
    for n, i in enumerate(ids):
        deltas.append(tok.decode_incremental([i], state))
        longest = max(longest, len(tok.decode(ids[:n + 1])) - len(state["text"]))
    deltas.append(tok.decode_incremental([], state, final=True))
    assert "".join(deltas) == tok.decode(ids) == state["text"]
    assert longest <= 3  # at most a letter, the space after it, and the comma an English word leaves open
