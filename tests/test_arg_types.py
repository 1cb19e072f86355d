"""A wrong argument type is a TypeError naming the argument (where tiktoken raises TypeError for the
same call, so do we); ids that do not fit int64 are reported as they are; invalid Arrow offsets are
refused instead of encoded."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import tltok_jit
from tltok_jit.encoding import UnknownTokenError

NAME = "r50k_base"

BAD_TEXTS = [b"hello", bytearray(b"hi"), memoryview(b"hi"), None, ["hello"], 5]
BAD_TOKENS = [  # (tokens, what the message names)
    ([24912.7, 2375.2], r"tokens\[0\] must be an int token id, not float"),
    (["24912"], r"tokens\[0\] must be an int token id, not str"),
    ("24912", r"tokens must be a sequence of int token ids, not str"),
    ([[1, 2]], r"tokens\[0\] must be an int token id, not list"),
    ([1, [2]], r"tokens\[1\] must be an int token id, not list"),
    (np.array([[1, 2]]), r"tokens must be a 1-d array"),
    (np.array([1.5]), r"tokens must hold integer token ids, not float64"),
    (None, r"tokens must be a sequence of int token ids, not NoneType"),
    (range, r"tokens\[1\] must be an int token id, not float"),  # stands for an iterator, made per test
]


@pytest.fixture(scope="module")
def pair(ours, tiktoken_oracle):
    return ours(NAME), tiktoken_oracle(NAME)


@pytest.mark.parametrize("text", BAD_TEXTS, ids=lambda t: type(t).__name__)
@pytest.mark.parametrize("method", ["encode", "encode_ordinary", "encode_to_numpy"])
def test_encode_refuses_non_str(pair, method, text):
    enc, oracle = pair
    with pytest.raises(TypeError):
        getattr(oracle, method)(text)
    with pytest.raises(TypeError, match=r"^text must be a str, not " + type(text).__name__):
        getattr(enc, method)(text)


def test_encode_batch_names_the_item(pair):
    enc, oracle = pair
    with pytest.raises(TypeError):
        oracle.encode_batch(["a", b"b"])
    for method in ("encode_batch", "encode_ordinary_batch"):
        with pytest.raises(TypeError, match=r"texts\[1\] \(batch item 1\) must be a str, not bytes"):
            getattr(enc, method)(["a", b"b"])
        with pytest.raises(TypeError, match=r"texts\[2\] \(batch item 2\) must be a str, not NoneType"):
            getattr(enc, method)(["a", "b", None])


@pytest.mark.parametrize("tokens,message", BAD_TOKENS, ids=[m for _, m in BAD_TOKENS])
@pytest.mark.parametrize("method", ["decode", "decode_bytes", "decode_tokens_bytes"])
def test_decode_refuses_non_int_ids(pair, method, tokens, message):
    enc, oracle = pair
    if tokens is range:
        tokens = iter([64, 65.5])
    else:  # (tiktoken takes no iterator)
        with pytest.raises(TypeError):
            getattr(oracle, method)(tokens)
    with pytest.raises(TypeError, match=message):
        getattr(enc, method)(tokens)


def test_decode_accepts_what_tiktoken_accepts(pair):
    enc, oracle = pair
    for tokens in ([True, 64], [np.int64(64), np.int32(65)], (64, 65), np.array([64, 65], np.uint16),
                   np.array([64, 65], np.uint64), []):
        assert enc.decode(tokens) == oracle.decode(list(map(int, tokens)))
    assert enc.decode(x for x in [64, 65]) == "ab"


@pytest.mark.parametrize("tokens", [np.array([2**63], np.uint64), np.array([64, 2**64 - 1], np.uint64),
                                    [2**63], [64, 2**64], [-(2**63) - 1]])
def test_ids_beyond_int64_are_reported_as_given(pair, tokens):
    enc, oracle = pair
    with pytest.raises((OverflowError, KeyError, ValueError)):
        oracle.decode(tokens)
    bad = next(int(t) for t in tokens if int(t) != 64)
    with pytest.raises(UnknownTokenError, match=f"Invalid token for decoding: {bad} "):
        enc.decode(tokens)


def test_decode_single_token_bytes(pair):
    enc, oracle = pair
    with pytest.raises(TypeError):
        oracle.decode_single_token_bytes(1.5)
    with pytest.raises(TypeError, match=r"token must be an int, not float"):
        enc.decode_single_token_bytes(1.5)
    assert enc.decode_single_token_bytes(np.int64(64)) == oracle.decode_single_token_bytes(64)


def test_encode_single_token_type(pair):
    enc, _ = pair
    with pytest.raises(TypeError, match="text_or_bytes must be a str or bytes, not int"):
        enc.encode_single_token(64)


@pytest.mark.parametrize("value", [1.5, "2", [2]])
def test_num_threads_must_be_an_int(pair, value):
    enc, _ = pair
    calls = [lambda: enc.encode_batch(["a"], num_threads=value),
             lambda: enc.encode_ordinary_batch(["a"], num_threads=value),
             lambda: enc.encode_arrow(pa.array(["a"]), num_threads=value),
             lambda: enc.count_arrow(pa.array(["a"]), num_threads=value),
             lambda: enc.decode_arrow(pa.array([[64]], pa.list_(pa.uint32())), num_threads=value)]
    for call in calls:
        with pytest.raises(TypeError, match=r"num_threads must be an int, not " + type(value).__name__):
            call()
    assert enc.encode_batch(["a"], num_threads=np.int64(1)) == [[64]]


def test_stream_encoder_feed_types(pair):
    enc, _ = pair
    se = enc.stream_encoder()
    with pytest.raises(TypeError, match=r"text must be a str, not NoneType"):
        se.feed(None)
    with pytest.raises(TypeError, match=r"text must be a str, not bytes \(use feed_bytes\(\)"):
        se.feed(b"x")
    with pytest.raises(TypeError, match=r"data must be bytes, not str \(use feed\(\) for str\)"):
        se.feed_bytes("x")
    with pytest.raises(TypeError, match=r"data must be bytes, not NoneType"):
        se.feed_bytes(None)
    # the refused calls left nothing behind
    ids = list(se.feed("hello")) + list(se.feed_bytes(memoryview(b" world"))) + list(se.finish())
    assert ids == enc.encode("hello world")


@pytest.mark.parametrize("value", [1.5, None, "5", [5]])
def test_stream_decoder_push_types(pair, value):
    enc, _ = pair
    dec = tltok_jit.StreamDecoder(enc)
    with pytest.raises(TypeError, match=r"token_id must be an int, not " + type(value).__name__):
        dec.push(value)
    assert dec.push(np.int64(64)) + dec.push(True) + dec.finish() == "a" + enc.decode([1])
    with pytest.raises(TypeError, match=r"ids\[0\] must be an int token id"):
        dec.push_many([1.5])


def _string_array(offsets, data: bytes, typ=pa.string(), odt=np.int32):
    return pa.Array.from_buffers(typ, len(offsets) - 1,
                                 [None, pa.py_buffer(np.array(offsets, odt).tobytes()), pa.py_buffer(data)])


def test_invalid_arrow_offsets_are_refused(pair):
    enc, _ = pair
    for typ, odt in ((pa.string(), np.int32), (pa.large_binary(), np.int64)):
        arr = _string_array([0, 5, 2], b"hello", typ, odt)  # pyarrow builds it; its full check refuses it
        with pytest.raises(pa.ArrowInvalid):
            arr.validate(full=True)
        for call in (enc.encode_arrow, enc.count_arrow):
            with pytest.raises(ValueError, match=r"invalid Arrow .* array: offsets decrease at row 1 \(5 then 2\)"):
                call(arr)
            with pytest.raises(ValueError, match=r"offsets decrease at row 1"):
                call(pa.chunked_array([pa.array(["ok"], typ), arr]))
            with pytest.raises(ValueError, match=r"offsets decrease at row 1"):
                call(pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), arr))


@pytest.mark.parametrize("offsets,message", [
    ([0, 5, 2], r"offsets decrease at row 1 \(5 then 2\)"),
    ([0, 3, 9], r"offsets run from 0 to 9, outside its data buffer of 5 items"),
    ([-1, 3, 5], r"offsets run from -1 to 5"),
])
def test_check_offsets(offsets, message):
    # pyarrow's own constructors refuse the last two; arrays imported through the C data interface
    # are not checked by it
    from tltok_jit.columns.arrow import check_offsets

    with pytest.raises(ValueError, match=r"invalid Arrow string array: .*" + message):
        check_offsets(np.array(offsets, np.int32), 5, "string")
    check_offsets(np.array([0, 2, 2, 5], np.int64), 5, "string")
    check_offsets(np.array([3], np.int64), 0, "string")  # no rows: nothing is read


def test_invalid_list_offsets_are_refused_by_decode_arrow(pair):
    enc, _ = pair
    values = pa.array([64, 65, 66], pa.uint32())
    arr = pa.ListArray.from_buffers(pa.list_(pa.uint32()), 2,
                                    [None, pa.py_buffer(np.array([0, 3, 1], np.int32).tobytes())],
                                    children=[values])
    with pytest.raises(ValueError, match=r"offsets decrease at row 1 \(3 then 1\)"):
        enc.decode_arrow(arr)


def test_invalid_string_view_is_refused(pair):
    enc, _ = pair
    if not hasattr(pa, "string_view"):
        pytest.skip("pyarrow without string_view")
    good = pa.array(["a string longer than twelve bytes"], pa.string_view())
    views = np.frombuffer(good.buffers()[1], dtype=np.int32).copy()
    views[3] = 1000  # the out-of-line string's offset, now past its data buffer
    bad = pa.Array.from_buffers(pa.string_view(), 1, [None, pa.py_buffer(views.tobytes()), good.buffers()[2]])
    with pytest.raises(ValueError, match=r"the view of row 0 points outside its data buffers"):
        enc.encode_arrow(bad)
    assert enc.encode_arrow(good).to_pylist() == [enc.encode(good[0].as_py())]


def test_hf_model_argument_types():
    from conftest import get_shared_path

    enc = tltok_jit.from_file(get_shared_path("tokenizers/qwen2.5/tokenizer.json"))
    with pytest.raises(TypeError, match="text must be a str, not bytes"):
        enc.encode(b"x")
    with pytest.raises(TypeError, match=r"tokens\[0\] must be an int token id, not float"):
        enc.decode([1.5])
    with pytest.raises(ValueError, match="offsets decrease at row 1"):
        enc.encode_arrow(_string_array([0, 5, 2], b"hello"))
