"""encode_arrow / count_arrow / decode_arrow: exact ids against tiktoken row by row, every input type,
nulls, slices, chunking, the list/large_list switch, invalid UTF-8, special tokens, and the parallel
split of long rows at proven piece boundaries (find_cuts)."""

from __future__ import annotations

import itertools
import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tiktoken")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import FIXTURES, SHARED, missing_reason  # noqa: E402
from edge_cases import edge_cases_labeled, has_surrogates, stress_text  # noqa: E402

ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"]


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request, tiktoken_oracle, ours):
    return tiktoken_oracle(request.param), ours(request.param)


@pytest.fixture(scope="module")
def o200k(tiktoken_oracle, ours):
    return tiktoken_oracle("o200k_base"), ours("o200k_base")


@pytest.fixture(scope="module")
def A():
    from tltok_jit.columns import arrow

    return arrow


def _split_docs(text: str, min_bytes: int = 1024) -> list[str]:
    docs, cur, size = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        size += len(line.encode())
        if size >= min_bytes:
            docs.append("".join(cur))
            cur, size = [], 0
    if cur:
        docs.append("".join(cur))
    return docs


def _corpus(name: str) -> str:
    p = SHARED / "corpora" / name
    if not p.exists():
        pytest.skip(missing_reason(p))
    return p.read_text(encoding="utf-8")


def _udhr() -> str:
    d = SHARED / "corpora" / "udhr"
    if not d.is_dir():
        pytest.skip(missing_reason(d))
    return "".join(p.read_text(encoding="utf-8") for p in sorted(d.glob("*.txt")))


def _stdlib_code(limit: int = 600_000) -> str:
    root = Path(sysconfig.get_paths()["stdlib"])
    parts, total = [], 0
    for p in sorted(root.glob("*.py")):
        try:
            s = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(s)
        total += len(s)
        if total >= limit:
            break
    return "".join(parts)


def _rows(result) -> list:
    return result.to_pylist()


def _expected(ref, texts, **kw):
    return [None if t is None else ref.encode(t, **kw) for t in texts]


def _first_diff(got, exp):
    for i, (g, e) in enumerate(zip(got, exp)):
        if g != e:
            return i
    return None


def _assert_rows(got, exp, texts=None):
    assert len(got) == len(exp)
    i = _first_diff(got, exp)
    if i is not None:
        g, e = got[i], exp[i]
        j = next((k for k, (a, b) in enumerate(zip(g or [], e or [])) if a != b), min(len(g or []), len(e or [])))
        ctx = "" if texts is None or texts[i] is None else repr(texts[i][:200])
        pytest.fail(f"row {i}: first differing id at {j}: got {(g or [])[j:j + 5]} expected {(e or [])[j:j + 5]} {ctx}")


# ------------------------------------------------------------------------------------------------
# exactness on the shared corpora and the edge cases, per row
# ------------------------------------------------------------------------------------------------

def _corpora_docs() -> list[str]:
    """Documents of the shared corpora and stdlib code; without the shared folder, of the committed UDHR
    sample (106 languages) and the stdlib code."""
    try:
        docs = (_split_docs(_corpus("english-war-and-peace.txt"))[:600]
                + _split_docs(_corpus("chinese-sanguo-yanyi.txt"))[:300]
                + _split_docs(_udhr()) + _split_docs(_corpus("emoji-test.txt"))[:100])
    except pytest.skip.Exception:
        docs = _split_docs("".join(pq.read_table(FIXTURES / "sample.parquet")["text"].to_pylist()))
    return docs + _split_docs(_stdlib_code())[:300]


def test_corpora_rows_exact(pair):
    ref, enc = pair
    docs = _corpora_docs()
    arr = pa.array(docs, type=pa.large_string())
    exp = ref.encode_ordinary_batch(docs, num_threads=1)
    for threads in (1, 2):
        _assert_rows(_rows(enc.encode_arrow(arr, num_threads=threads)), exp, docs)
    counts = enc.count_arrow(arr, num_threads=2).to_pylist()
    assert counts == [len(e) for e in exp]


