"""`Encoding.encode_batch_padded`: fixed-shape batches equal to HF tokenizers' padded, truncated
`encode_batch` (every shared tokenizer.json), to tiktoken's ids cut and padded by the reference below
(rank files), and to that reference on random ragged rows (hypothesis); the arrays reach torch
through DLPack without a copy; every bad argument is refused by name."""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.padding import PaddedBatch, PaddingError, pad_rows, windows

from conftest import get_shared_path

tokenizers = pytest.importorskip("tokenizers")

HF_FILES = ["gpt2", "smollm2", "llama3", "qwen2.5", "mistral-nemo", "mistral-7b"]
# a variant of mistral-7b whose template also has a suffix ("<s> $A </s>"), written to a temporary folder
EOS_VARIANT = "mistral-7b+eos"


# ------------------------------------------------------------------------------------------------
# the reference: HF's rules, written out from its Rust source
# ------------------------------------------------------------------------------------------------

def hf_truncate(ids: list[int], max_len: int, stride: int, direction: str) -> list[list[int]]:
    """`Encoding::truncate`: [the kept window, *the overflowing windows]."""
    n = len(ids)
    if max_len >= n:
        return [list(ids)]
    assert 0 < max_len and stride < max_len
    offset = max_len - stride
    parts = []
    if direction == "right":
        for start in range(0, n, offset):
            stop = min(start + max_len, n)
            parts.append(ids[start:stop])
            if stop == n:
                break
    else:
        for s in range(n - 1, -1, -offset):
            stop = s + 1
            start = max(stop - max_len, 0)
            parts.append(ids[start:stop])
            if start == 0:
                break
    return parts


def reference(rows, prefix=(), suffix=(), *, max_length=None, padding="longest", pad_to_multiple_of=None,
              padding_side="right", pad_id=None, truncation=False, truncation_side="right", stride=0,
              return_overflowing_tokens=False, **_):
    """(ids rows, mask rows, sample per row) as HF's encode_batch + transformers' flattening gives them
    (rows may be ragged: HF keeps a row longer than the padding target)."""
    prefix, suffix = list(prefix), list(suffix)
    encs = []
    for ids in rows:
        parts = [list(ids)]
        if truncation:
            parts = hf_truncate(list(ids), max_length - len(prefix) - len(suffix), stride, truncation_side)
        encs.append([prefix + p + suffix for p in parts])
    target = None
    if padding != "do_not_pad":
        target = max_length if padding == "max_length" else max((len(e[0]) for e in encs), default=0)
        if pad_to_multiple_of and target % pad_to_multiple_of:
            target += pad_to_multiple_of - target % pad_to_multiple_of
    out_ids, out_mask, sample = [], [], []
    for i, e in enumerate(encs):
        for p in (e if return_overflowing_tokens else e[:1]):
            k = max(0, target - len(p)) if target is not None else 0
            pad = [pad_id] * k
            ids = pad + p if padding_side == "left" else p + pad
            mask = [0] * k + [1] * len(p) if padding_side == "left" else [1] * len(p) + [0] * k
            out_ids.append(ids)
            out_mask.append(mask)
            sample.append(i)
    return out_ids, out_mask, sample


def assert_batch(b: PaddedBatch, ids, mask, sample, *, overflow: bool, dtype=np.int64, label=""):
    assert isinstance(b, PaddedBatch)
    width = len(ids[0]) if ids else b.input_ids.shape[1]
    assert b.input_ids.shape == (len(ids), width), label
    for a in (b.input_ids, b.attention_mask, b.lengths):
        assert a.dtype == dtype and a.flags.c_contiguous, label
    assert b.input_ids.tolist() == ids, label
    assert b.attention_mask.tolist() == mask, label
    assert b.lengths.tolist() == [sum(m) for m in mask], label
    if overflow:
        assert b.overflow_to_sample_mapping.dtype == dtype
        assert b.overflow_to_sample_mapping.tolist() == sample, label
    else:
        assert b.overflow_to_sample_mapping is None and sample == list(range(len(sample))), label
    assert b.token_type_ids is None


