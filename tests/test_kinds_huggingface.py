"""huggingface kind: ids and text equal `tokenizers`'; special_ids from the added tokens; the contracts."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import TokenIdError, TokenizerAssetError, TokenizerSpec, build_tokenizer

tokenizers = pytest.importorskip("tokenizers")

TEXTS = ["hello world", "Hello 你好 😀 world", "  two  spaces\n\tand tab", "a<s>b</s>", "naïve café 🫠", ""]
MODELS = ["llama3", "qwen2.5", "mistral-7b"]


@pytest.fixture(scope="module")
def pair(shared_path):
    cache = {}

    def get(name):
        if name not in cache:
            path = shared_path(f"tokenizers/{name}/tokenizer.json")
            files = {"tokenizer": path}
            config = path.parent / "tokenizer_config.json"
            if config.exists():
                files["config"] = config
            cache[name] = (build_tokenizer(TokenizerSpec("huggingface", files)),
                           tokenizers.Tokenizer.from_file(str(path)))
        return cache[name]

    return get


@pytest.mark.parametrize("name", MODELS)
def test_equals_tokenizers(pair, name):
    tok, oracle = pair(name)
    assert tok.supports_encode
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids == oracle.encode(text, add_special_tokens=False).ids, text
        assert tok.decode(ids) == oracle.decode(ids, skip_special_tokens=True), text
    # The config can only add specials to those tokenizer.json marks.
    oracle_special = {i for i, t in oracle.get_added_tokens_decoder().items() if t.special}
    assert oracle_special <= tok.special_ids
    if name == "mistral-7b":  # no config
        assert oracle_special == tok.special_ids


def test_special_ids_mistral(pair):
    tok, _ = pair("mistral-7b")
    assert tok.special_ids == frozenset({0, 1, 2})
    assert tok.decode([1, 22557, 2]) == "Hello"


def test_config_added_specials(shared_path, tmp_path):
    # A config declaring a special the tokenizer.json lacks: it is added and reported special.
    path = shared_path("tokenizers/llama3/tokenizer.json")
    data = json.loads(path.read_text())
    new_id = max(t["id"] for t in data["added_tokens"]) + 1
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"added_tokens_decoder": {str(new_id): {
        "content": "<|audio_bos|>", "special": True, "lstrip": False, "rstrip": False,
        "normalized": False, "single_word": False}}}))
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path, "config": config}))
    assert new_id in tok.special_ids
    assert tok.encode("x<|audio_bos|>y")[1] == new_id
    assert tok.decode(tok.encode("x<|audio_bos|>y")) == "xy"


def test_bad_input(pair, tmp_path):
    tok, _ = pair("mistral-7b")
    with pytest.raises(TokenIdError):
        tok.decode([32000])
    with pytest.raises(TokenIdError):
        tok.decode_incremental([-5], {})
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": ')
    with pytest.raises(TokenizerAssetError, match="tokenizer"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": bad}))


def test_byte_fallback_stream_vectors(pair):
    tok, _ = pair("mistral-7b")
    # DecodeStream's failure case: <0xC3><0xA9><0xF0> renders as three U+FFFD, revising the "é".
    state, deltas = {}, []
    for i in [198, 172, 243, 1526]:
        deltas.append(tok.decode_incremental([i], state))
        assert state["text"] == "".join(deltas)
        assert tok.decode([198, 172, 243, 1526][:len(deltas)]).startswith(state["text"])
    assert deltas[:2] == ["", ""]  # the "é" of <0xC3><0xA9> is held while its byte run is open
    assert "".join(deltas) == tok.decode([198, 172, 243, 1526])


# mistral-7b: ids 3..258 are <0xNN> byte-fallback tokens.
mistral_ids = st.lists(st.one_of(st.integers(0, 258), st.integers(0, 31999)), max_size=16)
llama3_ids = st.lists(st.one_of(st.integers(0, 255), st.integers(0, 128255)), max_size=16)


@SETTINGS
@given(ids=mistral_ids, cuts=cut_lists)
def test_incremental_contract_mistral(pair, ids, cuts):
    check_incremental(pair("mistral-7b")[0], ids, cuts)


@SETTINGS
@given(ids=mistral_ids)
def test_pieces_contract_mistral(pair, ids):
    check_pieces(pair("mistral-7b")[0], ids)


@SETTINGS
@given(ids=llama3_ids, cuts=cut_lists)
def test_incremental_contract_llama3(pair, ids, cuts):
    check_incremental(pair("llama3")[0], ids, cuts)


@SETTINGS
@given(ids=llama3_ids)
def test_pieces_contract_llama3(pair, ids):
    check_pieces(pair("llama3")[0], ids)


@pytest.mark.parametrize("name", ["llama3", "mistral-7b"])
def test_incremental_state_stays_bounded(pair, name):
    # llama3 appends token bytes (at most 3 pending); mistral-7b's decoder chain re-renders a window
    # of fewer than WINDOW_LEN settled ids plus the unsettled ones (a byte-fallback run)
    from tltok_jit.hf.decoder_chain import WINDOW_LEN

    tok, oracle = pair(name)
    ids = tok.encode("The quick brown fox jumps over the lazy dog, 你好 😀 🦡. " * 40)
    state, deltas, longest = {}, [], 0
    for i in ids:
        deltas.append(tok.decode_incremental([i], state))
        held = len(state["_chain"]._win) if "_chain" in state else len(state["_pending"])
        longest = max(longest, held)
        assert state["text"] == "".join(deltas)
        assert oracle.decode(ids[:len(deltas)], skip_special_tokens=True).startswith(state["text"])
    assert "".join(deltas) == tok.decode(ids)
    assert longest <= (WINDOW_LEN + 4 if name == "mistral-7b" else 3)


def test_a_wordpiece_file_builds_the_wordpiece_tokenizer(shared_path):
    tokenizers = pytest.importorskip("tokenizers")
    path = shared_path("tokenizers/minilm/tokenizer.json")
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}))
    hf = tokenizers.Tokenizer.from_file(str(path))
    hf.no_padding()  # the file pads and cuts to 128; encode returns every id
    hf.no_truncation()
    text = "Héllo, WORLD! 日本語 tokenization"
    assert tok.encode(text) == hf.encode(text, add_special_tokens=False).ids
    assert tok.decode(tok.encode(text)) == hf.decode(hf.encode(text, add_special_tokens=False).ids)
    with pytest.raises(TokenizerAssetError, match="add_special_tokens"):
        build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}, {"add_special_tokens": True}))