def test_edge_cases_exact(pair, A):
    ref, enc = pair
    texts = [t for _c, t in edge_cases_labeled() if not has_surrogates(t)]
    arr = pa.array(texts)
    exp = [ref.encode_ordinary(t) for t in texts]
    _assert_rows(_rows(enc.encode_arrow(arr, disallowed_special=())), exp, texts)
    # every row alone split at every proven cut (block_bytes=1)
    _assert_rows(_rows(A.encode_arrow(enc, arr, num_threads=2, disallowed_special=(), block_bytes=1)), exp, texts)
    assert A.count_arrow(enc, arr, disallowed_special=(), block_bytes=3).to_pylist() == [len(e) for e in exp]


def test_thread_count_and_block_size_do_not_change_ids(o200k, A):
    _ref, enc = o200k
    docs = _split_docs(_corpus("english-war-and-peace.txt")[:400_000]) + ["x" * 100_000, ""] * 3
    arr = pa.array(docs)
    base = enc.encode_arrow(arr, num_threads=1)
    for threads, bb in ((2, None), (2, 1000), (1, 5000), (2, 17)):
        assert A.encode_arrow(enc, arr, num_threads=threads, block_bytes=bb).equals(base)


# ------------------------------------------------------------------------------------------------
# input types, nulls, slices, chunks
# ------------------------------------------------------------------------------------------------

TEXTS = ["Hello world", None, "", "日本語のテキスト。\n次の行", "a" * 40, None, "it's 12345 o'clock\r\n", "🙂👍🏽",
         "short", "x y z\n\nw", None, "émigré naïve", "tab\tbed", "ends with space "]


def _types():
    t = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
    for name in ("string_view", "binary_view"):
        if hasattr(pa, name):
            t.append(getattr(pa, name)())
    return t


@pytest.mark.parametrize("typ", _types(), ids=str)
def test_input_types(o200k, typ):
    ref, enc = o200k
    vals = [None if t is None else (t.encode() if pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
                                   or str(typ) == "binary_view" else t) for t in TEXTS]
    arr = pa.array(vals, type=typ)
    out = enc.encode_arrow(arr)
    assert out.type == pa.list_(pa.uint32())
    _assert_rows(_rows(out), _expected(ref, TEXTS))
    assert out.null_count == 3
    assert enc.count_arrow(arr).to_pylist() == [None if t is None else len(ref.encode(t)) for t in TEXTS]
    for s in (slice(1, 9), slice(3, 14), slice(5, 5)):
        sl = arr[s]
        _assert_rows(_rows(enc.encode_arrow(sl)), _expected(ref, TEXTS[s]))


def test_string_view_long_and_inline(o200k):
    ref, enc = o200k
    if not hasattr(pa, "string_view"):
        pytest.skip("pyarrow without string_view")
    texts = ["inline<=12", "a much longer string that lives in a data buffer " * 50, None, "x" * 12, "y" * 13] * 50
    arr = pa.array(texts, type=pa.string_view())
    _assert_rows(_rows(enc.encode_arrow(arr, num_threads=2)), _expected(ref, texts))
    _assert_rows(_rows(enc.encode_arrow(arr[7:113], num_threads=2)), _expected(ref, texts[7:113]))


def test_null_rows_pointing_at_bytes(o200k):
    ref, enc = o200k
    data = b"first<|endoftext|>second\xff\xfethird"
    offsets = np.array([0, 5, 18, 24, 26, 31], dtype=np.int32)
    valid = np.packbits(np.array([1, 0, 1, 0, 1], dtype=np.uint8), bitorder="little")
    arr = pa.Array.from_buffers(pa.string(), 5, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)],
                                null_count=2)
    out = enc.encode_arrow(arr)  # the null rows hold a special token and invalid UTF-8: never read
    assert out.to_pylist() == [ref.encode("first"), None, ref.encode("second"), None, ref.encode("third")]
    assert enc.count_arrow(arr).to_pylist() == [len(ref.encode("first")), None, len(ref.encode("second")), None,
                                                 len(ref.encode("third"))]
    assert enc.encode_arrow(arr, errors="strict").null_count == 2


def test_unaligned_slice_validity(o200k):
    ref, enc = o200k
    texts = [None if i % 3 == 0 else f"row {i} text" for i in range(100)]
    arr = pa.array(texts)
    for a, b in ((3, 50), (8, 16), (13, 99), (0, 100)):
        out = enc.encode_arrow(arr.slice(a, b - a))
        assert out.offset == 0
        _assert_rows(_rows(out), _expected(ref, texts[a:b]))
        out.validate(full=True)


