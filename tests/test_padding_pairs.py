"""Pairs and a tokenizer.json's own truncation / padding in `Encoding.encode_batch_padded`, against HF
`tokenizers`' `encode_batch` on the shared BPE files (and copies of them that carry settings)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

import tltok_jit
from tltok_jit.errors import PaddingError

tokenizers = pytest.importorskip("tokenizers")

from conftest import get_shared_path  # noqa: E402

NAMES = ["gpt2", "smollm2", "llama3", "qwen2.5", "mistral-nemo", "mistral-7b"]
LONG = ("It was in July, 1805, and the speaker was the well-known Anna Pávlovna Schérer, maid of honor and "
        "favorite of the Empress Márya Fëdorovna. 日本語 😀 ")


@functools.lru_cache(maxsize=None)
def _files(name: str):
    path = str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


def files(name: str):
    get_shared_path(f"tokenizers/{name}/tokenizer.json")  # skips, naming the path, when absent
    return _files(name)


def _special(hf) -> str:
    return next(t.content for _, t in sorted(hf.get_added_tokens_decoder().items()) if t.special)


def _pairs(hf) -> tuple[list[str], list[str]]:
    sp = _special(hf)
    a = ["", "Hello world", LONG, f"cut {sp} here {sp}{sp}", "café naïve", LONG * 2, "x", "   \n\t "]
    b = ["second", "", "short", LONG, f"{sp} and {sp}", "y z", LONG * 3, "1234567890"]
    return a, b


def hf_batch(hf, inputs, *, add_special_tokens, truncation=None, padding=None):
    hf.no_truncation()
    hf.no_padding()
    try:
        if truncation:
            hf.enable_truncation(**truncation)
        if padding is not None:
            hf.enable_padding(**padding)
        encs = hf.encode_batch(inputs, add_special_tokens=add_special_tokens)
    finally:
        hf.no_truncation()
        hf.no_padding()
    return ([e.ids for e in encs], [e.type_ids for e in encs], [e.attention_mask for e in encs])


def padded(enc, *args, **options):
    """encode_batch_padded with added tokens matched in the text, as HF always matches them."""
    return enc.encode_batch_padded(*args, allowed_special="all", **options)


def assert_equal(batch, expected):
    ids, types, mask = expected
    assert batch.input_ids.tolist() == ids
    assert batch.token_type_ids.tolist() == types
    assert batch.attention_mask.tolist() == mask
    assert batch.lengths.tolist() == [sum(m) for m in mask]
    for a in (batch.input_ids, batch.token_type_ids, batch.attention_mask):
        assert a.flags.c_contiguous


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("add_special_tokens", [False, True])
def test_pairs_equal_hf(name, add_special_tokens):
    enc, hf = files(name)
    a, b = _pairs(hf)
    expected = hf_batch(hf, list(zip(a, b)), add_special_tokens=add_special_tokens,
                        padding=dict(pad_id=0, pad_type_id=0))
    assert_equal(padded(enc, a, b, pad_id=0, add_special_tokens=add_special_tokens), expected)
    # HF's form: a list of (a, b) tuples
    assert_equal(padded(enc, list(zip(a, b)), pad_id=0, add_special_tokens=add_special_tokens),
                 expected)


@pytest.mark.parametrize("name", ["gpt2", "mistral-7b"])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pair_truncation_equals_hf(name, strategy, side):
    enc, hf = files(name)
    a, b = _pairs(hf)
    n_a = [len(x) for x in enc.encode_batch(a, allowed_special="all")]
    n_b = [len(x) for x in enc.encode_batch(b, allowed_special="all")]
    for add in (False, True):
        n_added = (len(hf.encode("x", "y").ids) - len(hf.encode("x", "y", add_special_tokens=False).ids)) if add else 0
        for max_length in (n_added + 3, n_added + 9, n_added + 40, 1000):
            budget = max_length - n_added
            keep = [k for k in range(len(a))
                    if strategy == "longest_first" or n_a[k] + n_b[k] <= budget
                    or (n_a[k] if strategy == "only_first" else n_b[k]) > n_a[k] + n_b[k] - budget]
            if not keep:
                continue
            aa, bb = [a[k] for k in keep], [b[k] for k in keep]
            for padding_side in ("right", "left"):
                expected = hf_batch(hf, list(zip(aa, bb)), add_special_tokens=add,
                                    truncation=dict(max_length=max_length, strategy=strategy, direction=side),
                                    padding=dict(pad_id=1, pad_type_id=3, direction=padding_side, length=max_length))
                got = padded(enc, aa, bb, truncation=strategy, max_length=max_length, padding="max_length",
                                              pad_id=1, pad_type_id=3, truncation_side=side, padding_side=padding_side,
                                              add_special_tokens=add)
                assert_equal(got, expected)


def test_only_first_that_cannot_cut_is_named():
    enc, hf = files("gpt2")
    with pytest.raises(PaddingError, match="only_first") as e:
        padded(enc, ["a"], ["a long second text here"], truncation="only_first", max_length=3, pad_id=0)
    assert e.value.argument == "truncation"
    hf.enable_truncation(3, strategy="only_first")
    try:
        with pytest.raises(Exception):
            hf.encode_batch([("a", "a long second text here")])
    finally:
        hf.no_truncation()


def _with_settings(name: str, tmp_path, truncation: dict | None, padding: dict | None) -> str:
    d = json.loads(get_shared_path(f"tokenizers/{name}/tokenizer.json").read_text(encoding="utf-8"))
    d["truncation"] = truncation
    d["padding"] = padding
    path = tmp_path / f"{name}-settings.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    return str(path)


SETTINGS = [
    (dict(max_length=12, stride=0, strategy="LongestFirst", direction="Right"),
     dict(strategy="BatchLongest", direction="Right", pad_to_multiple_of=None, pad_id=2, pad_type_id=0,
          pad_token="x")),
    (dict(max_length=20, stride=2, strategy="OnlySecond", direction="Left"),
     dict(strategy={"Fixed": 24}, direction="Left", pad_to_multiple_of=8, pad_id=5, pad_type_id=7, pad_token="x")),
    (None, dict(strategy="BatchLongest", direction="Right", pad_to_multiple_of=16, pad_id=0, pad_type_id=0,
                pad_token="x")),
]


@pytest.mark.parametrize("name", ["gpt2", "mistral-7b"])
@pytest.mark.parametrize("k", range(len(SETTINGS)))
def test_file_settings_apply_when_the_call_gives_none(name, k, tmp_path):
    truncation, padding = SETTINGS[k]
    path = _with_settings(name, tmp_path, truncation, padding)
    enc, hf = tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)
    a, b = _pairs(hf)
    if truncation is not None and truncation["strategy"] == "OnlySecond":
        n_a = [len(x) for x in enc.encode_batch(a, allowed_special="all")]
        keep = [k for k in range(len(a)) if n_a[k] < truncation["max_length"] - 3]
        a, b = [a[k] for k in keep], [b[k] for k in keep]
    for add in (False, True):
        encs = hf.encode_batch(list(zip(a, b)), add_special_tokens=add)
        expected = ([e.ids for e in encs], [e.type_ids for e in encs], [e.attention_mask for e in encs])
        assert_equal(padded(enc, a, b, add_special_tokens=add), expected)
        if truncation is None or truncation["strategy"] == "LongestFirst":
            encs = hf.encode_batch(a, add_special_tokens=add)
            expected = ([e.ids for e in encs], [e.type_ids for e in encs], [e.attention_mask for e in encs])
            assert_equal(padded(enc, a, add_special_tokens=add), expected)
    # encode never truncates nor pads (HF's encode does, by the file's settings)
    assert enc.encode(LONG * 3) == files(name)[0].encode(LONG * 3)
    assert len(enc.encode(LONG * 3)) > 24
    # the call's options win over the file's
    got = padded(enc, a, truncation=False, padding="longest", pad_id=3)
    want = [len(x) for x in enc.encode_batch(a, allowed_special="all")]
    assert got.lengths.tolist() == want and got.input_ids.shape[1] == max(want)


def test_arrow_pairs_equal_lists():
    pa = pytest.importorskip("pyarrow")
    enc, hf = files("mistral-7b")
    a, b = _pairs(hf)
    want = padded(enc, a, b, pad_id=0, add_special_tokens=True)
    got = padded(enc, pa.array(a), pa.chunked_array([b[:3], b[3:]]), pad_id=0, add_special_tokens=True)
    for f in ("input_ids", "token_type_ids", "attention_mask", "lengths"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))


def test_pair_arguments_are_named():
    enc, _ = files("gpt2")
    with pytest.raises(PaddingError) as e:
        padded(enc, ["a", "b"], ["c"], pad_id=0)
    assert e.value.argument == "pairs"
    with pytest.raises(PaddingError) as e:
        padded(enc, ["a"], ["b"], truncation=True, max_length=4, return_overflowing_tokens=True, pad_id=0)
    assert e.value.argument == "return_overflowing_tokens"
    with pytest.raises(PaddingError) as e:
        padded(enc, ["a"], [None], pad_id=0)
    assert e.value.argument == "texts"
    with pytest.raises(TypeError):
        padded(enc, ["a"], "b", pad_id=0)


def test_bad_file_settings_name_the_field(tmp_path):
    from tltok_jit.errors import TokenizerFileError

    for trunc, pad, field in [
        (dict(max_length=0, stride=0, strategy="LongestFirst", direction="Right"), None, "truncation.max_length"),
        (dict(max_length=8, strategy="Sideways", direction="Right"), None, "truncation.strategy"),
        (None, dict(strategy={"Fixed": 8}, direction="Right", pad_id=10 ** 9, pad_type_id=0), "padding.pad_id"),
        (None, dict(strategy="Widest", direction="Right", pad_id=0, pad_type_id=0), "padding.strategy"),
    ]:
        with pytest.raises(TokenizerFileError, match=field.replace(".", r"\.")):
            tltok_jit.from_file(_with_settings("gpt2", tmp_path, trunc, pad))


def test_registry_kind_pairs_and_template_equal_hf():
    from tltok_jit import TokenizerSpec, build_tokenizer

    path = str(get_shared_path("tokenizers/mistral-7b/tokenizer.json"))
    hf = _files("mistral-7b")[1]
    a, b = _pairs(hf)
    tok = build_tokenizer(TokenizerSpec("huggingface", {"tokenizer": path}, {"add_special_tokens": True}))
    expected = hf_batch(hf, list(zip(a, b)), add_special_tokens=True, padding=dict(pad_id=0))
    assert_equal(tok.encode_batch_padded(a, b, pad_id=0), expected)  # the kind's option: the template
    expected = hf_batch(hf, a, add_special_tokens=False, padding=dict(pad_id=0))
    assert_equal(tok.encode_batch_padded(a, pad_id=0, add_special_tokens=False, pad_type_id=0), expected)