def check_against(expected, call, options: dict, label: str):
    """Our call equals the expected rows, or raises a PaddingError where HF keeps a row longer than
    the padding target (`max_length`, rounded up) or 'do_not_pad' leaves rows of several lengths."""
    ids, mask, sample = expected
    target = None
    if options.get("padding") == "max_length":
        target, m = options["max_length"], options.get("pad_to_multiple_of")
        target += (m - target % m) if m and target % m else 0
    if len({len(r) for r in ids}) > 1 or (target is not None and any(len(r) > target for r in ids)):
        with pytest.raises(PaddingError) as e:
            call(**options)
        assert e.value.argument in ("max_length", "padding"), label
        assert e.value.row is not None and str(e.value.row) in str(e.value), label
        return
    assert_batch(call(**options), ids, mask, sample, overflow=options.get("return_overflowing_tokens", False),
                 dtype=np.dtype(options.get("dtype", "int64")).type, label=label)


# ------------------------------------------------------------------------------------------------
# Hugging Face tokenizers, every shared tokenizer.json
# ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _eos_variant_path() -> str:
    import tempfile

    src = get_shared_path("tokenizers/mistral-7b/tokenizer.json")
    d = json.loads(src.read_text(encoding="utf-8"))
    pp = d["post_processor"]
    pp["single"] = pp["single"] + [{"SpecialToken": {"id": "</s>", "type_id": 0}}]
    pp["special_tokens"]["</s>"] = {"id": "</s>", "ids": [2], "tokens": ["</s>"]}
    folder = tempfile.mkdtemp(prefix="tltok-padding-")
    path = f"{folder}/tokenizer.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(d, f)
    return path


def _path(name: str) -> str:
    if name == EOS_VARIANT:
        return _eos_variant_path()
    return str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))  # skips, naming the path, when absent


@functools.lru_cache(maxsize=None)
def _pair(name: str):
    path = _path(name)
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


def pair(name: str):
    _path(name)
    return _pair(name)


@functools.lru_cache(maxsize=None)
def hf_plain(name: str):
    """The file without its post-processor: the same ids as add_special_tokens=False, and a truncation
    budget of the whole max_length (HF checks `stride` against max_length minus the template's ids
    even when a call adds none)."""
    d = json.loads(open(_path(name), encoding="utf-8").read())
    d["post_processor"] = None
    return tokenizers.Tokenizer.from_str(json.dumps(d))


def hf_for(name: str, add_special_tokens: bool):
    return pair(name)[1] if add_special_tokens else hf_plain(name)


def _special(hf) -> str:
    """The first special added token of the file."""
    return next(t.content for _, t in sorted(hf.get_added_tokens_decoder().items()) if t.special)


def _texts(hf) -> list[str]:
    sp = _special(hf)
    long = ("It was in July, 1805, and the speaker was the well-known Anna Pávlovna Schérer, maid of honor "
            "and favorite of the Empress Márya Fëdorovna. With these words she greeted Prince Vasíli Kurágin, "
            "a man of high rank and importance, who was the first to arrive at her reception. 1234567 日本語 😀 ")
    return ["", "Hello world", f"The cut {sp} lands here, then more text follows {sp}{sp} end.", f"{sp}start",
            "café 日本語 😀 naïve", long, "   \n\t  ", "1234567890 3.14159", long * 3 + sp]


def hf_rows(hf, texts, *, add_special_tokens: bool, max_length=None, padding="longest", pad_to_multiple_of=None,
            padding_side="right", pad_id=None, truncation=False, truncation_side="right", stride=0,
            return_overflowing_tokens=False, **_):
    """HF tokenizers' encode_batch with these settings, flattened as transformers flattens overflows."""
    hf.no_truncation()
    hf.no_padding()
    try:
        if truncation:
            hf.enable_truncation(max_length, stride=stride, strategy="longest_first", direction=truncation_side)
        if padding != "do_not_pad":
            hf.enable_padding(direction=padding_side, pad_id=pad_id if pad_id is not None else 0,
                              pad_to_multiple_of=pad_to_multiple_of,
                              length=max_length if padding == "max_length" else None)
        encs = hf.encode_batch(texts, add_special_tokens=add_special_tokens)
    finally:
        hf.no_truncation()
        hf.no_padding()
    ids, mask, sample = [], [], []
    for i, e in enumerate(encs):
        for x in [e, *(e.overflowing if return_overflowing_tokens else [])]:
            ids.append(list(x.ids))
            mask.append(list(x.attention_mask))
            sample.append(i)
    return ids, mask, sample


