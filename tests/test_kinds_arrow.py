"""Arrow column entry points of every registry kind that encodes (sentencepiece on its column kernel;
tiktoken, huggingface and whisper through their Encoding; funasr_char row by row): row r of
`encode_arrow` is `encode(row r)` (for sentencepiece: the sentencepiece package's ids), nulls kept,
string / large_string / string_view / dictionary / sliced / chunked input, invalid UTF-8 as the README
says, 1 and 2 threads identical; `count_arrow`, `decode_arrow`, pandas Series."""

from __future__ import annotations

import functools
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED
from kinds_contract import SETTINGS
from tltok_jit import EncodeNotSupportedError, TokenIdError, TokenizerSpec, build_tokenizer
from tltok_jit.columns.arrow import ArrowRowError

SPM_MODELS = ["llama2", "botchan_en_bpe_1000", "botchan_en_unigram_1000"]
FUNASR_TOKENS = ["<blank>", "<s>", "</s>", "你", "好", "世", "界", "hel@@", "lo", "world", "a", "b", "c", "the",
                 "is", "big", "1", "2", "，", "。", "x@@", "he@@", "l@@", "wor@@", "ld", "ok", "d", "<unk>"]

KINDS = [f"sentencepiece:{m}" for m in SPM_MODELS] + [
    "tiktoken:o200k_base", "huggingface:gpt2", "huggingface:llama3+template", "whisper:multilingual",
    "funasr_char:tokens"]

SHORT = ["Hello world", None, "", "你好世界", " naïve  café ", "😀🇯🇵 👨‍👩‍👧", "\t\n", "x" * 3000, "a<s>b", "ｈｅｌｌｏ",
         "I saw a girl with a telescope.", None, "e\u0301 ①", "  lead and trail  "]


@functools.lru_cache(maxsize=None)
def _build(kind: str, tmp: str):
    from conftest import get_shared_path

    name, _, what = kind.partition(":")
    if name == "sentencepiece":
        return build_tokenizer(TokenizerSpec(name, {"model": get_shared_path(f"tokenizers/sentencepiece/{what}.model")}))
    if name == "tiktoken":
        return build_tokenizer(TokenizerSpec(name, options={"encoding": what}))
    if name == "huggingface":
        model, _, template = what.partition("+")
        return build_tokenizer(TokenizerSpec(name, {"tokenizer": get_shared_path(f"tokenizers/{model}/tokenizer.json")},
                                             {"add_special_tokens": bool(template)}))
    if name == "whisper":
        return build_tokenizer(TokenizerSpec(name, {"ranks": get_shared_path(
            "tokenizers/tiktoken/whisper_multilingual.tiktoken")}))
    path = f"{tmp}/tokens.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(FUNASR_TOKENS, f, ensure_ascii=False)
    return build_tokenizer(TokenizerSpec(name, {"tokens": path}))


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("kinds_arrow"))
    return lambda kind: _build(kind, tmp)


