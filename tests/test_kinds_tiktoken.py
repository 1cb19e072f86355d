"""tiktoken kind: ids and text equal tiktoken's; the two decode contracts over byte-level tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import TokenIdError, TokenizerAssetError, TokenizerSpec, build_tokenizer

TEXTS = ["hello world", "Hello 你好 😀 world", "<|endoftext|> as text", " \n\t  spaces ", ""]


@pytest.fixture(scope="module")
def o200k(shared_path):
    shared_path("tokenizers/tiktoken/o200k_base.tiktoken")
    return build_tokenizer(TokenizerSpec("tiktoken", options={"encoding": "o200k_base"}))


def test_by_name_equals_tiktoken(o200k, tiktoken_oracle):
    oracle = tiktoken_oracle("o200k_base")
    assert o200k.supports_encode and o200k.special_ids == frozenset()
    assert o200k.vocab_size == oracle.n_vocab
    for text in TEXTS[:2] + TEXTS[3:]:
        ids = o200k.encode(text)
        assert ids == oracle.encode(text)
        assert o200k.decode(ids) == oracle.decode(ids)
    with pytest.raises(ValueError):  # tiktoken's default: a special token spelled in text raises
        o200k.encode(TEXTS[2])


def test_ranks_file_and_options(shared_path, tiktoken_oracle):
    path = shared_path("tokenizers/tiktoken/cl100k_base.tiktoken")
    tok = build_tokenizer(TokenizerSpec("tiktoken", {"ranks": path},
                                        {"skip_special_tokens": True, "allowed_special": "all"}))
    oracle = tiktoken_oracle("cl100k_base")
    ids = tok.encode(TEXTS[2])
    assert ids == oracle.encode(TEXTS[2], allowed_special="all")
    eot = oracle.eot_token
    assert eot in tok.special_ids and eot in ids
    assert tok.decode(ids) == oracle.decode([i for i in ids if i != eot])
    assert tok.token_pieces(ids)[0] == ""


def test_bad_input(o200k, tmp_path):
    with pytest.raises(TokenIdError):
        o200k.decode([o200k.vocab_size])
    with pytest.raises(TokenIdError):
        o200k.decode([-1])
    with pytest.raises(TokenIdError):  # unassigned, between the special tokens
        o200k.decode([200001])
    with pytest.raises(TokenIdError):
        o200k.decode_incremental([10**12], {})
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_text("not base64 at all\n")
    with pytest.raises(TokenizerAssetError, match="ranks"):
        build_tokenizer(TokenizerSpec("tiktoken", {"ranks": bad}))
    with pytest.raises(TokenizerAssetError, match="ranks"):
        build_tokenizer(TokenizerSpec("tiktoken"))
    with pytest.raises(TokenizerAssetError, match="unknown options"):
        build_tokenizer(TokenizerSpec("tiktoken", options={"encoding": "o200k_base", "x": 1}))


# Ids 0..255 are single bytes in o200k: sequences of them end inside characters often.
ids_st = st.lists(st.one_of(st.integers(0, 255), st.integers(0, 199997)), max_size=24)


@SETTINGS
@given(ids=ids_st, cuts=cut_lists)
def test_incremental_contract(o200k, ids, cuts):
    check_incremental(o200k, ids, cuts)


@SETTINGS
@given(ids=ids_st)
def test_pieces_contract(o200k, ids):
    check_pieces(o200k, ids)