def _hf_option_grid(raw_lengths: list[int], n_added: int, special_cuts: list[int]):
    """Truncating settings around the boundaries: a row of exactly max_length ids, one more, one less,
    a cut right before or after a special token, the smallest budget; strides 0, 1, half and budget - 1."""
    mid = sorted(raw_lengths)[len(raw_lengths) // 2]
    budgets = {1, 2, mid - 1, mid, mid + 1, max(raw_lengths) - 1, *special_cuts}
    for budget in sorted(b for b in budgets if b >= 1):
        for stride in sorted({0, 1, budget // 2, budget - 1}):
            if stride >= budget:
                continue
            for overflow in (False, True):
                for multiple in (None, 8):
                    for padding in ("longest", "max_length"):
                        yield dict(max_length=budget + n_added, truncation=True, stride=stride,
                                   return_overflowing_tokens=overflow, pad_to_multiple_of=multiple, padding=padding)


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("truncation_side", ["right", "left"])
@pytest.mark.parametrize("add_special_tokens", [False, True])
@pytest.mark.parametrize("name", HF_FILES + [EOS_VARIANT])
def test_truncated_and_padded_equal_hf(name, add_special_tokens, truncation_side, padding_side):
    enc, hf = pair(name)
    texts = _texts(hf)
    sp_id = hf.token_to_id(_special(hf))
    hf = hf_for(name, add_special_tokens)
    raw = [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert [enc.encode(t, allowed_special="all") for t in texts] == raw
    n_added = len(hf.encode("", add_special_tokens=True).ids) if add_special_tokens else 0
    # budgets that cut right before and right after the special token in the middle of texts[2]
    at = raw[2].index(sp_id)
    cuts = [at, at + 1, len(raw[2]) - at, len(raw[2]) - at - 1]
    pad_id = enc.n_vocab - 1
    call = functools.partial(enc.encode_batch_padded, texts, add_special_tokens=add_special_tokens,
                             allowed_special="all", pad_id=pad_id, padding_side=padding_side,
                             truncation_side=truncation_side)
    n = 0
    for opts in _hf_option_grid([len(r) for r in raw], n_added, cuts):
        label = f"{name} add_special_tokens={add_special_tokens} {opts}"
        expected = hf_rows(hf, texts, add_special_tokens=add_special_tokens, pad_id=pad_id, padding_side=padding_side,
                           truncation_side=truncation_side, **opts)
        check_against(expected, call, opts, label)
        n += 1
    assert n > 100
    # without truncation: the longest row; a fixed length that holds every row; one that does not
    longest = max(len(r) for r in raw) + n_added
    for opts in (dict(), dict(pad_to_multiple_of=64), dict(padding="max_length", max_length=longest + 3),
                 dict(padding="max_length", max_length=longest - 1)):
        expected = hf_rows(hf, texts, add_special_tokens=add_special_tokens, pad_id=pad_id, padding_side=padding_side,
                           **opts)
        check_against(expected, call, opts, f"{name} {opts}")


@pytest.mark.parametrize("name", HF_FILES)
def test_do_not_pad_equals_hf_when_rows_agree(name):
    enc, hf = pair(name)
    texts = _texts(hf)
    long = [texts[2], texts[5], texts[8]]  # each longer than 6 ids
    for opts in (dict(max_length=4, truncation=True), dict(max_length=6, truncation=True, truncation_side="left")):
        for add in (False, True):
            expected = hf_rows(hf_for(name, add), long, add_special_tokens=add, padding="do_not_pad", **opts)
            assert len({len(r) for r in expected[0]}) == 1
            b = enc.encode_batch_padded(long, padding="do_not_pad", add_special_tokens=add,
                                        allowed_special="all", **opts)
            assert_batch(b, *expected, overflow=False)
    expected = hf_rows(hf, texts, add_special_tokens=False, padding="do_not_pad")
    with pytest.raises(PaddingError, match="padding") as e:
        enc.encode_batch_padded(texts, padding="do_not_pad", allowed_special="all")
    assert e.value.argument == "padding" and e.value.row is not None
    assert len({len(r) for r in expected[0]}) > 1  # HF leaves them ragged


def test_template_ids_come_from_the_file():
    """add_special_tokens=True puts the file's template around every window (mistral-7b: <s>; the
    variant: <s> ... </s>)."""
    enc, hf = pair(EOS_VARIANT)
    b = enc.encode_batch_padded(["hello world, this is long enough"], add_special_tokens=True, max_length=4,
                                truncation=True, return_overflowing_tokens=True, pad_id=0)
    assert (b.input_ids[:, 0] == 1).all()
    assert ((b.input_ids == 2) == (np.arange(4) == b.lengths[:, None] - 1)).all()
    assert len(b) > 2


# ------------------------------------------------------------------------------------------------
# tiktoken encodings: tiktoken's ids through the reference
# ------------------------------------------------------------------------------------------------

TIKTOKEN_TEXTS = ["", "hello world", "Hello <|endoftext|> world <|endoftext|>", "<|endoftext|>",
                  "The quick brown fox jumps over the lazy dog. " * 7, "日本語のテキスト 😀 " * 3, "  \n\n  x"]


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_tiktoken_ids_cut_and_padded(name, tiktoken_oracle, ours):
    oracle, enc = tiktoken_oracle(name), ours(name)
    rows = [oracle.encode(t, allowed_special="all") for t in TIKTOKEN_TEXTS]
    lengths = sorted(len(r) for r in rows)
    pad_id = oracle.eot_token
    n = 0
    for max_length in (1, 2, lengths[3], lengths[3] + 1, lengths[-1] - 1, lengths[-1]):
        for stride in {0, max_length // 2, max_length - 1}:
            for side in ("right", "left"):
                for overflow in (False, True):
                    for padding in ("longest", "max_length"):
                        opts = dict(max_length=max_length, truncation=True, stride=stride, truncation_side=side,
                                    padding_side="left" if overflow else "right", pad_id=pad_id, padding=padding,
                                    return_overflowing_tokens=overflow, pad_to_multiple_of=3 if stride else None)
                        for add in (False, True):  # a rank file has no template: add_special_tokens adds nothing
                            check_against(reference(rows, **opts),
                                          functools.partial(enc.encode_batch_padded, TIKTOKEN_TEXTS,
                                                            allowed_special="all", add_special_tokens=add),
                                          opts, f"{name} {opts}")
                            n += 1
    assert n > 200
    plain = [oracle.encode_ordinary(t) for t in TIKTOKEN_TEXTS[:2]]
    b = enc.encode_batch_padded(TIKTOKEN_TEXTS[:2], pad_id=pad_id, dtype="int32")
    assert_batch(b, *reference(plain, pad_id=pad_id), overflow=False, dtype=np.int32)


def test_tiktoken_special_policy_applies(ours):
    enc = ours("o200k_base")
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode_batch_padded(["a", "<|endoftext|>"], pad_id=0)
    b = enc.encode_batch_padded(["a", "<|endoftext|>"], pad_id=0, disallowed_special=())
    assert b.lengths.tolist() == [1, 7]


# ------------------------------------------------------------------------------------------------
# the kernel and the window arithmetic against the reference
# ------------------------------------------------------------------------------------------------

@st.composite
def ragged_case(draw):
    rows = draw(st.lists(st.lists(st.integers(0, 999), max_size=40), max_size=12))
    prefix = draw(st.lists(st.integers(1000, 1009), max_size=3))
    suffix = draw(st.lists(st.integers(1010, 1019), max_size=3))
    n_added = len(prefix) + len(suffix)
    truncation = draw(st.booleans())
    opts = dict(padding=draw(st.sampled_from(["longest", "max_length", "do_not_pad"])),
                padding_side=draw(st.sampled_from(["left", "right"])), pad_id=1023,
                dtype=draw(st.sampled_from(["int64", "int32"])))
    if truncation:
        budget = draw(st.integers(1, 45))
        opts.update(truncation=True, max_length=budget + n_added, stride=draw(st.integers(0, budget - 1)),
                    truncation_side=draw(st.sampled_from(["left", "right"])),
                    return_overflowing_tokens=draw(st.booleans()))
    elif opts["padding"] == "max_length":
        opts["max_length"] = draw(st.integers(1, 50))
    if opts["padding"] != "do_not_pad":
        opts["pad_to_multiple_of"] = draw(st.sampled_from([None, 1, 4, 7]))
    return rows, prefix, suffix, opts


@settings(max_examples=400, deadline=None)
@given(ragged_case())
def test_kernel_matches_reference(case):
    rows, prefix, suffix, opts = case
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    values = np.array([i for r in rows for i in r], dtype=np.uint32)
    check_against(reference(rows, prefix, suffix, **opts),
                  functools.partial(pad_rows, values, offsets, prefix, suffix, n_vocab=1024), opts, str(case))


@pytest.mark.parametrize("left", [False, True])
def test_windows_cover_every_id(left):
    """The windows of a long row start every budget - stride ids and together cover it."""
    counts = np.array([0, 5, 6, 7, 100], dtype=np.int64)
    sample, start, stop = windows(counts, 6, 2, left, True)
    assert sample.tolist()[:4] == [0, 1, 2, 3]
    for r, n in enumerate(counts.tolist()):
        w = [(a, b) for s, a, b in zip(sample.tolist(), start.tolist(), stop.tolist()) if s == r]
        assert [list(range(n))[a:b] for a, b in w] == hf_truncate(list(range(n)), 6, 2,
                                                                   "left" if left else "right")


def test_parallel_fill_equals_serial():
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 900, 3000)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    values = rng.integers(0, 50_000, int(offsets[-1])).astype(np.uint32)
    one = pad_rows(values, offsets, [7], [8], n_vocab=50_000, pad_id=3, num_threads=1)
    assert one.input_ids.size > 1 << 21  # large enough to be split over the threads
    two = pad_rows(values, offsets, [7], [8], n_vocab=50_000, pad_id=3, num_threads=2)
    for a in ("input_ids", "attention_mask", "lengths"):
        assert np.array_equal(getattr(one, a), getattr(two, a))
    assert one.lengths.tolist() == (lens + 2).tolist()


# ------------------------------------------------------------------------------------------------
# inputs: lists, Arrow columns, pandas
# ------------------------------------------------------------------------------------------------

COLUMN_TEXTS = ["hello world", "", "naïve café 日本", "a b c d e f g h i j k", "x"]


def _same(a: PaddedBatch, b: PaddedBatch):
    for f in ("input_ids", "attention_mask", "lengths", "overflow_to_sample_mapping"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or (x.dtype == y.dtype and np.array_equal(x, y)), f


def test_arrow_and_pandas_inputs_equal_the_list(ours):
    pa = pytest.importorskip("pyarrow")
    enc = ours("o200k_base")
    opts = dict(pad_id=0, max_length=3, truncation=True, return_overflowing_tokens=True, stride=1)
    want = enc.encode_batch_padded(COLUMN_TEXTS, **opts)
    assert len(want) > len(COLUMN_TEXTS)
    columns = [pa.array(COLUMN_TEXTS), pa.array(COLUMN_TEXTS, pa.large_string()),
               pa.chunked_array([COLUMN_TEXTS[:2], [], COLUMN_TEXTS[2:]]),
               pa.array(["zzz"] + COLUMN_TEXTS)[1:], tuple(COLUMN_TEXTS), iter(COLUMN_TEXTS)]
    if hasattr(pa, "string_view"):
        columns.append(pa.array(COLUMN_TEXTS, pa.string_view()))
    pd = pytest.importorskip("pandas")
    columns += [pd.Series(COLUMN_TEXTS), pd.Series(COLUMN_TEXTS, dtype="string"),
                pd.Series(COLUMN_TEXTS, index=[9, 8, 7, 6, 5])]
    for col in columns:
        _same(enc.encode_batch_padded(col, **opts), want)
    empty = enc.encode_batch_padded(pa.array([], pa.string()), pad_id=0)
    assert empty.input_ids.shape == (0, 0)
    assert enc.encode_batch_padded([], pad_id=0, padding="max_length", max_length=5).input_ids.shape == (0, 5)


def test_tokenizer_json_arrow_input():
    """A tokenizer.json model with a template reads Arrow rows through its own pipeline."""
    pa = pytest.importorskip("pyarrow")
    enc, _ = pair("mistral-7b")
    opts = dict(pad_id=0, add_special_tokens=True, max_length=4, truncation=True, return_overflowing_tokens=True)
    _same(enc.encode_batch_padded(pa.chunked_array([COLUMN_TEXTS[:3], COLUMN_TEXTS[3:]]), **opts),
          enc.encode_batch_padded(COLUMN_TEXTS, **opts))


def test_null_rows_are_named(ours):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    enc = ours("o200k_base")
    cases = [(["a", "b", None], 2), (["a", float("nan")], 1), (pa.array(["a", None, "b"]), 1), (pa.chunked_array([["a", "b"], ["c", None]]), 3),
             (pd.Series(["a", None]), 1), (pd.Series(["a", "b", float("nan")]), 2),
             (pd.Series(["a", None], dtype="string"), 1)]
    for texts, row in cases:
        with pytest.raises(PaddingError, match=f"row {row} is null|texts\\[{row}\\] is (None|nan), a missing row") as e:
            enc.encode_batch_padded(texts, pad_id=0)
        assert (e.value.argument, e.value.row) == ("texts", row)
        assert isinstance(e.value, tltok_jit.TltokError) and isinstance(e.value, ValueError)


# ------------------------------------------------------------------------------------------------
# DLPack, imports, threads
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_dlpack_shares_memory_with_torch(dtype, ours):
    torch = pytest.importorskip("torch")
    enc = ours("o200k_base")
    b = enc.encode_batch_padded(["hello world", "hi"], pad_id=199999, dtype=dtype)
    t = torch.from_dlpack(b.input_ids)
    m = torch.from_dlpack(b.attention_mask)
    assert t.dtype == getattr(torch, dtype) and tuple(t.shape) == b.input_ids.shape and t.is_contiguous()
    assert t.data_ptr() == b.input_ids.ctypes.data and m.data_ptr() == b.attention_mask.ctypes.data
    t[1, 1] = 7
    assert b.input_ids[1, 1] == 7
    assert torch.from_dlpack(b.lengths).tolist() == [2, 1]
    again = pickle.loads(pickle.dumps(b))  # as a DataLoader worker hands a batch over
    assert again.input_ids.tolist() == b.input_ids.tolist() and again.input_ids.dtype == b.input_ids.dtype


def test_import_never_loads_torch():
    code = ("import sys, tltok_jit, tltok_jit.padding; enc = tltok_jit.get_encoding('o200k_base'); "
            "enc.encode_batch_padded(['a b', 'c'], pad_id=0); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "TLTOK_OFFLINE": "1"})


def test_options_are_per_call_under_threads(ours):
    enc = ours("o200k_base")
    texts = ["hello world " * (i % 7) for i in range(200)]
    settings_ = [dict(pad_id=1, padding_side="left"), dict(pad_id=2, max_length=3, truncation=True),
                 dict(pad_id=3, padding="max_length", max_length=30, truncation=True, truncation_side="left",
                      return_overflowing_tokens=True, stride=1, dtype="int32")]
    serial = [enc.encode_batch_padded(texts, num_threads=1, **s) for s in settings_]
    errors = []

    def run(k):
        try:
            for _ in range(20):
                _same(enc.encode_batch_padded(texts, num_threads=1, **settings_[k]), serial[k])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert serial[0].input_ids.shape[1] != serial[1].input_ids.shape[1] != serial[2].input_ids.shape[1]


# ------------------------------------------------------------------------------------------------
# bad input: each error names its argument
# ------------------------------------------------------------------------------------------------

BAD = [
    (dict(), "pad_id"),  # rows of two lengths, no pad_id
    (dict(pad_id=-1), "pad_id"),
    (dict(pad_id=200019), "pad_id"),
    (dict(pad_id=0, padding="max"), "padding"),
    (dict(pad_id=0, padding_side="top"), "padding_side"),
    (dict(pad_id=0, truncation=True, max_length=2, truncation_side="middle"), "truncation_side"),
    (dict(pad_id=0, dtype="float32"), "dtype"),
    (dict(pad_id=0, dtype="int16"), "dtype"),
    (dict(pad_id=0, padding="max_length"), "max_length"),
    (dict(pad_id=0, truncation=True), "max_length"),
    (dict(pad_id=0, truncation=True, max_length=0), "max_length"),
    (dict(pad_id=0, truncation=True, max_length=3, stride=3), "stride"),
    (dict(pad_id=0, truncation=True, max_length=3, stride=5), "stride"),
    (dict(pad_id=0, stride=1), "stride"),
    (dict(pad_id=0, max_length=8), "max_length"),
    (dict(pad_id=0, pad_to_multiple_of=0), "pad_to_multiple_of"),
    (dict(pad_id=0, padding="do_not_pad", pad_to_multiple_of=8), "pad_to_multiple_of"),
    (dict(pad_id=0, padding="max_length", max_length=2), "max_length"),  # a row of 3 ids, not cut
    (dict(pad_id=0, padding="do_not_pad"), "padding"),
    (dict(pad_id=0, truncation="yes", max_length=3), "truncation"),
    (dict(pad_id=0, truncation="only_second", max_length=3), "truncation"),  # needs pairs
    (dict(pad_id=0, pad_type_id=-1), "pad_type_id"),
]


@pytest.mark.parametrize("kwargs,argument", BAD, ids=[f"{a}-{i}" for i, (_, a) in enumerate(BAD)])
def test_bad_arguments_are_named(kwargs, argument, ours):
    enc = ours("o200k_base")
    with pytest.raises(PaddingError) as e:
        enc.encode_batch_padded(["hello world there", "hi"], **kwargs)
    assert e.value.argument == argument
    assert argument in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, tltok_jit.TltokError)


def test_template_budget_errors_name_max_length_and_stride():
    enc, _ = pair("mistral-7b")  # one id added: max_length 1 leaves no text
    with pytest.raises(PaddingError, match="max_length") as e:
        enc.encode_batch_padded(["hi"], add_special_tokens=True, truncation=True, max_length=1, pad_id=0)
    assert e.value.argument == "max_length"
    enc.encode_batch_padded(["hi"], add_special_tokens=False, truncation=True, max_length=1, pad_id=0)
    with pytest.raises(PaddingError, match="stride") as e:
        enc.encode_batch_padded(["hi"], add_special_tokens=True, truncation=True, max_length=4, stride=3, pad_id=0)
    assert e.value.argument == "stride"


@pytest.mark.parametrize("kwargs,argument", [
    (dict(max_length="8", truncation=True), "max_length"), (dict(pad_id=1.5), "pad_id"),
    (dict(truncation=1.5, max_length=3), "truncation"), (dict(stride="1", truncation=True, max_length=3), "stride"),
    (dict(add_special_tokens=1), "add_special_tokens"), (dict(num_threads="2"), "num_threads"),
    (dict(return_overflowing_tokens=None), "return_overflowing_tokens"),
])
def test_wrong_types_are_named(kwargs, argument, ours):
    enc = ours("o200k_base")
    with pytest.raises(TypeError, match=argument):
        enc.encode_batch_padded(["a"], **kwargs)


def test_texts_must_be_rows(ours):
    enc = ours("o200k_base")
    with pytest.raises(TypeError, match="texts"):
        enc.encode_batch_padded("hello", pad_id=0)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        enc.encode_batch_padded(["a", 5], pad_id=0)
    pa = pytest.importorskip("pyarrow")
    with pytest.raises(TypeError, match="texts"):
        enc.encode_batch_padded(pa.array([1, 2]), pad_id=0)


def test_no_padding_needed_needs_no_pad_id(ours):
    enc = ours("o200k_base")
    b = enc.encode_batch_padded(["hello world", "hello there"])
    assert b.attention_mask.all() and b.input_ids.shape == (2, 2)


# ------------------------------------------------------------------------------------------------
# encode_arrow(max_length=..., truncation_side=...)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["right", "left"])
def test_encode_arrow_truncates_rows(side, ours):
    pa = pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")
    enc = ours("o200k_base")
    texts = ["hello world there friend", None, "", "a", "naïve café 日本 " * 5]
    full = enc.encode_arrow(pa.array(texts)).to_pylist()

    def cut(rows, m):
        return [None if r is None else (r[:m] if side == "right" else r[len(r) - min(m, len(r)):]) for r in rows]

    for m in (1, 2, 3, 40):
        for large in (None, True):
            got = enc.encode_arrow(pa.array(texts), max_length=m, truncation_side=side, large_list=large)
            assert got.to_pylist() == cut(full, m)
            assert pa.types.is_large_list(got.type) == bool(large)
        chunked = enc.encode_arrow(pa.chunked_array([texts[:2], [], texts[2:]]), max_length=m, truncation_side=side)
        assert chunked.num_chunks == 3 and chunked.to_pylist() == cut(full, m)
        assert enc.encode_arrow(pa.array(texts)[1:], max_length=m, truncation_side=side).to_pylist() == cut(full, m)[1:]
        assert enc.encode_arrow(pd.Series(texts), max_length=m, truncation_side=side).tolist() == cut(full, m)
    same = enc.encode_arrow(pa.array(["a", "b c"]))
    assert enc.encode_arrow(pa.array(["a", "b c"]), max_length=2).equals(same)


@pytest.mark.parametrize("kwargs,argument", [(dict(max_length=0), "max_length"),
                                             (dict(truncation_side="left"), "max_length"),
                                             (dict(max_length=3, truncation_side="up"), "truncation_side")])
def test_encode_arrow_truncation_errors(kwargs, argument, ours):
    pa = pytest.importorskip("pyarrow")
    enc = ours("o200k_base")
    with pytest.raises(PaddingError, match=argument) as e:
        enc.encode_arrow(pa.array(["a b"]), **kwargs)
    assert e.value.argument == argument


# ------------------------------------------------------------------------------------------------
# recycled batch memory
# ------------------------------------------------------------------------------------------------

def _arena_batch(enc, k: int = 0):
    texts = [f"row {k} " + "hello world " * (i % 50) for i in range(300)]  # ~0.5 MB of arrays: recycled
    return enc.encode_batch_padded(texts, pad_id=0, num_threads=1)


@pytest.mark.parametrize("keep", ["batch", "input_ids view", "attention_mask", "torch tensor"])
def test_memory_a_batch_still_uses_is_never_handed_out(keep, ours):
    import tltok_jit.padding as padding
    from tltok_jit.engine import arenas

    if not arenas.RECYCLE:
        pytest.skip("no recycling on a free-threaded build")
    enc = ours("o200k_base")
    first = _arena_batch(enc, 1)
    want_ids, want_mask = first.input_ids.copy(), first.attention_mask.copy()
    assert any(np.shares_memory(first.input_ids, a) for a in padding.BATCH_ARENAS.kept)
    if keep == "batch":
        held, check = first, lambda: (first.input_ids, first.attention_mask)
    elif keep == "input_ids view":
        held = first.input_ids[1:]
        check = lambda: (np.concatenate([want_ids[:1], held]), want_mask)  # noqa: E731
    elif keep == "attention_mask":
        held = first.attention_mask
        check = lambda: (want_ids, held)  # noqa: E731
    else:
        torch = pytest.importorskip("torch")
        held = torch.from_dlpack(first.input_ids)
        check = lambda: (held.numpy(), want_mask)  # noqa: E731
    if keep != "batch":
        del first
    others = [_arena_batch(enc, k) for k in range(2, 8)]  # more batches than arenas are kept
    ids, mask = check()
    assert np.array_equal(ids, want_ids) and np.array_equal(mask, want_mask)
    for o in others:
        assert not np.shares_memory(o.input_ids, np.asarray(ids)) and not np.shares_memory(o.attention_mask, mask)


def test_memory_of_a_dropped_batch_is_reused(ours, monkeypatch):
    import tltok_jit.padding as padding
    from tltok_jit.engine import arenas

    if not arenas.RECYCLE:
        pytest.skip("no recycling on a free-threaded build")
    monkeypatch.setattr(padding.BATCH_ARENAS, "kept", [])
    kept = padding.BATCH_ARENAS.kept
    enc = ours("o200k_base")
    b = _arena_batch(enc)
    assert len(kept) == 1
    first = kept[0].ctypes.data  # (a reference held here would keep the arena in use)
    del b
    for k in range(5):
        b = _arena_batch(enc, k)
        assert kept[0].ctypes.data == first
        assert np.shares_memory(b.input_ids, kept[0]) and np.shares_memory(b.attention_mask, kept[0])
        del b
    assert len(kept) == 1
    held = [_arena_batch(enc, k) for k in range(6)]  # all in use: new arenas, at most `keep` kept
    assert len(kept) == padding.BATCH_ARENAS.keep
    assert len({b.input_ids.ctypes.data for b in held}) == 6