@functools.lru_cache(maxsize=None)
def documents(n: int = 120, size: int = 1500) -> list[str]:
    """~1.5 KB documents, alternately English and Chinese (the shared corpora, else a built text)."""
    en_path = SHARED / "corpora" / "english-war-and-peace.txt"
    zh_path = SHARED / "corpora" / "chinese-sanguo-yanyi.txt"
    en = en_path.read_text(encoding="utf-8")[100_000:100_000 + n * size] if en_path.exists() else \
        "It was the best of times, it was the worst of times. " * (n * size // 50)
    zh = zh_path.read_text(encoding="utf-8")[10_000:10_000 + n * size // 3] if zh_path.exists() else \
        "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。" * (n * size // 60)
    docs = []
    for i in range(n):
        src, step = (en, size) if i % 2 == 0 else (zh, size // 3)
        k = (i // 2) * step
        docs.append(src[k:k + step])
    return docs


def rows_of(result) -> list:
    return result.to_pylist()


def expected(tok, texts) -> list:
    return [None if t is None else tok.encode(t) for t in texts]


def _types():
    out = [pa.string(), pa.large_string()]
    if hasattr(pa, "string_view"):
        out.append(pa.string_view())
    return out


# ---------------------------------------------------------------------------------------------- every kind

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("typ", _types(), ids=str)
def test_rows_equal_encode(build, kind, typ):
    tok = build(kind)
    texts = SHORT + documents(40)
    want = expected(tok, texts)
    arr = pa.array(texts, type=typ)
    one = tok.encode_arrow(arr, num_threads=1)
    two = tok.encode_arrow(arr, num_threads=2)
    assert one.type == pa.list_(pa.uint32())
    assert rows_of(one) == want
    assert rows_of(two) == want
    assert one.null_count == 2
    counts = tok.count_arrow(arr, num_threads=2)
    assert counts.type == pa.int64()
    assert counts.to_pylist() == [None if w is None else len(w) for w in want]


@pytest.mark.parametrize("kind", KINDS)
def test_chunked_sliced_dictionary(build, kind):
    tok = build(kind)
    texts = SHORT + documents(12)
    want = expected(tok, texts)
    chunked = pa.chunked_array([pa.array(texts[:5]), pa.array([], pa.string()), pa.array(texts[5:11]),
                                pa.array(texts[11:])])
    got = tok.encode_arrow(chunked, num_threads=2)
    assert isinstance(got, pa.ChunkedArray)
    assert [len(c) for c in got.chunks] == [len(c) for c in chunked.chunks]
    assert rows_of(got) == want
    assert tok.count_arrow(chunked).to_pylist() == [None if w is None else len(w) for w in want]
    sliced = pa.array(texts, pa.large_string()).slice(3, 9)
    assert rows_of(tok.encode_arrow(sliced)) == want[3:12]
    dictionary = pa.array(texts + texts[:4]).dictionary_encode()
    assert rows_of(tok.encode_arrow(dictionary)) == want + want[:4]
    assert tok.encode_arrow(pa.array([None, None], pa.null())).to_pylist() == [None, None]
    assert tok.encode_arrow(pa.array([], pa.string())).to_pylist() == []
    assert tok.encode_arrow(pa.array(texts[:3]), large_list=True).type == pa.large_list(pa.uint32())


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_utf8(build, kind):
    tok = build(kind)
    rows = [b"ok \xff bad", None, "fine 你好".encode(), b"\xe4\xbd", b"trunc \xe4\xbd", b"\xed\xa0\x80 surrogate",
            b"\xc0\xaf overlong", b"\xf4\x90\x80\x80 big"]
    arr = pa.array(rows, pa.binary())
    want = [None if r is None else tok.encode(r.decode("utf-8", "replace")) for r in rows]
    assert rows_of(tok.encode_arrow(arr, num_threads=2)) == want
    assert tok.count_arrow(arr).to_pylist() == [None if w is None else len(w) for w in want]
    with pytest.raises(ArrowRowError, match=r"row 0: invalid UTF-8 at byte 3") as e:
        tok.encode_arrow(arr, errors="strict")
    assert e.value.row == 0
    chunked = pa.chunked_array([pa.array([b"good", None], pa.binary()), pa.array([b"x", b"y\x80"], pa.binary())])
    with pytest.raises(ArrowRowError, match=r"row 3: invalid UTF-8 at byte 1"):
        tok.count_arrow(chunked, errors="strict")
    with pytest.raises(ValueError, match="errors must be"):
        tok.encode_arrow(arr, errors="ignore")


@pytest.mark.parametrize("kind", KINDS)
def test_decode_arrow(build, kind):
    tok = build(kind)
    texts = SHORT[:7] + documents(4)
    ids = tok.encode_arrow(pa.array(texts))
    want = [None if r is None else tok.decode(r) for r in rows_of(ids)]
    for typ in (pa.list_(pa.uint32()), pa.list_(pa.int32()), pa.large_list(pa.uint32()), pa.large_list(pa.int64())):
        got = tok.decode_arrow(ids.cast(typ))
        assert got.type == pa.large_string()
        assert got.to_pylist() == want
    chunked = pa.chunked_array([ids.slice(0, 3), ids.slice(3)])
    got = tok.decode_arrow(chunked)
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == want
    special = sorted(tok.special_ids)[:2]
    if special:  # dropped, as decode drops them
        with_special = pa.array([special + [tok.encode("ab")[0]], None], pa.list_(pa.int32()))
        assert tok.decode_arrow(with_special).to_pylist() == [tok.decode(with_special[0].as_py()), None]
    bad = pa.array([[1], [2], [tok.vocab_size]], pa.list_(pa.int64()))
    with pytest.raises(TokenIdError, match=r"row 2: token id"):
        tok.decode_arrow(bad)
    with pytest.raises(TokenIdError, match=r"row 1: token id -1"):
        tok.decode_arrow(pa.array([[1], [-1]], pa.list_(pa.int32())))


@pytest.mark.parametrize("kind", KINDS)
def test_pandas_series(build, kind):
    pd = pytest.importorskip("pandas")
    tok = build(kind)
    texts = ["Hello world", None, "你好", ""]
    s = pd.Series(texts, index=[10, 11, 12, 13], name="text", dtype=object)
    want = expected(tok, texts)
    got = tok.encode_arrow(s)
    assert isinstance(got, pd.Series)
    assert list(got.index) == [10, 11, 12, 13] and got.name == "text"
    assert [None if v is None else list(v) for v in got] == want
    counts = tok.count_arrow(s.astype("string[pyarrow]"))
    assert str(counts.dtype) == "Int64" and list(counts.index) == [10, 11, 12, 13]
    assert [None if pd.isna(v) else int(v) for v in counts] == [None if w is None else len(w) for w in want]


def test_decode_only_kind(tmp_path):
    p = tmp_path / "units.txt"
    p.write_text("<blank> 0\n<unk> 1\n\u2581he 2\nllo 3\n", encoding="utf-8")
    tok = build_tokenizer(TokenizerSpec("symbol_table", {"units": p}))
    with pytest.raises(EncodeNotSupportedError):
        tok.encode_arrow(pa.array(["hello"]))
    with pytest.raises(EncodeNotSupportedError):
        tok.count_arrow(pa.array(["hello"]))
    got = tok.decode_arrow(pa.array([[2, 3], None, [0, 2]], pa.list_(pa.int32())))
    assert got.to_pylist() == [tok.decode([2, 3]), None, tok.decode([0, 2])]


# ---------------------------------------------------------------------------------------------- sentencepiece

@pytest.fixture(scope="module")
def spm_pair(build):
    spm = pytest.importorskip("sentencepiece")
    from conftest import get_shared_path

    def get(model):
        tok = build(f"sentencepiece:{model}")
        return tok, spm.SentencePieceProcessor(model_file=str(get_shared_path(f"tokenizers/sentencepiece/{model}.model")))

    return get


@pytest.mark.parametrize("model", SPM_MODELS)
def test_sentencepiece_equals_package(spm_pair, model):
    tok, sp = spm_pair(model)
    texts = [t for t in SHORT if t is not None] + documents(120)
    want = sp.encode(texts)
    arr = pa.array(texts)
    assert rows_of(tok.encode_arrow(arr, num_threads=2)) == want
    assert rows_of(tok.encode_arrow(arr, num_threads=1)) == want
    assert tok.count_arrow(arr, num_threads=2).to_pylist() == [len(w) for w in want]
    bad = [b"a\xffb", b"\xe4\xbd\xa0\xe4", b"\x80\x80 x"]
    assert rows_of(tok.encode_arrow(pa.array(bad, pa.binary()))) == sp.encode([b.decode("utf-8", "replace")
                                                                               for b in bad])


@pytest.mark.parametrize("model", SPM_MODELS)
def test_sentencepiece_region_overflow_falls_back(spm_pair, model):
    """Rows whose ids outgrow their output region are encoded on the single-text path: with no
    region at all, every non-empty row takes that path, and the result is the same."""
    from tltok_jit.kinds.columns import read_text

    tok, sp = spm_pair(model)
    texts = ["Hello world", "", None, "你好", "x" * 50] + documents(6)
    col = read_text(pa.array(texts))
    ids, offsets, valid = tok._columns().run(col, 0, 2, "replace", False, region_slack=-(1 << 40))
    got = [ids[offsets[r]:offsets[r + 1]].tolist() if valid[r] else None for r in range(len(texts))]
    assert got == [None if t is None else sp.encode(t) for t in texts]


def test_sentencepiece_threads_and_blocks(spm_pair):
    """Many small blocks on 2 threads (block plan over 300 KB) give the 1-thread ids."""
    tok, sp = spm_pair("llama2")
    texts = documents(200, 1500)
    arr = pa.array(texts, pa.large_string())
    one = tok.encode_arrow(arr, num_threads=1)
    for _ in range(3):
        assert tok.encode_arrow(arr, num_threads=2).equals(one)
    assert rows_of(one) == sp.encode(texts)


_PIECES = st.one_of(st.binary(max_size=4), st.text(max_size=3).map(lambda t: t.encode("utf-8", "surrogatepass")),
                    st.sampled_from([b"\xe0\x9f\x80", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xed\xa0\x80",
                                     b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xe4\xbd"]))


@given(st.lists(_PIECES, max_size=8).map(b"".join))
@SETTINGS
def test_first_invalid_utf8_matches_python(data):
    from tltok_jit.kernels.sentencepiece_arrow import first_invalid_utf8

    buf = np.frombuffer(data, np.uint8) if data else np.zeros(0, np.uint8)
    try:
        data.decode("utf-8")
        want = -1
    except UnicodeDecodeError as e:
        want = e.start
    assert first_invalid_utf8(buf) == want


def test_sentencepiece_columns_after_fork(spm_pair):
    """The worker threads are started per call: a forked child encodes columns on 2 threads too."""
    import multiprocessing

    tok, sp = spm_pair("botchan_en_bpe_1000")
    texts = documents(60)
    arr = pa.array(texts)
    want = tok.encode_arrow(arr, num_threads=2)
    _FORKED["tok"] = tok  # inherited by the child (a tokenizer does not pickle)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_child_encode, (texts,)).get(timeout=300)
    assert got == want.to_pylist() == sp.encode(texts)


_FORKED: dict = {}


def _child_encode(texts):
    return _FORKED["tok"].encode_arrow(pa.array(texts), num_threads=2).to_pylist()