def test_all_null_and_empty(o200k):
    _ref, enc = o200k
    assert enc.encode_arrow(pa.array([None, None], type=pa.string())).to_pylist() == [None, None]
    assert enc.encode_arrow(pa.nulls(3)).to_pylist() == [None] * 3
    e = enc.encode_arrow(pa.array([], type=pa.string()))
    assert len(e) == 0 and e.type == pa.list_(pa.uint32())
    assert enc.count_arrow(pa.array([], type=pa.large_string())).to_pylist() == []
    assert enc.encode_arrow(pa.array(["", ""])).to_pylist() == [[], []]
    ch = enc.encode_arrow(pa.chunked_array([], type=pa.string()))
    assert isinstance(ch, pa.ChunkedArray) and ch.num_chunks == 0


def test_chunked_array_keeps_chunks(o200k):
    ref, enc = o200k
    chunks = [TEXTS[:4], [], TEXTS[4:9], TEXTS[9:]]
    ca = pa.chunked_array([pa.array(c, type=pa.string()) for c in chunks], type=pa.string())
    out = enc.encode_arrow(ca, num_threads=2)
    assert isinstance(out, pa.ChunkedArray)
    assert [len(c) for c in out.chunks] == [len(c) for c in chunks]
    _assert_rows(out.to_pylist(), _expected(ref, TEXTS))
    cnt = enc.count_arrow(ca)
    assert isinstance(cnt, pa.ChunkedArray) and [len(c) for c in cnt.chunks] == [len(c) for c in chunks]


def test_table_column_and_dictionary(o200k):
    ref, enc = o200k
    t = pa.table({"text": TEXTS, "n": list(range(len(TEXTS)))})
    _assert_rows(enc.encode_arrow(t["text"]).to_pylist(), _expected(ref, TEXTS))
    d = pa.array(TEXTS).dictionary_encode()
    _assert_rows(enc.encode_arrow(d).to_pylist(), _expected(ref, TEXTS))
    assert enc.count_arrow(d).to_pylist() == [None if x is None else len(ref.encode(x)) for x in TEXTS]


def test_plain_lists_and_numpy(o200k):
    ref, enc = o200k
    texts = ["a b", "c"]
    assert enc.encode_arrow(texts).to_pylist() == _expected(ref, texts)
    assert enc.encode_arrow(np.array(texts, dtype=object)).to_pylist() == _expected(ref, texts)
    with pytest.raises(TypeError, match="string"):
        enc.encode_arrow(pa.array([1, 2, 3]))


def test_zero_copy_inputs(o200k):
    """No Arrow-pool allocation proportional to the input: buffers are read in place (the pool holds
    the ids of a parallel call, whose pages it recycles, and nothing else of that size)."""
    _ref, enc = o200k
    texts = ["some text that is long enough to matter " * 20] * 2000
    for typ in _types():
        if "binary" in str(typ):
            continue
        arr = pa.array(texts, type=typ)
        enc.encode_arrow(arr)  # warm
        before = pa.total_allocated_bytes()
        out = enc.encode_arrow(arr, num_threads=2)
        grown = pa.total_allocated_bytes() - before - 4 * len(out.values)
        assert grown < 64 * 1024, f"{typ}: {grown} bytes allocated in the Arrow pool besides the ids"
        # the ids buffer is the numpy array handed over, not a copy
        assert out.values.buffers()[1].size >= 4 * len(out.values)
        del out


def test_pandas_arrow_dtype(o200k):
    pd = pytest.importorskip("pandas", reason="pandas not installed (test extra)")
    ref, enc = o200k
    s = pd.Series(TEXTS, dtype=pd.ArrowDtype(pa.large_string()))
    _assert_rows(enc.encode_arrow(s).tolist(), _expected(ref, TEXTS))  # pandas in, pandas out
    s2 = pd.Series(TEXTS, dtype="string[pyarrow]")
    _assert_rows(enc.encode_arrow(s2).tolist(), _expected(ref, TEXTS))


def test_polars_series(o200k):
    pl = pytest.importorskip("polars", reason="polars not installed (test extra)")
    ref, enc = o200k
    s = pl.Series("t", TEXTS)
    _assert_rows(enc.encode_arrow(s).to_pylist(), _expected(ref, TEXTS))
    assert enc.count_arrow(s).to_pylist() == [None if x is None else len(ref.encode(x)) for x in TEXTS]


