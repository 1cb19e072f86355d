"""`encode_batch_padded` on every registry kind that encodes: each row is the kind's ids (for
sentencepiece: the sentencepiece package's) cut and padded by hand as HF `tokenizers` does, in the
list, Arrow and pandas forms; decode-only kinds and bad options are refused by name."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from test_kinds_arrow import SHORT, build  # noqa: F401  (the module-scoped fixture)
from tltok_jit import EncodeNotSupportedError, PaddingError, TokenizerSpec, build_tokenizer

KINDS = ["sentencepiece:llama2", "sentencepiece:botchan_en_unigram_1000", "tiktoken:o200k_base",
         "huggingface:llama3+template", "whisper:multilingual", "funasr_char:tokens"]
TEXTS = [t for t in SHORT if t is not None] + ["one more row of text, longer than the cut at eight ids"]


def _oracle_ids(kind: str, tok, texts: list[str]) -> list[list[int]]:
    name, _, model = kind.partition(":")
    if name == "sentencepiece":
        spm = pytest.importorskip("sentencepiece")
        from conftest import get_shared_path

        sp = spm.SentencePieceProcessor(model_file=str(get_shared_path(f"tokenizers/sentencepiece/{model}.model")))
        return [sp.encode(t) for t in texts]
    return [tok.encode(t) for t in texts]


def _by_hand(rows, width, *, pad_id, left_cut=False, left_pad=False):
    ids, mask = [], []
    for r in rows:
        r = r[max(len(r) - width, 0):] if left_cut else r[:width]
        fill = [pad_id] * (width - len(r))
        ids.append(fill + r if left_pad else r + fill)
        mask.append([0] * len(fill) + [1] * len(r) if left_pad else [1] * len(r) + [0] * len(fill))
    return ids, mask


@pytest.mark.parametrize("kind", KINDS)
def test_longest_padding_equals_the_kinds_ids(build, kind):
    tok = build(kind)
    rows = _oracle_ids(kind, tok, TEXTS)
    batch = tok.encode_batch_padded(TEXTS, pad_id=0)
    width = max(len(r) for r in rows)
    ids, mask = _by_hand(rows, width, pad_id=0)
    assert batch.input_ids.shape == (len(TEXTS), width) and batch.input_ids.dtype == np.int64
    assert batch.input_ids.tolist() == ids
    assert batch.attention_mask.tolist() == mask
    assert batch.lengths.tolist() == [len(r) for r in rows]
    assert batch.input_ids.flags.c_contiguous


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("left_cut,left_pad", [(False, False), (True, True), (False, True)])
def test_max_length_cuts_and_pads(build, kind, left_cut, left_pad):
    tok = build(kind)
    rows = _oracle_ids(kind, tok, TEXTS)
    batch = tok.encode_batch_padded(pa.array(TEXTS), max_length=8, padding="max_length", truncation=True,
                                    truncation_side="left" if left_cut else "right",
                                    padding_side="left" if left_pad else "right", pad_id=1, dtype="int32")
    ids, mask = _by_hand(rows, 8, pad_id=1, left_cut=left_cut, left_pad=left_pad)
    assert batch.input_ids.dtype == np.int32
    assert batch.input_ids.tolist() == ids
    assert batch.attention_mask.tolist() == mask


@pytest.mark.parametrize("kind", ["sentencepiece:llama2", "funasr_char:tokens"])
def test_stride_windows(build, kind):
    tok = build(kind)
    text = TEXTS[-1]
    row = _oracle_ids(kind, tok, [text])[0]
    batch = tok.encode_batch_padded([text, "a"], max_length=5, truncation=True, stride=2,
                                    return_overflowing_tokens=True, pad_id=0)
    windows = [row[s:s + 5] for s in range(0, max(len(row) - 2, 1), 3)]
    windows = windows[:next(i for i, w in enumerate(windows) if (i * 3 + 5) >= len(row)) + 1]
    got = [list(r[:n]) for r, n in zip(batch.input_ids.tolist(), batch.lengths.tolist())]
    assert got[:len(windows)] == windows
    assert batch.overflow_to_sample_mapping.tolist() == [0] * len(windows) + [1]


def test_chunked_sliced_and_pandas_input(build):
    pd = pytest.importorskip("pandas")
    tok = build("sentencepiece:llama2")
    whole = tok.encode_batch_padded(TEXTS, pad_id=0)
    chunked = pa.chunked_array([pa.array(TEXTS[:3]), pa.array(TEXTS[3:])])
    assert np.array_equal(tok.encode_batch_padded(chunked, pad_id=0).input_ids, whole.input_ids)
    sliced = pa.array(["skip me"] + TEXTS).slice(1)
    assert np.array_equal(tok.encode_batch_padded(sliced, pad_id=0).input_ids, whole.input_ids)
    series = pd.Series(TEXTS, dtype="string[pyarrow]")
    assert np.array_equal(tok.encode_batch_padded(series, pad_id=0).input_ids, whole.input_ids)


def test_refusals_name_what_is_wrong(build, tmp_path):
    tok = build("sentencepiece:llama2")
    with pytest.raises(PaddingError, match="row 1 is null"):
        tok.encode_batch_padded(pa.array(["a", None]), pad_id=0)
    with pytest.raises(PaddingError, match="pad_id"):
        tok.encode_batch_padded(["a", "longer text"])
    with pytest.raises(PaddingError, match="pad_id must be a token id"):
        tok.encode_batch_padded(["a", "longer text"], pad_id=tok.vocab_size)
    with pytest.raises(PaddingError, match="stride"):
        tok.encode_batch_padded(["a"], max_length=4, truncation=True, stride=4, pad_id=0)
    with pytest.raises(TypeError, match="not one str"):
        tok.encode_batch_padded("a text", pad_id=0)
    units = tmp_path / "units.txt"
    units.write_text("<blank> 0\na 1\nb 2\n", encoding="utf-8")
    decode_only = build_tokenizer(TokenizerSpec("symbol_table", {"units": units}))
    with pytest.raises(EncodeNotSupportedError):
        decode_only.encode_batch_padded(["a"], pad_id=0)


def test_wordpiece_pairs_as_tuples_equal_hf(shared_path):
    tokenizers = pytest.importorskip("tokenizers")
    import tltok_jit

    path = str(shared_path("tokenizers/minilm/tokenizer.json"))
    tok = tltok_jit.from_file(path)
    pairs = [("a query", "a passage about it"), ("x", ""), ("Héllo 日本", "WORLD!")]
    got = tok.encode_batch_padded(pairs, add_special_tokens=True)
    want = tokenizers.Tokenizer.from_file(path).encode_batch(pairs)  # the file's own padding (128) and cut
    assert got.input_ids.tolist() == [e.ids for e in want]
    assert got.token_type_ids.tolist() == [e.type_ids for e in want]
    assert got.attention_mask.tolist() == [e.attention_mask for e in want]
    split = tok.encode_batch_padded([a for a, _ in pairs], pairs=[b for _, b in pairs], add_special_tokens=True)
    assert np.array_equal(split.input_ids, got.input_ids)
