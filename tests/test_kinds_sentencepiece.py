"""sentencepiece kind: ids, normalization and text equal the sentencepiece package's, on the shared
models and on small models trained here; the two decode contracts; garbled files."""

from __future__ import annotations

import functools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinds_contract import SETTINGS, check_incremental, check_pieces, cut_lists
from tltok_jit import TokenIdError, TokenizerAssetError, TokenizerSpec, build_tokenizer

spm = pytest.importorskip("sentencepiece")

SHARED_MODELS = ["llama2", "botchan_en_bpe_1000", "botchan_en_unigram_1000"]
TEXTS = ["Hello  world", "Hello world", " Hello world ", "Hello\tworld\n", "😀", "你好", "This is a test", " ", "",
         "a<s>b", "ｈｅｌｌｏ　ｗｏｒｌｄ", "①", "ﬁ", "㍿", "a\u200bb", "naïve café", "2024-06-01", "日本語",
         "I saw a girl with a telescope.", "  lead and trail  ", "tab\t\ttab", "\u2581already\u2581", "e\u0301",
         "\ufffd", "x" * 300, "🫠🇯🇵👨‍👩‍👧", "Ünïcödé ÅÄÖ ß", "\r\n\r\n", "\x00\x01\x7f"]


@functools.lru_cache(maxsize=None)
def pair_for(path: str):
    return (build_tokenizer(TokenizerSpec("sentencepiece", {"model": path})),
            spm.SentencePieceProcessor(model_file=path))


@pytest.fixture(scope="module")
def shared_pair(shared_path):
    def get(name):
        return pair_for(str(shared_path(f"tokenizers/sentencepiece/{name}.model")))
    return get


@functools.lru_cache(maxsize=None)
def trained(tmp_dir: str, key: tuple) -> str:
    """A small model trained on the fly (a few seconds at most)."""
    import os

    from conftest import SHARED

    corpus = SHARED / "corpora" / "english-war-and-peace.txt"
    if not corpus.exists():
        pytest.skip(f"shared data file missing: {corpus}")
    text = corpus.read_text(encoding="utf-8")[200_000:260_000]
    zh = (SHARED / "corpora" / "chinese-sanguo-yanyi.txt")
    if zh.exists():
        text += zh.read_text(encoding="utf-8")[:2_000]
    data = os.path.join(tmp_dir, "train.txt")
    with open(data, "w", encoding="utf-8") as f:
        f.write(text)
    opts = dict(key)
    prefix = os.path.join(tmp_dir, "m_" + "_".join(f"{k}{v}" for k, v in key).replace("/", "").replace("<", "")
                          .replace(">", "").replace(",", "").replace("'", "").replace(" ", "").replace("[", "")
                          .replace("]", ""))
    kwargs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in opts.items()}
    # character_coverage below 1 leaves rare characters out: unknown pieces get exercised
    spm.SentencePieceTrainer.train(input=data, model_prefix=prefix, minloglevel=2, num_threads=1,
                                   character_coverage=0.98, **kwargs)
    return prefix + ".model"


TRAINED = [
    (("model_type", "bpe"), ("vocab_size", 300)),
    (("model_type", "bpe"), ("vocab_size", 800), ("byte_fallback", True)),
    (("model_type", "bpe"), ("vocab_size", 400), ("add_dummy_prefix", False), ("remove_extra_whitespaces", False)),
    (("model_type", "unigram"), ("vocab_size", 300)),
    (("model_type", "unigram"), ("vocab_size", 600), ("byte_fallback", True), ("add_dummy_prefix", False)),
    # icefall's train_bpe_model.py (a unigram model despite the name)
    (("model_type", "unigram"), ("vocab_size", 500), ("user_defined_symbols", ("<blk>", "<sos/eos>")),
     ("unk_id", 2), ("bos_id", -1), ("eos_id", -1)),
    (("model_type", "bpe"), ("vocab_size", 500), ("user_defined_symbols", ("ing", "<tag>")),
     ("control_symbols", ("<ctl>",))),
]


@pytest.fixture(scope="module")
def trained_pair(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("spm"))

    def get(key):
        return pair_for(trained(tmp, key))
    return get


def sample_lines(shared_dir, per_file=3):
    lines = []
    for p in sorted((shared_dir / "corpora" / "udhr").glob("*.txt")):
        lines += [ln for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()][:per_file]
    emoji = shared_dir / "corpora" / "emoji-test.txt"
    if emoji.exists():
        lines += random.Random(0).sample(emoji.read_text(encoding="utf-8").splitlines(), 150)
    return lines


def assert_same(tok, sp, texts):
    for text in texts:
        assert tok.normalize(text) == sp.normalize(text), text
        assert tok.encode(text) == sp.encode(text), text


@pytest.mark.parametrize("name", SHARED_MODELS)
def test_shared_models_equal_sentencepiece(shared_pair, shared_dir, name):
    tok, sp = shared_pair(name)
    assert tok.vocab_size == sp.get_piece_size()
    assert tok.supports_encode
    assert_same(tok, sp, TEXTS + sample_lines(shared_dir))