# ------------------------------------------------------------------------------------------------
# output types: list / large_list
# ------------------------------------------------------------------------------------------------

def test_large_list_switch(o200k, A, monkeypatch):
    ref, enc = o200k
    texts = ["one two three four", "five six", None, "seven"]
    n_ids = sum(len(ref.encode(t)) for t in texts if t)
    monkeypatch.setattr(A, "LIST_MAX_IDS", n_ids)
    assert enc.encode_arrow(pa.array(texts)).type == pa.list_(pa.uint32())
    monkeypatch.setattr(A, "LIST_MAX_IDS", n_ids - 1)
    out = enc.encode_arrow(pa.array(texts))
    assert out.type == pa.large_list(pa.uint32())
    assert out.to_pylist() == _expected(ref, texts)
    out.validate(full=True)
    # a chunked array: one chunk over the limit makes every chunk large_list
    ca = pa.chunked_array([pa.array(texts[:1]), pa.array(texts)])
    outc = enc.encode_arrow(ca)
    assert outc.type == pa.large_list(pa.uint32()) and all(c.type == outc.type for c in outc.chunks)
    assert outc.to_pylist() == _expected(ref, texts[:1] + texts)
    with pytest.raises(OverflowError):
        enc.encode_arrow(pa.array(texts), large_list=False)
    monkeypatch.setattr(A, "LIST_MAX_IDS", 2**31 - 1)
    assert enc.encode_arrow(pa.array(texts), large_list=True).type == pa.large_list(pa.uint32())


# ------------------------------------------------------------------------------------------------
# invalid UTF-8
# ------------------------------------------------------------------------------------------------

BAD = [b"ok \xff bad", b"\xe4\xb8", b"trunc \xe4\xb8\xad\xe4", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong",
       b"\xf4\x90\x80\x80 too big", b"fine", b"\x80\x80\x80", b"mixed \xf0\x9f\x99 \xf0\x9f\x99\x82"]


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary(), pa.string()], ids=str)
def test_invalid_utf8_replace(o200k, typ):
    ref, enc = o200k
    arr = pa.array(BAD, type=pa.binary()).cast(typ) if typ != pa.string() else \
        pa.Array.from_buffers(pa.string(), len(BAD), pa.array(BAD, type=pa.binary()).buffers())
    exp = [ref.encode(b.decode("utf-8", "replace")) for b in BAD]
    for threads in (1, 2):
        _assert_rows(_rows(enc.encode_arrow(arr, num_threads=threads)), exp)
    assert enc.count_arrow(arr).to_pylist() == [len(e) for e in exp]


def test_invalid_utf8_strict_names_row(o200k):
    _ref, enc = o200k
    arr = pa.array([b"fine", b"also fine", b"bad \xff here"], type=pa.binary())
    with pytest.raises(ValueError, match=r"row 2: invalid UTF-8 at byte 4"):
        enc.encode_arrow(arr, errors="strict")
    ca = pa.chunked_array([arr[:2], arr])
    with pytest.raises(ValueError, match=r"row 4: invalid UTF-8"):
        enc.count_arrow(ca, errors="strict")
    with pytest.raises(ValueError, match="errors"):
        enc.encode_arrow(arr, errors="ignore")


def test_invalid_utf8_in_rows_cut_into_blocks(o200k, A):
    """A row cut by block boundaries whose invalid byte is found by a later (or an earlier) block than
    the one that encoded part of it: its ids come out whole from the re-encoded text, its neighbours'
    unchanged, for any thread count and block size."""
    ref, enc = o200k
    words = " ".join(["lorem ipsum dolor sit amet, the quick brown fox"] * 60).encode()
    rows = [words, words[:900] + b"\xff" + words[900:], words, b"\xe4\xb8" + words,
            words + b" \xf0\x9f\x99", b"short \xc0 row", words]
    arr = pa.array(rows, type=pa.large_binary())
    exp = [ref.encode_ordinary(b.decode("utf-8", "replace")) for b in rows]
    for threads, bb in ((1, 200), (2, 200), (2, 997), (1, None), (2, None)):
        got = A.encode_arrow(enc, arr, num_threads=threads, block_bytes=bb, disallowed_special=())
        assert got.to_pylist() == exp, (threads, bb)
        assert A.count_arrow(enc, arr, num_threads=threads, block_bytes=bb,
                             disallowed_special=()).to_pylist() == [len(e) for e in exp]


