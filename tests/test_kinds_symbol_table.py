"""symbol_table kind: icefall's join rule, special ids by name, the two decode contracts, bad files."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import (
    EncodeNotSupportedError,
    TokenIdError,
    TokenizerAssetError,
    TokenizerSpec,
    build_tokenizer,
)

# The facts file's table (§1.3).
TABLE = ["<blank> 0", "<unk> 1", "<sos/eos> 2", "\u2581HE 3", "LLO 4", "\u2581WORLD 5", "你 6", "好 7",
         "\u2581 8", "' 9", "S 10", "\u2581IT 11"]


def write(tmp_path, lines, name="units.txt"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


@pytest.fixture
def tok(tmp_path):
    return build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, TABLE)}))


def icefall(table: dict[int, str], special, ids) -> str:
    """The reference rule: icefall's join with the special ids dropped first."""
    return "".join(table[i] for i in ids if i not in special).replace("\u2581", " ").strip()


@pytest.mark.parametrize("ids, text", [
    ([3, 4, 5], "HELLO WORLD"),
    ([0, 3, 4, 1, 5, 2], "HELLO WORLD"),
    ([6, 7], "你好"),
    ([6, 7, 3, 4], "你好 HELLO"),
    ([11, 9, 10, 5], "IT'S WORLD"),
    ([3, 4, 8, 8, 5], "HELLO   WORLD"),
    ([1, 3, 4], "HELLO"),
    ([8], ""),
    ([], ""),
])
def test_decode_vectors(tok, ids, text):
    assert tok.decode(ids) == text


def test_kind_properties(tok):
    assert tok.supports_encode is False
    assert tok.special_ids == frozenset({0, 1, 2})
    assert tok.vocab_size == 12
    with pytest.raises(EncodeNotSupportedError):
        tok.encode("HELLO")
    assert tok.decode_batch([[3, 4], [6]]) == ["HELLO", "你"]


def test_specials_by_name_wenet2_layout(tmp_path):
    # WeNet <= 2.x: id 2 is a real unit and <sos/eos> is last.
    lines = ["<blank> 0", "<unk> 1", "一 2", "丁 3", "<sos/eos> 4"]
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, lines)}))
    assert tok.special_ids == frozenset({0, 1, 4})
    assert tok.decode([2, 3, 4]) == "一丁"


def test_specials_icefall_names(tmp_path):
    lines = ["<blk> 0", "<sos/eos> 1", "<unk> 2", "\u2581A 3"]
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"tokens": write(tmp_path, lines, "tokens.txt")}))
    assert tok.special_ids == frozenset({0, 1, 2})


def test_specials_default_without_names(tmp_path):
    lines = ["a 0", "b 1", "c 2", "d 3"]
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, lines)}))
    assert tok.special_ids == frozenset({0, 1, 2})
    assert tok.decode([0, 1, 2, 3]) == "d"


def test_specials_option_overrides(tmp_path):
    spec = TokenizerSpec("symbol_table", {"units": write(tmp_path, TABLE)}, {"special_ids": [0]})
    tok = build_tokenizer(spec)
    assert tok.special_ids == frozenset({0})
    assert tok.decode([1, 3, 4]) == "<unk> HELLO"
    with pytest.raises(TokenIdError):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, TABLE)}, {"special_ids": [99]}))


def test_token_pieces_strip_attributed_to_nothing(tok):
    assert tok.token_pieces([8, 3, 4, 8, 5, 8]) == ["", "HE", "LLO", " ", " WORLD", ""]
    assert tok.token_pieces([0, 8, 3, 2]) == ["", "", "HE", ""]
    assert tok.token_pieces([8, 8]) == ["", ""]
    assert tok.token_pieces([]) == []


@pytest.mark.parametrize("bad", [[-1], [12], [3, 100], [1.5], ["3"], [True]])
def test_bad_ids(tok, bad):
    with pytest.raises(TokenIdError):
        tok.decode(bad)
    with pytest.raises(TokenIdError):
        tok.token_pieces(bad)
    with pytest.raises(TokenIdError):
        tok.decode_incremental(bad, {})


def test_id_missing_from_sparse_table(tmp_path):
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, ["a 0", "b 5"])}))
    assert tok.vocab_size == 6
    with pytest.raises(TokenIdError, match="not in the symbol table"):
        tok.decode([3])


@pytest.mark.parametrize("lines, match", [
    (["a 0", "b 1 extra"], "line 2: expected '<piece> <id>', got 3 fields"),
    (["a 0", "b"], "line 2: expected '<piece> <id>', got 1 fields"),
    (["a 0", "b 0"], "line 2: duplicate id 0"),
    (["a 0", "a 1"], "line 2: duplicate piece 'a'"),
    (["a x"], "line 1: id 'x' is not a non-negative integer"),
    (["a -1"], "line 1: id '-1'"),
    ([], "holds no symbols"),
])
def test_garbled_units(tmp_path, lines, match):
    with pytest.raises(TokenizerAssetError, match=match):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": write(tmp_path, lines)}))


def test_not_utf8(tmp_path):
    p = tmp_path / "units.txt"
    p.write_bytes(b"\xff\xfe 0\n")
    with pytest.raises(TokenizerAssetError, match="not UTF-8"):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": p}))


def test_both_or_no_assets(tmp_path):
    p = write(tmp_path, TABLE)
    with pytest.raises(TokenizerAssetError, match="exactly one"):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": p, "tokens": p}))
    with pytest.raises(TokenizerAssetError, match="unknown options"):
        build_tokenizer(TokenizerSpec("symbol_table", {"units": p}, {"specials": [0]}))


# A table with whitespace-ish pieces so the strip matters at both ends.
PROP_TABLE = TABLE + ["\u2581\u2581 12", "x\u2581 13", "\u2581y\u2581 14", "<s> 15"]
ids_st = st.lists(st.integers(min_value=0, max_value=15), max_size=24)


@pytest.fixture(scope="module")
def prop_tok(tmp_path_factory):
    p = write(tmp_path_factory.mktemp("units"), PROP_TABLE)
    return build_tokenizer(TokenizerSpec("symbol_table", {"units": p}))


@SETTINGS
@given(ids=ids_st)
def test_decode_equals_reference(prop_tok, ids):
    table = {int(i): p for p, i in (line.split() for line in PROP_TABLE)}
    assert prop_tok.decode(ids) == icefall(table, prop_tok.special_ids, ids)


@SETTINGS
@given(ids=ids_st, cuts=cut_lists)
def test_incremental_contract(prop_tok, ids, cuts):
    check_incremental(prop_tok, ids, cuts)


@SETTINGS
@given(ids=ids_st)
def test_pieces_contract(prop_tok, ids):
    check_pieces(prop_tok, ids)