@pytest.mark.parametrize("key", TRAINED, ids=lambda k: ",".join(f"{a}={b}" for a, b in k))
def test_trained_models_equal_sentencepiece(trained_pair, shared_dir, key):
    tok, sp = trained_pair(key)
    assert_same(tok, sp, TEXTS + sample_lines(shared_dir, per_file=2) + ["<blk> a<sos/eos>b <tag>ing<ctl>"])
    ids = list(range(tok.vocab_size))
    random.Random(1).shuffle(ids)
    for k in range(0, len(ids), 7):
        chunk = ids[k:k + 9]
        assert tok.decode(chunk) == sp.decode([i for i in chunk if i not in tok.special_ids])


def test_icefall_specials(trained_pair):
    tok, sp = trained_pair(TRAINED[5])
    assert [sp.id_to_piece(i) for i in range(3)] == ["<blk>", "<sos/eos>", "<unk>"]
    assert tok.special_ids == frozenset({0, 1, 2})
    ids = sp.encode("HELLO WORLD")
    assert tok.decode([0, 1] + ids + [2]) == sp.decode(ids)
    assert sp.decode([0, 1] + ids).startswith("<blk><sos/eos>")  # why they must be dropped


ENCODE_VECTORS = [
    ("llama2", "Hello  world", [15043, 29871, 3186]),
    ("llama2", " Hello world ", [29871, 15043, 3186, 29871]),
    ("llama2", "Hello\tworld\n", [15043, 12, 11526, 13]),
    ("llama2", "😀", [29871, 243, 162, 155, 131]),
    ("llama2", " ", [259]),
    ("llama2", "a<s>b", [263, 29966, 29879, 29958, 29890]),
    ("botchan_en_bpe_1000", "Hello  world", [285, 35, 934, 178, 54]),
    ("botchan_en_bpe_1000", "你好", [931, 0]),
    ("botchan_en_bpe_1000", " ", []),
    ("botchan_en_unigram_1000", "Hello\tworld\n", [151, 88, 21, 0, 63, 54, 31, 17, 0]),
]


@pytest.mark.parametrize("name, text, ids", ENCODE_VECTORS)
def test_encode_vectors(shared_pair, name, text, ids):
    assert shared_pair(name)[0].encode(text) == ids


DECODE_VECTORS = [
    ([15043], "Hello"), ([29871, 15043], " Hello"), ([29871, 29871, 15043], "  Hello"), ([1, 15043, 2], "Hello"),
    ([3186, 3186], "world world"), ([243, 162, 155, 131, 3186], "😀 world"), ([35, 15043], "  Hello"),
    ([13, 15043], "\n Hello"), ([243, 162], "\ufffd\ufffd"), ([198, 172, 243], "é\ufffd"), ([29871], ""),
    ([], ""), ([15043, 0, 3186], "Hello world"),  # <unk> (0) is a special id: dropped
]


@pytest.mark.parametrize("ids, text", DECODE_VECTORS)
def test_decode_vectors_llama2(shared_pair, ids, text):
    tok, sp = shared_pair("llama2")
    assert tok.decode(ids) == text
    assert sp.decode([i for i in ids if i not in tok.special_ids]) == text


def test_special_ids_and_option(shared_pair, shared_path):
    tok, _ = shared_pair("llama2")
    assert tok.special_ids == frozenset({0, 1, 2})
    path = shared_path("tokenizers/sentencepiece/llama2.model")
    tok1 = build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}, {"special_ids": [1, 2]}))
    assert tok1.decode([0, 3186]) == " \u2047  world"
    with pytest.raises(TokenIdError):
        build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}, {"special_ids": [32000]}))


@pytest.mark.parametrize("bad", [[32000], [-1], [5, 99999]])
def test_bad_ids(shared_pair, bad):
    tok, _ = shared_pair("llama2")
    with pytest.raises(TokenIdError):
        tok.decode(bad)
    with pytest.raises(TokenIdError):
        tok.token_pieces(bad)