def test_gather_on_two_threads(o200k, A, monkeypatch):
    """A result big enough to be gathered by two threads, each a run of blocks: rows cut by block
    boundaries (heads), flagged rows among them and empty rows, for several block sizes; the ids
    are tiktoken's and the same as one thread's (one gather in place)."""
    ref, enc = o200k
    words = " ".join(["lorem ipsum dolor sit amet, the quick brown fox"] * 60).encode()
    rows = [words, words[:900] + b"\xff" + words[900:], b"", words, b"\xe4\xb8" + words, b"short \xc0 row"] * 30
    arr = pa.array(rows, type=pa.large_binary())
    exp = [ref.encode_ordinary(b.decode("utf-8", "replace")) for b in rows]
    n_ids = sum(map(len, exp))
    ranges = []
    gather = A.KC.gather

    def spy(*args):
        ranges.append((args[11], args[12], args[13]))
        return gather(*args)

    monkeypatch.setattr(A.KC, "gather", spy)
    assert 4 * n_ids < 2 * A.GATHER_BYTES  # too few ids to pay for a second thread: one run
    A.encode_arrow(enc, arr, num_threads=2, disallowed_special=())
    assert all(r[0] == 0 and r[2] == 0 for r in ranges), ranges  # (every gather of the call)
    ranges.clear()
    monkeypatch.setattr(A, "GATHER_BYTES", 1 << 15)
    assert 4 * n_ids >= 2 * A.GATHER_BYTES
    for bb in (200, 997, 5000, None):
        ranges.clear()
        got = A.encode_arrow(enc, arr, num_threads=2, block_bytes=bb, disallowed_special=())
        assert got.to_pylist() == exp, bb
        assert got.equals(A.encode_arrow(enc, arr, num_threads=1, block_bytes=bb, disallowed_special=()))
        # the call's own gather (the flagged rows' text is encoded after it, gathered on its own)
        first, second = sorted(ranges[:2])
        assert first[0] == 0 and first[1] == second[0] and first[2] == 0, (bb, ranges)
        assert 0 < second[2] < n_ids  # the second run starts inside the result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_invalid_utf8_hypothesis(o200k, rows):
    ref, enc = o200k
    arr = pa.array(rows, type=pa.large_binary())
    exp = [ref.encode(b.decode("utf-8", "replace")) for b in rows]
    assert enc.encode_arrow(arr, disallowed_special=()).to_pylist() == exp
    valid = []
    for b in rows:
        try:
            b.decode("utf-8")
            valid.append(True)
        except UnicodeDecodeError:
            valid.append(False)
    if all(valid):
        enc.encode_arrow(arr, errors="strict", disallowed_special=())
    else:
        with pytest.raises(ValueError, match=f"row {valid.index(False)}: invalid UTF-8"):
            enc.encode_arrow(arr, errors="strict", disallowed_special=())


# three-byte sequences valid and not (the validation pass takes E1-EC / EE-EF leads without a range
# check), truncated ones at a row's end, and the one special token's first byte
UTF8_PARTS = [b"a", b" ", b"<", b"\xe4\xb8\xad", b"\xe1\x80\x80", b"\xef\xbf\xbf", b"\xec\xbf\xbf",
              b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xe0\xa0\x80", b"\xe0\x80\x80", b"\xe4\xb8", b"\xe4",
              b"\x80", b"\xbf", b"\xc3\xa9", b"\xf0\x9f\x99\x82", b"\xee\x80", b"<|endoftext|>"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(UTF8_PARTS), max_size=24).map(b"".join), min_size=1, max_size=6))
def test_multibyte_validation_hypothesis(o200k, rows):
    ref, enc = o200k
    arr = pa.array(rows, type=pa.binary())
    exp = [ref.encode(b.decode("utf-8", "replace"), disallowed_special=()) for b in rows]
    for threads in (1, 2):
        assert enc.encode_arrow(arr, num_threads=threads, disallowed_special=()).to_pylist() == exp
    bad = [r for r, b in enumerate(rows) if b.decode("utf-8", "replace").encode() != b]
    special = [r for r, b in enumerate(rows) if b"<|endoftext|>" in b]
    first = min(bad + special, default=None)
    if first is None:
        enc.encode_arrow(arr, errors="strict")
    else:
        with pytest.raises(ValueError, match=f"row {first}: "):
            enc.encode_arrow(arr, errors="strict")


