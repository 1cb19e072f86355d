"""tltok_jit.packing: the kernels against a pure-Python reference of each strategy, the properties
every packing keeps, the input kinds, the errors, and the writers read back by their consumers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tltok_jit.packing import PackingError, pack, packed_table, torchtune_fields, write_parquet

# ------------------------------------------------------------------ the reference


def ref_documents(docs, bos, eos):
    return [([bos] if bos is not None else []) + list(d) + ([eos] if eos is not None else []) for d in docs]


def ref_pieces(eff, seq_len, split):
    """[(doc, start, length)] in document order, and (split, dropped, empty) counts."""
    pieces, n_split, n_dropped, n_empty = [], 0, 0, 0
    for d, e in enumerate(eff):
        if not e:
            n_empty += 1
        elif len(e) <= seq_len:
            pieces.append((d, 0, len(e)))
        elif split:
            n_split += 1
            pieces += [(d, s, min(seq_len, len(e) - s)) for s in range(0, len(e), seq_len)]
        else:
            n_dropped += 1
    return pieces, (n_split, n_dropped, n_empty)


def ref_bfd(eff, seq_len, split):
    pieces, counts = ref_pieces(eff, seq_len, split)
    rows, room = [], []
    for p in sorted(pieces, key=lambda p: -p[2]):  # sorted() is stable
        fits = [r for r in range(len(rows)) if room[r] >= p[2]]
        if fits:
            r = min(fits, key=lambda r: (room[r], r))
        else:
            r = len(rows)
            rows.append([])
            room.append(seq_len)
        rows[r].append(p)
        room[r] -= p[2]
    return rows, counts


def ref_pad(eff, seq_len, split):
    pieces, counts = ref_pieces(eff, seq_len, split)
    return [[p] for p in pieces], counts


def ref_concat(eff, seq_len, split):
    rows, cur, col = [], [], 0
    n_split = n_dropped = n_empty = 0
    for d, e in enumerate(eff):
        if not e:
            n_empty += 1
            continue
        if len(e) > seq_len and not split:
            n_dropped += 1
            continue
        s, parts = 0, 0
        while s < len(e):
            n = min(len(e) - s, seq_len - col)
            cur.append((d, s, n))
            parts += 1
            s += n
            col += n
            if col == seq_len:
                rows.append(cur)
                cur, col = [], 0
        n_split += parts > 1
    if cur:
        rows.append(cur)
    return rows, (n_split, n_dropped, n_empty)


REFERENCE = {"bfd": ref_bfd, "concat": ref_concat, "pad": ref_pad}


def ref_pack(docs, seq_len, strategy, bos=None, eos=None, split=True, pad_id=0):
    eff = ref_documents(docs, bos, eos)
    rows, counts = REFERENCE[strategy](eff, seq_len, split)
    out = {k: [] for k in ("input_ids", "position_ids", "labels", "seq_lens")}
    for row in rows:
        ids, pos, lab, lens = [], [], [], []
        for d, s, n in row:
            seg = eff[d][s:s + n]
            ids += seg
            pos += list(range(n))
            lab += [-100] + seg[1:]
            lens.append(n)
        rest = seq_len - len(ids)
        ids += [pad_id] * rest
        pos += list(range(rest))
        lab += [-100] * rest
        if rest:
            lens.append(rest)
        for k, v in zip(("input_ids", "position_ids", "labels", "seq_lens"), (ids, pos, lab, lens)):
            out[k].append(v)
    out["doc_index"] = [list(p) for row in rows for p in row]
    out["counts"] = counts
    return out


# ------------------------------------------------------------------ checks


def check_against_reference(docs, seq_len, strategy, bos=None, eos=None, split=True, pad_id=0, ids=None):
    b = pack(docs if ids is None else ids, seq_len, strategy=strategy, bos_id=bos, eos_id=eos,
             long_documents="split" if split else "drop", pad_id=pad_id)
    ref = ref_pack(docs, seq_len, strategy, bos, eos, split, pad_id)
    assert b.input_ids.tolist() == ref["input_ids"]
    assert b.position_ids.tolist() == ref["position_ids"]
    assert b.labels.tolist() == ref["labels"]
    assert [[x for x in r if x] for r in b.seq_lens.tolist()] == ref["seq_lens"]
    assert b.doc_index.tolist() == ref["doc_index"]
    assert (b.split, b.dropped, b.empty) == ref["counts"]
    assert b.documents == len(docs)
    return b


def check_properties(b, docs, seq_len, bos=None, eos=None, split=True):
    """Every id of every document once, in order; boundaries, positions, labels, fill, cu_seqlens."""
    eff = ref_documents(docs, bos, eos)
    n_rows = len(b)
    assert b.input_ids.shape == (n_rows, seq_len)
    flat = b.input_ids.reshape(-1)
    # where each segment sits: its row, and its column from the row's earlier segments
    seen = {}
    for r in range(n_rows):
        col = 0
        for k in range(b.row_segments[r], b.row_segments[r + 1]):
            d, s, n = (int(x) for x in b.doc_index[k])
            assert n >= 1
            assert b.seq_lens[r, k - b.row_segments[r]] == n
            assert b.position_ids[r, col:col + n].tolist() == list(range(n))
            assert b.labels[r, col] == -100 and not b.loss_mask[r, col]
            assert b.labels[r, col + 1:col + n].tolist() == b.input_ids[r, col + 1:col + n].tolist()
            seen.setdefault(d, []).append((s, b.input_ids[r, col:col + n].tolist()))
            col += n
        rest = seq_len - col
        assert (b.labels[r, col:] == -100).all() and not b.loss_mask[r, col:].any()
        assert b.position_ids[r, col:].tolist() == list(range(rest))
        assert b.seq_lens[r].sum() == seq_len
    kept = 0
    for d, e in enumerate(eff):
        if d not in seen:
            assert not e or (len(e) > seq_len and not split)
            continue
        parts = sorted(seen[d])
        assert [s for s, _ in parts] == list(np.cumsum([0] + [len(x) for _, x in parts[:-1]]))
        assert [i for _, x in parts for i in x] == e  # every id once, in order
        kept += len(e)
    assert b.tokens == kept == int(b.loss_mask.sum()) + len(b.doc_index)
    assert b.fill == pytest.approx(kept / max(flat.size, 1) if flat.size else 1.0)
    runs = b.seq_lens[b.seq_lens > 0]
    assert b.cu_seqlens.dtype == np.int32 and b.cu_seqlens.tolist() == [0] + np.cumsum(runs).tolist()
    assert b.cu_seqlens[-1] == flat.size


# ------------------------------------------------------------------ differential and property tests

docs_st = st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=30), max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=docs_st, seq_len=st.integers(2, 24), strategy=st.sampled_from(["bfd", "concat", "pad"]),
       bos=st.one_of(st.none(), st.integers(0, 9)), eos=st.one_of(st.none(), st.integers(0, 9)),
       split=st.booleans())
def test_kernels_equal_the_reference(docs, seq_len, strategy, bos, eos, split):
    b = check_against_reference(docs, seq_len, strategy, bos, eos, split, pad_id=7)
    check_properties(b, docs, seq_len, bos, eos, split)


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 64), min_size=1, max_size=300), seq_len=st.integers(64, 80))
def test_bfd_rows_equal_the_reference_on_many_documents(lengths, seq_len):
    docs = [list(range(n)) for n in lengths]
    b = pack(docs, seq_len, strategy="bfd")
    rows, _ = ref_bfd(docs, seq_len, True)
    assert len(b) == len(rows)
    assert b.doc_index.tolist() == [list(p) for row in rows for p in row]


def test_pad_and_concat_shapes():
    docs = [[1, 2, 3, 4, 5], [6], [7, 8]]
    b = pack(docs, 4, strategy="concat")
    assert b.input_ids.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert b.doc_index.tolist() == [[0, 0, 4], [0, 4, 1], [1, 0, 1], [2, 0, 2]]
    assert b.split == 1 and b.fill == 1.0
    b = pack(docs, 4, strategy="pad", long_documents="drop")
    assert b.input_ids.tolist() == [[6, 0, 0, 0], [7, 8, 0, 0]] and b.dropped == 1
    assert b.doc_index[:, 0].tolist() == [1, 2]


def test_long_documents_split_into_windows_and_rest():
    b = pack([list(range(1, 11))], 4, strategy="bfd", eos_id=99)
    assert b.split == 1
    assert sorted(b.doc_index.tolist()) == [[0, 0, 4], [0, 4, 4], [0, 8, 3]]
    assert b.input_ids.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 99, 0]]


def test_empty_input_and_empty_documents():
    b = pack([], 8)
    assert b.input_ids.shape == (0, 8) and b.fill == 1.0 and b.cu_seqlens.tolist() == [0]
    b = pack([[], []], 8)
    assert len(b) == 0 and b.empty == 2
    b = pack([[], []], 8, eos_id=3)  # an empty document with an eos is the eos alone
    assert b.input_ids.tolist() == [[3, 3, 0, 0, 0, 0, 0, 0]] and b.empty == 0


# ------------------------------------------------------------------ input kinds


def test_arrow_inputs_sliced_chunked_and_other_integer_types():
    docs = [[1, 2, 3], [], [4, 5], [6, 7, 8, 9], [10]]
    ref = pack(docs[1:], 4)
    for t in (pa.list_(pa.uint32()), pa.list_(pa.int32()), pa.large_list(pa.int64()), pa.list_(pa.uint16())):
        arr = pa.array(docs, t)
        for ids in (arr[1:], pa.chunked_array([arr[1:3], arr[3:]]), pa.chunked_array([arr[1:]])):
            b = pack(ids, 4)
            assert b.input_ids.tolist() == ref.input_ids.tolist()
            assert b.doc_index.tolist() == ref.doc_index.tolist()


def test_arrow_values_are_read_in_place():
    arr = pa.array([[1, 2], [3]], pa.list_(pa.uint32()))
    from tltok_jit.packing import documents

    values, _, _ = documents(arr)
    assert values.ctypes.data == arr.values.buffers()[1].address


def test_null_row_is_an_error_naming_it():
    with pytest.raises(PackingError, match="row 2 is null") as e:
        pack(pa.array([[1], [2], None], pa.list_(pa.uint32())), 4)
    assert e.value.row == 2 and e.value.argument == "ids"
    with pytest.raises(PackingError, match="row 4 is null"):
        pack(pa.chunked_array([pa.array([[1], [2]]), pa.array([[1], [2], None])]), 4)
    with pytest.raises(PackingError, match="row 1 is null"):
        pack([[1], None], 4)


def test_bad_ids_name_the_row():
    with pytest.raises(PackingError, match="row 1: -3"):
        pack([np.array([1]), np.array([2, -3])], 4)
    with pytest.raises(PackingError, match="row 1 holds id 50"):
        pack([[1], [50]], 4, vocab_size=50)
    with pytest.raises(PackingError, match="too large for int32"):
        pack([[2**31]], 4, dtype="int32")


def test_padded_batch_inputs(ours):
    enc = ours("o200k_base")
    texts = ["hello world", "a much longer text than the first one", "x"]
    want = [enc.encode(t) for t in texts]
    for side in ("right", "left"):
        batch = enc.encode_batch_padded(texts, pad_id=0, padding_side=side)
        for ids in (batch, {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}):
            assert pack(ids, 16).input_ids.tolist() == pack(want, 16).input_ids.tolist()
    with pytest.raises(PackingError, match="attention_mask"):
        pack({"input_ids": batch.input_ids}, 16)


def test_output_dtypes():
    b = pack([[1, 2, 3]], 4, dtype="int32")
    assert b.input_ids.dtype == b.labels.dtype == b.position_ids.dtype == np.int32
    assert b.loss_mask.dtype == np.bool_ and b.input_ids.flags.c_contiguous
    assert pack([[1]], 4).input_ids.dtype == np.int64


@pytest.mark.parametrize("kwargs, argument", [
    ({"seq_len": 1}, "seq_len"), ({"seq_len": 0}, "seq_len"), ({"seq_len": "8"}, "seq_len"),
    ({"seq_len": True}, "seq_len"), ({"seq_len": 8.0}, "seq_len"),
    ({"eos_id": -1}, "eos_id"), ({"eos_id": 1.0}, "eos_id"), ({"eos_id": "2"}, "eos_id"),
    ({"bos_id": -5}, "bos_id"), ({"bos_id": False}, "bos_id"), ({"eos_id": 100, "vocab_size": 100}, "eos_id"),
    ({"pad_id": -1}, "pad_id"), ({"strategy": "first_fit"}, "strategy"), ({"strategy": None}, "strategy"),
    ({"long_documents": "truncate"}, "long_documents"), ({"dtype": "float32"}, "dtype"),
    ({"vocab_size": 0}, "vocab_size"),
])
def test_bad_arguments_are_named(kwargs, argument):
    args = {"seq_len": 8, **kwargs}
    seq_len = args.pop("seq_len")
    with pytest.raises(PackingError) as e:
        pack([[1, 2]], seq_len, **args)
    assert e.value.argument == argument and argument in str(e.value)
    assert isinstance(e.value, ValueError)


def test_packing_error_pickles():
    import pickle

    e = pickle.loads(pickle.dumps(PackingError("m", "seq_len", 3)))
    assert (str(e), e.argument, e.row) == ("m", "seq_len", 3)


# ------------------------------------------------------------------ real text


@pytest.fixture(scope="module")
def real_docs(shared_path, ours):
    """War and Peace cut at line ends into ~1.5 KB documents, then the UDHR translations whole (a long
    tail), as o200k_base ids."""
    enc = ours("o200k_base")
    text = shared_path("corpora/english-war-and-peace.txt").read_text(encoding="utf-8")
    docs, cur, n = [], [], 0
    for line in text.splitlines(keepends=True)[:20000]:
        cur.append(line)
        n += len(line.encode())
        if n >= 1500:
            docs.append("".join(cur))
            cur, n = [], 0
    udhr = sorted(shared_path("corpora/english-war-and-peace.txt").parent.glob("udhr/*.txt"))
    docs += [p.read_text(encoding="utf-8") for p in udhr]
    return enc, enc.encode_arrow(pa.array(docs))


@pytest.mark.parametrize("strategy", ["bfd", "concat", "pad"])
def test_real_documents(real_docs, strategy):
    enc, ids = real_docs
    docs = [np.asarray(x, dtype=np.uint32) for x in ids.to_numpy(zero_copy_only=False)]
    eos = enc.eot_token
    b = pack(ids, 2048, strategy=strategy, eos_id=eos, vocab_size=enc.n_vocab)
    check_properties(b, [d.tolist() for d in docs], 2048, None, eos, True)
    if strategy == "concat":
        assert b.fill > 0.999, b.fill
    if strategy == "bfd":
        # documents of ~1.5 KB (~350 ids) are a narrow spread: five fill a row of 2048 to ~90%, six
        # overflow it, so even an optimal packing leaves room; the long tail fills much of it
        assert b.fill > 0.95, b.fill
        assert b.fill > pack(ids, 2048, strategy="pad", eos_id=eos).fill + 0.4
        rows, _ = ref_bfd(ref_documents([d.tolist() for d in docs], None, eos), 2048, True)
        assert len(b) == len(rows)


# ------------------------------------------------------------------ writers


def flattening_collator(features, separator_id=-100):
    """HF transformers' documented `DataCollatorWithFlattening.__call__` (return_position_ids and
    return_flash_attn_kwargs on), as plain lists: each feature's input_ids appended; labels
    [separator_id] + labels[1:] (its given labels, else its input_ids); position_ids
    range(len(input_ids)); cu_seq_lens_q the running sum of the lengths; max_length_q the longest."""
    batch = {"input_ids": [], "labels": [], "position_ids": []}
    cu, longest = [0], 0
    for f in features:
        ids = list(f["input_ids"])
        batch["input_ids"] += ids
        batch["labels"] += [separator_id] + list(f["labels"] if "labels" in f else ids)[1:]
        batch["position_ids"] += list(range(len(ids)))
        cu.append(cu[-1] + len(ids))
        longest = max(longest, len(ids))
    batch["cu_seq_lens_q"] = batch["cu_seq_lens_k"] = cu
    batch["max_length_q"] = batch["max_length_k"] = longest
    return batch


def _collator():
    try:
        from transformers import DataCollatorWithFlattening
    except ImportError:  # not installed: the documented contract, transcribed above
        return flattening_collator
    real = DataCollatorWithFlattening(return_flash_attn_kwargs=True, return_tensors="np")
    return lambda features: {k: np.asarray(v).reshape(-1).tolist() if hasattr(v, "__len__") else v
                             for k, v in real(features).items()}


def test_parquet_loads_in_datasets_and_feeds_the_flattening_collator(tmp_path):
    datasets = pytest.importorskip("datasets")
    docs = [list(range(1, n + 1)) for n in (5, 3, 9, 2, 7, 1, 4)]
    b1 = pack(docs, 8, eos_id=0, pad_id=99)
    b2 = pack(docs[:3], 8, strategy="concat")
    path = tmp_path / "packed.parquet"
    assert write_parquet([b1, b2], path) == len(b1) + len(b2)
    ds = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "cache"))
    assert len(ds) == len(b1) + len(b2)
    assert set(ds.column_names) == {"input_ids", "labels", "position_ids", "seq_lens"}
    collate = _collator()
    want_ids = np.concatenate([b1.input_ids, b2.input_ids])
    want_pos = np.concatenate([b1.position_ids, b2.position_ids])
    want_lab = np.concatenate([b1.labels, b2.labels])
    for r, row in enumerate(ds):
        assert row["input_ids"] == want_ids[r].tolist() and row["position_ids"] == want_pos[r].tolist()
        assert sum(row["seq_lens"]) == 8
        # a row split by its seq_lens into features gives back the row itself
        cuts = np.cumsum([0] + row["seq_lens"])
        features = [{"input_ids": row["input_ids"][a:z], "labels": row["labels"][a:z]}
                    for a, z in zip(cuts[:-1], cuts[1:])]
        out = collate(features)
        assert out["input_ids"] == row["input_ids"]
        assert out["labels"] == want_lab[r].tolist() == row["labels"]
        assert out["position_ids"] == row["position_ids"]
        assert out["cu_seq_lens_q"] == cuts.tolist()
    # and the batch's own cu_seqlens are the rows' cu_seq_lens end to end
    first = b1.cu_seqlens.tolist()
    assert first[-1] == b1.input_ids.size


def test_parquet_schema_is_fixed_size_lists(tmp_path):
    import pyarrow.parquet as pq

    write_parquet(pack([[1, 2, 3]], 4), tmp_path / "p.parquet")
    schema = pq.read_schema(tmp_path / "p.parquet")
    assert schema.field("input_ids").type == pa.list_(pa.int32(), 4)
    assert packed_table(pack([[1, 2, 3]], 4)).column("seq_lens").to_pylist() == [[3, 1]]
    with pytest.raises(PackingError, match="seq_len"):
        write_parquet([pack([[1]], 4), pack([[1]], 8)], tmp_path / "q.parquet")


def test_torchtune_fields():
    b = pack([[1, 2, 3], [4, 5], [6]], 4, pad_id=9)
    f = torchtune_fields(b)
    assert f["tokens"].tolist() == [[1, 2, 3, 6], [4, 5, 9, 9]]
    assert f["labels"].tolist() == [[-100, 2, 3, -100], [-100, 5, -100, -100]]
    # torchtune pads input_pos on from the last position, capped at max_seq_len - 1
    assert f["input_pos"].tolist() == [[0, 1, 2, 0], [0, 1, 2, 3]]
    assert [s.tolist() for s in f["seq_lens"]] == [[3, 1], [2, 2]]
    assert all(s.sum() == 4 for s in f["seq_lens"]) and f["tokens"].dtype == np.int64
    f = torchtune_fields(pack([[1]], 4))
    assert f["input_pos"].tolist() == [[0, 1, 2, 3]]
    f = torchtune_fields(pack([[1, 2, 3]], 3))
    assert f["input_pos"].tolist() == [[0, 1, 2]]


def test_warm_compiles_the_production_types():
    from tltok_jit.kernels import packing as k

    k.warm()
    before = {f: len(getattr(k, f).signatures) for f in ("bfd", "concat", "pad", "fill_rows")}
    for strategy in ("bfd", "concat", "pad"):
        for dtype in ("int64", "int32"):
            pack(pa.array([[1, 2], [3]], pa.list_(pa.uint32())), 4, strategy=strategy, eos_id=5, dtype=dtype)
            pack([np.array([1, 2], np.int64)], 4, strategy=strategy, long_documents="drop", dtype=dtype)
    after = {f: len(getattr(k, f).signatures) for f in before}
    assert after == before, "pack compiled a variant warm() does not"


def test_two_dimensional_array_is_rows_of_one_length():
    rows = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int32)
    assert pack(rows, 4, strategy="pad").input_ids.tolist() == [[1, 2, 3, 0], [4, 5, 6, 0]]


def test_rows_laid_out_in_a_shuffled_order():
    from tltok_jit.packing import documents, pack_documents

    docs = [list(range(1, n + 1)) for n in (5, 3, 9, 2, 7, 1, 4, 6, 2, 8)]
    values, starts, counts = documents(docs)
    plain = pack_documents(values, starts, counts, 8, strategy="bfd", eos=0)
    order = np.random.default_rng(3).permutation(len(plain))
    mixed = pack_documents(values, starts, counts, 8, strategy="bfd", eos=0, rng=np.random.default_rng(3))
    assert mixed.input_ids.tolist() == plain.input_ids[order].tolist()
    assert mixed.labels.tolist() == plain.labels[order].tolist()
    assert mixed.seq_lens.tolist() == plain.seq_lens[order].tolist()
    seg = plain.row_segments
    assert mixed.doc_index.tolist() == [x for r in order for x in plain.doc_index[seg[r]:seg[r + 1]].tolist()]
    check_properties(mixed, docs, 8, None, 0, True)


@pytest.mark.parametrize("strategy", ["bfd", "concat"])
def test_the_same_rows_for_any_thread_count(strategy):
    rng = np.random.default_rng(7)
    docs = [rng.integers(0, 50000, n, dtype=np.uint32) for n in rng.integers(1, 3000, 1200)]
    one = pack(docs, 1024, strategy=strategy, eos_id=1, num_threads=1)
    assert one.input_ids.size >= 2 * (1 << 19)  # enough rows for several parts
    for threads in (2, 3, 0):
        many = pack(docs, 1024, strategy=strategy, eos_id=1, num_threads=threads)
        for f in ("input_ids", "position_ids", "labels", "loss_mask", "seq_lens", "cu_seqlens", "doc_index"):
            assert np.array_equal(getattr(one, f), getattr(many, f)), f
    with pytest.raises(PackingError) as e:
        pack(docs[:2], 8, num_threads=-1)
    assert e.value.argument == "num_threads"


def test_rows_written_in_any_ranges_equal_the_whole():
    from tltok_jit.packing import documents, fill, layout_documents, pack_documents, rows_memory

    rng = np.random.default_rng(11)
    docs = [rng.integers(0, 50000, n, dtype=np.uint32) for n in rng.integers(1, 700, 300)]
    values, starts, counts = documents(docs)
    for strategy in ("bfd", "concat", "pad"):
        whole = pack_documents(values, starts, counts, 256, strategy=strategy, eos=3, bos=2, pad_id=9,
                               rng=np.random.default_rng(5))
        lay = layout_documents(values, starts, counts, 256, strategy=strategy, eos=3, bos=2,
                               rng=np.random.default_rng(5))
        cuts = sorted({0, len(lay), *rng.integers(0, len(lay), 6).tolist()})
        for lo, hi in zip(cuts, cuts[1:]):
            out = rows_memory(hi - lo, 256, np.int32)
            fill(lay, lo, hi, out, 9)
            for got, field in zip(out, ("input_ids", "position_ids", "labels", "loss_mask")):
                assert np.array_equal(got, getattr(whole, field)[lo:hi]), (strategy, field, lo, hi)
            assert np.array_equal(lay.doc_index(lo, hi), whole.doc_index[whole.row_segments[lo]:
                                                                          whole.row_segments[hi]])


def test_rows_memory_is_reused_once_dropped_and_never_while_held(monkeypatch):
    import tltok_jit.packing as packing
    from tltok_jit.engine import arenas

    if not arenas.RECYCLE:
        pytest.skip("no recycling on a free-threaded build")
    monkeypatch.setattr(packing.ROW_ARENAS, "kept", [])
    docs = [np.arange(1, 300 + k, dtype=np.uint32) for k in range(400)]  # ~3 MB of rows: recycled
    first = pack(docs, 2048, eos_id=0)
    want = first.labels.copy()
    held = first.labels[1:]
    del first
    second = pack(docs[::-1], 2048, eos_id=0)  # other rows in the same shape
    assert not np.shares_memory(second.labels, held)
    assert np.array_equal(held, want[1:])
    where = second.input_ids.ctypes.data
    del second
    third = pack(docs, 2048, eos_id=0)
    assert third.input_ids.ctypes.data == where  # the dropped batch's memory, not new pages
    assert np.array_equal(third.labels, want) and np.array_equal(held, want[1:])