def test_garbled_models(shared_path, tmp_path):
    data = shared_path("tokenizers/sentencepiece/botchan_en_bpe_1000.model").read_bytes()
    for cut in (1, 7, 100, len(data) // 3, len(data) // 2, len(data) - 1):
        p = tmp_path / f"cut{cut}.model"
        p.write_bytes(data[:cut])
        with pytest.raises(TokenizerAssetError, match="model"):
            build_tokenizer(TokenizerSpec("sentencepiece", {"model": p}))
    p = tmp_path / "garbage.model"
    p.write_bytes(bytes(random.Random(3).randrange(256) for _ in range(5000)))
    with pytest.raises(TokenizerAssetError):
        build_tokenizer(TokenizerSpec("sentencepiece", {"model": p}))
    p = tmp_path / "text.model"
    p.write_text("not a model at all\n")
    with pytest.raises(TokenizerAssetError):
        build_tokenizer(TokenizerSpec("sentencepiece", {"model": p}))


text_st = st.lists(st.sampled_from(list("ab cdeXYZ  \t\n.,'-0123") + ["你", "好", "é", "e\u0301", "😀", "ｈ", "①",
                                                                    "\u3000", "\u200b", "ﬁ", "▁", "ß", "ing"]),
                   max_size=40).map("".join)


@SETTINGS
@given(text=text_st)
def test_random_text_equals_sentencepiece(shared_pair, text):
    for name in SHARED_MODELS:
        tok, sp = shared_pair(name)
        assert tok.normalize(text) == sp.normalize(text)
        assert tok.encode(text) == sp.encode(text)


# llama2: ids 3..258 are byte pieces; sequences of them end inside characters.
llama_ids = st.lists(st.one_of(st.integers(3, 258), st.integers(0, 31999), st.sampled_from([29871, 259, 35, 13])),
                     max_size=20)


@SETTINGS
@given(ids=llama_ids)
def test_decode_equals_sentencepiece(shared_pair, ids):
    tok, sp = shared_pair("llama2")
    assert tok.decode(ids) == sp.decode([i for i in ids if i not in tok.special_ids])
    tok_b, sp_b = shared_pair("botchan_en_bpe_1000")
    ids_b = [i % 1000 for i in ids]
    assert tok_b.decode(ids_b) == sp_b.decode([i for i in ids_b if i not in tok_b.special_ids])


@SETTINGS
@given(ids=llama_ids, cuts=cut_lists)
def test_incremental_contract(shared_pair, ids, cuts):
    check_incremental(shared_pair("llama2")[0], ids, cuts)
    check_incremental(shared_pair("botchan_en_unigram_1000")[0], [i % 1000 for i in ids], cuts)


@SETTINGS
@given(ids=llama_ids)
def test_pieces_contract(shared_pair, ids):
    check_pieces(shared_pair("llama2")[0], ids)
    check_pieces(shared_pair("botchan_en_bpe_1000")[0], [i % 1000 for i in ids])


# The kernels against the pure-Python reference (tests/spm_reference.py), model by model.
_REFERENCES: dict = {}


def reference_for(tok):
    from spm_reference import Reference

    if id(tok) not in _REFERENCES:
        _REFERENCES[id(tok)] = (tok, Reference(tok.model))
    return _REFERENCES[id(tok)][1]


@SETTINGS
@given(text=text_st)
def test_kernels_equal_python_reference(shared_pair, trained_pair, text):
    for name in SHARED_MODELS + [TRAINED[1], TRAINED[5], TRAINED[6]]:
        tok = shared_pair(name)[0] if isinstance(name, str) else trained_pair(name)[0]
        ref = reference_for(tok)
        assert tok._normalize(text).tobytes() == ref.normalize(text), (name, text)
        assert tok.encode(text) == ref.encode(text), (name, text)


def test_token_pieces_are_sentencepiece_surfaces(shared_pair):
    # sentencepiece's decode offsets for these ids: [(0,0),(0,6),(6,6),(6,6),(6,6),(6,7),(7,13)]
    tok, _ = shared_pair("llama2")
    ids = [29871, 15043, 243, 162, 155, 131, 3186]
    assert tok.token_pieces(ids) == ["", " Hello", "", "", "", "😀", " world"]
    assert tok.token_pieces([243, 162]) == ["\ufffd", "\ufffd"]  # one U+FFFD per invalid byte, as decode


@pytest.mark.parametrize("ids, text", [([931, 931, 285], "He"), ([285, 931, 931, 178], "He   wor"),
                                       ([0, 285], " \u2047  He")])
def test_decode_vectors_botchan_without_specials(shared_path, ids, text):
    path = shared_path("tokenizers/sentencepiece/botchan_en_bpe_1000.model")
    tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": path}, {"special_ids": []}))
    assert tok.decode(ids) == text


def test_corrupted_models_raise_or_work(shared_path, tmp_path):
    # Flipped bytes: either a named error at load, or a model that encodes and decodes without crashing.
    data = bytearray(shared_path("tokenizers/sentencepiece/botchan_en_bpe_1000.model").read_bytes())
    rnd = random.Random(11)
    outcomes = set()
    for n in range(60):
        bad = bytearray(data)
        for _ in range(3):
            bad[rnd.randrange(len(bad))] = rnd.randrange(256)
        p = tmp_path / f"flip{n}.model"
        p.write_bytes(bytes(bad))
        try:
            tok = build_tokenizer(TokenizerSpec("sentencepiece", {"model": p}))
        except TokenizerAssetError:
            outcomes.add("refused")
            continue
        ids = tok.encode("Hello  world, ｈｅｌｌｏ ① 你好 😀")
        assert all(0 <= i < tok.vocab_size for i in ids)
        tok.decode(ids)
        outcomes.add("loaded")
    assert outcomes == {"refused", "loaded"}