# ------------------------------------------------------------------------------------------------
# special tokens
# ------------------------------------------------------------------------------------------------

def test_special_tokens(o200k):
    ref, enc = o200k
    texts = ["plain", None, "a <|endoftext|> b", "<|endofprompt|>x"]
    with pytest.raises(ValueError, match=r"row 2: .*disallowed special token '<\|endoftext\|>'"):
        enc.encode_arrow(pa.array(texts))
    with pytest.raises(ValueError, match=r"row 2: "):
        enc.count_arrow(pa.array(texts), num_threads=2)
    with pytest.raises(ValueError, match=r"row 4: "):
        enc.encode_arrow(pa.chunked_array([pa.array(texts[:2]), pa.array(texts)]))
    for kw in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|endoftext|>"},
                                                                          "disallowed_special": ()}):
        assert enc.encode_arrow(pa.array(texts), **kw).to_pylist() == _expected(ref, texts, **kw)
        assert enc.count_arrow(pa.array(texts), **kw).to_pylist() == [None if e is None else len(e)
                                                                       for e in _expected(ref, texts, **kw)]
    # tiktoken refuses any disallowed string, special token or not
    with pytest.raises(ValueError, match="row 0: "):
        enc.encode_arrow(pa.array(["say hello", "x"]), disallowed_special={"hello"})


def test_special_tokens_in_long_split_rows(o200k, A):
    ref, enc = o200k
    text = ("Some words here.\nNext line <|endoftext|> more words\n" * 3000)
    arr = pa.array([text, "x"])
    exp = [ref.encode(text, allowed_special="all"), ref.encode("x")]
    got = A.encode_arrow(enc, arr, allowed_special="all", num_threads=2, block_bytes=997)
    assert got.to_pylist() == exp
    with pytest.raises(ValueError, match="row 0: "):
        A.encode_arrow(enc, arr, num_threads=2, block_bytes=997)


# ------------------------------------------------------------------------------------------------
# long rows: proven cuts, parallel split == serial
# ------------------------------------------------------------------------------------------------

SMALL_ALPHABET = ["a", "B", " ", "\n", "\r", "'", "s", "1", ".", "/", "\u0301", "\u3000", "中", "\xa0", "\t", "ſ"]


def test_cut_rule_exhaustive_small_alphabet(pair, A):
    """Every cut find_cuts proposes in every string of up to 4 characters over an alphabet of the
    characters the proof is about splits the ids exactly (tiktoken as the oracle)."""
    ref, enc = pair
    n_cuts = 0
    for length in range(2, 5):
        for tup in itertools.product(SMALL_ALPHABET, repeat=length):
            s = "".join(tup)
            cuts = A.find_cuts(enc, s)
            if not cuts:
                continue
            b = s.encode()
            full = ref.encode_ordinary(s)
            for c in cuts:
                n_cuts += 1
                assert ref.encode_ordinary(b[:c].decode()) + ref.encode_ordinary(b[c:].decode()) == full, (s, c)
    assert n_cuts > 5000


def test_cut_rule_rejects_unsafe_positions(pair, A):
    """The conditions are needed: each relaxed variant has a counterexample the oracle sees."""
    ref, enc = pair
    assert A.find_cuts(enc, "a\n\nb") == []  # whitespace before the newline
    assert 3 not in A.find_cuts(enc, "ab\n b")  # whitespace after it
    assert A.find_cuts(enc, "ab\r\ncd") == []  # CRLF
    assert A.find_cuts(enc, "ab\n/x") == []
    assert A.find_cuts(enc, "xy a") == [2]
    assert A.find_cuts(enc, "12 a") == []  # a digit is not a letter
    assert A.find_cuts(enc, "xy.\nab") == [4]
    if ref.name == "r50k_base":
        s = "a\n\nb"
        assert ref.encode_ordinary("a\n\n") + ref.encode_ordinary("b") != ref.encode_ordinary(s)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stress_text(allow_surrogates=False))
def test_cuts_hypothesis(pair, A, text):
    ref, enc = pair
    full = ref.encode_ordinary(text)
    b = text.encode()
    for c in A.find_cuts(enc, text):
        assert ref.encode_ordinary(b[:c].decode()) + ref.encode_ordinary(b[c:].decode()) == full, c
    got = A.encode_arrow(enc, pa.array([text, text[:7]]), disallowed_special=(), block_bytes=1, num_threads=2)
    assert got.to_pylist() == [full, ref.encode_ordinary(text[:7])]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(SMALL_ALPHABET + ["A", "z", "-", "\u02b0", "\u0915"]), max_size=60))
