"""whisper kind: ids equal openai-whisper's (its tokenizer.py as oracle, when installed) and the facts' vectors."""

from __future__ import annotations

import importlib.util
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import TokenIdError, TokenizerAssetError, TokenizerSpec, build_tokenizer

MULTI = "tokenizers/tiktoken/whisper_multilingual.tiktoken"
GPT2 = "tokenizers/tiktoken/r50k_base.tiktoken"
TEXT_IDS = [2425, 1002, 0, 10930, 2131, 171, 120, 234, 24486, 1543]  # " Hello world! 你好，世界。"


def openai_tokenizer_module():
    """whisper/tokenizer.py loaded by path (importing the `whisper` package needs torch), or skip."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or spec.origin is None:
        pytest.skip("openai-whisper not installed (pip install openai-whisper --no-deps)")
    path = os.path.join(os.path.dirname(spec.origin), "tokenizer.py")
    mod_spec = importlib.util.spec_from_file_location("_openai_whisper_tokenizer", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def build(shared_path):
    cache = {}

    def get(rel=MULTI, num_languages=99):
        key = (rel, num_languages)
        if key not in cache:
            cache[key] = build_tokenizer(TokenizerSpec("whisper", {"ranks": shared_path(rel)},
                                                       {"num_languages": num_languages}))
        return cache[key]

    return get


@pytest.mark.parametrize("n, last_lang, translate, ts_begin, ts_end", [
    (99, ("su", 50357), 50358, 50364, 51864),
    (100, ("yue", 50358), 50359, 50365, 51865),
])
def test_special_ids_vectors(build, n, last_lang, translate, ts_begin, ts_end):
    tok = build(num_languages=n)
    assert tok.eot == 50257 and tok.sot == 50258
    assert tok.special_tokens["<|en|>"] == 50259 and tok.special_tokens["<|zh|>"] == 50260
    assert tok.special_tokens[f"<|{last_lang[0]}|>"] == last_lang[1]
    assert tok.special_tokens["<|translate|>"] == translate
    assert tok.timestamp_begin == ts_begin and tok.special_tokens["<|30.00|>"] == ts_end
    assert tok.vocab_size == ts_end + 1
    assert tok.special_ids == frozenset(range(50257, ts_end + 1))
    assert tok.supports_encode


def test_sot_sequence_and_decode_vectors(build):
    tok = build()
    assert tok.sot_sequence("en", "transcribe") == (50258, 50259, 50359)
    assert tok.sot_sequence("zh", "translate") == (50258, 50260, 50358)
    assert tok.sot_sequence("fr", "transcribe") == (50258, 50265, 50359)
    assert tok.encode(" Hello world! 你好，世界。") == TEXT_IDS
    seq = [50258, 50259, 50359, 50364, *TEXT_IDS, 50414, 50257]
    assert tok.decode(seq) == " Hello world! 你好，世界。"
    assert tok.decode_with_timestamps(seq) == \
        "<|startoftranscript|><|en|><|transcribe|><|0.00|> Hello world! 你好，世界。<|1.00|><|endoftext|>"
    ids = tok.encode("다람쥐 헌 쳇바퀴에 타고파")
    assert ids == [9835, 22855, 168, 98, 238, 13431, 234, 43517, 229, 47053, 169, 222, 19086, 19840, 1313, 17974]
    assert tok.token_pieces([8404, 871, 287, 6, 246, 526, 3210, 20378]) == \
        [" elle", " est", " l", "'", "\ufffd", "é", "rit", "oire"]  # openai split_tokens_on_unicode
    assert tok.decode([8404, 871, 287, 6, 246, 526, 3210, 20378]) == " elle est l'\ufffdéritoire"
    with pytest.raises(ValueError):
        tok.encode(" <|endoftext|>")  # tiktoken's default: a special token spelled in text raises
    with pytest.raises(ValueError):
        tok.sot_sequence("xx")


@pytest.mark.parametrize("rel, multilingual, n", [(MULTI, True, 99), (MULTI, True, 100), (GPT2, False, 99)])
def test_equals_openai_whisper(build, rel, multilingual, n):
    ow = openai_tokenizer_module()
    oracle = ow.get_tokenizer(multilingual, num_languages=n, language="en" if multilingual else None,
                              task="transcribe" if multilingual else None)
    tok = build(rel, n)
    assert tok.vocab_size == oracle.encoding.n_vocab
    for name, i in tok.special_tokens.items():
        assert oracle.encoding.encode_single_token(name) == i, name
    assert oracle.sot_sequence == (tok.sot_sequence("en", "transcribe") if multilingual else (tok.sot,))
    texts = [" Hello world! 你好，世界。", "It's 3:45pm — naïve café 🫠", "  spaces\n\ttabs ", ""]
    for text in texts:
        ids = tok.encode(text)
        assert ids == oracle.encode(text), text
        seq = [tok.sot, *ids, 50256, tok.timestamp_begin + 50, tok.eot]  # 50256: the empty rank (multilingual)
        assert tok.decode(seq) == oracle.decode([t for t in seq if t < oracle.eot])
        assert tok.decode_with_timestamps(seq) == oracle.decode_with_timestamps(seq)


def test_bad_input(build, tmp_path):
    tok = build()
    with pytest.raises(TokenIdError):
        tok.decode([tok.vocab_size])
    with pytest.raises(TokenIdError):
        tok.decode_with_timestamps([-1])
    bad = tmp_path / "multilingual.tiktoken"
    bad.write_text("IQ== 0\nIQ== 1\n")
    with pytest.raises(TokenizerAssetError, match="ranks"):
        build_tokenizer(TokenizerSpec("whisper", {"ranks": bad}))
    with pytest.raises(TokenizerAssetError, match="num_languages"):
        build_tokenizer(TokenizerSpec("whisper", {"ranks": bad}, {"num_languages": 101}))


ids_st = st.lists(st.one_of(st.integers(0, 255), st.integers(0, 51864), st.integers(50257, 51864)), max_size=24)


@SETTINGS
@given(ids=ids_st, cuts=cut_lists)
def test_incremental_contract(build, ids, cuts):
    check_incremental(build(), ids, cuts)


@SETTINGS
@given(ids=ids_st)
def test_pieces_contract(build, ids):
    check_pieces(build(), ids)