def test_split_row_hypothesis_small_alphabet(pair, A, text):
    ref, enc = pair
    got = A.encode_arrow(enc, pa.array([text]), disallowed_special=(), block_bytes=1, num_threads=2)
    assert got.to_pylist() == [ref.encode_ordinary(text)]
    assert A.count_arrow(enc, pa.array([text]), disallowed_special=(), block_bytes=2).to_pylist() == \
        [len(ref.encode_ordinary(text))]


def test_concatenated_corpora_one_row(pair, A):
    """All shared corpora (and some stdlib code) as ONE row, split across blocks == serial == tiktoken."""
    ref, enc = pair
    text = (_corpus("english-war-and-peace.txt") + _corpus("chinese-sanguo-yanyi.txt") + _udhr()
            + _corpus("emoji-test.txt") + _stdlib_code(300_000))
    exp = np.array(ref.encode_ordinary(text), dtype=np.uint32)
    arr = pa.array([text], type=pa.large_string())
    out = A.encode_arrow(enc, arr, num_threads=2, disallowed_special=())
    bb = A._state(enc).last_plan
    assert len(bb) > 8, "the long row was not split"
    got = out.values.to_numpy()
    assert len(got) == len(exp) and np.array_equal(got, exp)
    small = A.encode_arrow(enc, arr, num_threads=2, disallowed_special=(), block_bytes=50_000)
    assert np.array_equal(small.values.to_numpy(), exp)
    assert A.count_arrow(enc, arr, num_threads=2, disallowed_special=()).to_pylist() == [len(exp)]


def test_long_row_next_to_many_short_rows_is_split(o200k, A):
    ref, enc = o200k
    rng = random.Random(5)
    words = _corpus("english-war-and-peace.txt").split()
    long_row = " ".join(words[:160_000])[:900_000]
    short = [" ".join(rng.choice(words) for _ in range(3))[:20] for _ in range(10_000)]
    texts = [long_row] + short
    arr = pa.array(texts)
    out = enc.encode_arrow(arr, num_threads=2)
    bb = A._state(enc).last_plan
    inside = [b for b in bb if 0 < b < len(long_row.encode())]
    assert len(inside) >= 2, "the 900 KB row was not cut into blocks"
    assert out.to_pylist() == ref.encode_ordinary_batch(texts, num_threads=1)


# ------------------------------------------------------------------------------------------------
# decode_arrow
# ------------------------------------------------------------------------------------------------

def test_decode_roundtrip(pair):
    ref, enc = pair
    texts = TEXTS + [_corpus("emoji-test.txt")[:5000]]
    ids = enc.encode_arrow(pa.array(texts))
    back = enc.decode_arrow(ids)
    assert back.type == pa.large_string()
    assert back.to_pylist() == texts
    assert enc.decode_arrow(ids.slice(3, 7)).to_pylist() == texts[3:10]
    ca = pa.chunked_array([ids[:2], ids[2:]])
    assert enc.decode_arrow(ca).to_pylist() == texts
    assert enc.decode_arrow(ids.cast(pa.large_list(pa.uint32()))).to_pylist() == texts
    assert enc.decode_arrow(ids.cast(pa.list_(pa.int64()))).to_pylist() == texts


def test_decode_invalid(o200k):
    ref, enc = o200k
    partial = ref.encode("中")  # 中 is one token in o200k? take its bytes apart with single-byte ids
    byte_ids = [ref.encode_single_token(bytes([b])) for b in "中".encode()]
    arr = pa.array([[1, 2], byte_ids[:2], None, byte_ids + partial], type=pa.list_(pa.uint32()))
    assert enc.decode_arrow(arr).to_pylist() == [ref.decode([1, 2]), ref.decode(byte_ids[:2]), None,
                                                 ref.decode(byte_ids + partial)]
    with pytest.raises(ValueError, match="row 1: .*invalid UTF-8"):
        enc.decode_arrow(arr, errors="strict")
    with pytest.raises(KeyError, match="row 1: invalid token"):
        enc.decode_arrow(pa.array([[1], [enc.n_vocab + 5]], type=pa.list_(pa.uint32())))
