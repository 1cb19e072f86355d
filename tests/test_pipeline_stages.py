"""Each tokenizer.json stage class (`tltok_jit.model.pipeline`) on its own, against `tokenizers`: built by
`from_json` from the JSON `tokenizers` itself writes for that stage, it transforms random text (or
token strings) exactly as the `tokenizers` object does; every option it does not implement is
refused naming the file and the field; every registry entry is one class of its stage kind."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tltok_jit.hf.decoder_chain import DecoderChain
from tltok_jit.errors import TokenizerFileError, UnsupportedTokenizerError
from tltok_jit.model.byte_alphabet import BYTE_TO_CHAR
from tltok_jit.model.pipeline import decoders, normalizers, post_processors, pre_tokenizers
from tltok_jit.model.pipeline.fields import read_stages

tokenizers = pytest.importorskip("tokenizers")
N, P, D, PP = tokenizers.normalizers, tokenizers.pre_tokenizers, tokenizers.decoders, tokenizers.processors
WHERE = "dir/tokenizer.json"
ALPHABET = list("ab  ▁x\n\t_1٣") + ["e\u0301", "\u212b", "日本", "▁a", " b", "12", "\U00011de0"]


def _state(hf_obj) -> dict:
    """The JSON `tokenizers` writes for one stage object."""
    return json.loads(hf_obj.__getstate__())


def _texts(seed: str, n: int = 300) -> list[str]:
    rnd = random.Random(seed)
    return ["", " ", "▁", "a b", "  a"] + ["".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 10)))
                                           for _ in range(n)]


NORMALIZER_CASES = {
    "nfc": N.NFC(),
    "prepend": N.Prepend("▁"),
    "replace": N.Replace(" ", "▁"),
    "replace_longer": N.Replace("ab", "x"),
}


@pytest.mark.parametrize("case", sorted(NORMALIZER_CASES))
def test_normalizer_equals_tokenizers(case):
    hf = NORMALIZER_CASES[case]
    (stage,) = normalizers.read_normalizers(_state(hf), WHERE)
    assert type(stage) is normalizers.NORMALIZERS[_state(hf)["type"]]
    for t in _texts(case):
        assert normalizers.normalize((stage,), t) == hf.normalize_str(t), (case, t)


def test_normalizer_sequence_applies_in_order():
    hf = N.Sequence([N.Prepend("▁"), N.Replace(" ", "▁")])
    stages = normalizers.read_normalizers(_state(hf), WHERE)
    assert stages == (normalizers.Prepend("▁"), normalizers.Replace(" ", "▁"))
    for t in _texts("seq"):
        assert normalizers.normalize(stages, t) == hf.normalize_str(t), t


PRE_CASES = {
    "split_isolated": P.Split(tokenizers.Regex(r"\s+|\p{L}+"), "isolated"),
    "split_removed_invert": P.Split(tokenizers.Regex(r"a+"), "removed", invert=True),
    "split_merged_next": P.Split(" ", "merged_with_next"),
    "split_contiguous": P.Split(tokenizers.Regex(r"\d"), "contiguous"),
    "digits": P.Digits(individual_digits=False),
    "digits_individual": P.Digits(individual_digits=True),
    "metaspace_first": P.Metaspace("▁", prepend_scheme="first"),
    "metaspace_never_unsplit": P.Metaspace("_", prepend_scheme="never", split=False),
    "bytelevel": P.ByteLevel(add_prefix_space=False),
}


@pytest.mark.parametrize("case", sorted(PRE_CASES))
def test_pre_tokenizer_equals_tokenizers(case):
    hf = PRE_CASES[case]
    (stage,) = pre_tokenizers.read_pre_tokenizers(_state(hf), WHERE)
    assert type(stage) is pre_tokenizers.PRE_TOKENIZERS[_state(hf)["type"]]
    for t in _texts(case):
        ours = pre_tokenizers.pre_tokenize((stage,), t)
        if isinstance(stage, pre_tokenizers.ByteLevel):  # tokenizers shows the pieces in the byte alphabet
            ours = ["".join(BYTE_TO_CHAR[b] for b in p.encode("utf-8")) for p in ours]
        assert ours == [p for p, _ in hf.pre_tokenize_str(t)], (case, t)


def test_split_isolated_pattern_is_what_a_scanner_may_take():
    assert pre_tokenizers.Split("a", "Isolated").isolated_pattern == "a"
    assert pre_tokenizers.Split("a", "Removed").isolated_pattern is None
    assert pre_tokenizers.Split("a", "Isolated", invert=True).isolated_pattern is None
    assert pre_tokenizers.Digits(True).isolated_pattern is None


DECODER_CASES = {
    "replace": D.Replace("▁", " "),
    "byte_fallback": D.ByteFallback(),
    "fuse": D.Fuse(),
    "strip": D.Strip(" ", 1, 0),
    "metaspace_first": D.Metaspace("▁", prepend_scheme="first"),
    "metaspace_never": D.Metaspace("▁", prepend_scheme="never"),
    "bytelevel": D.ByteLevel(),
}
TOKENS = ["▁a", "b", "▁", "x▁y", " ", "a b", "  c", "<0x41>", "<0xE4>", "<0xBD>", "<0xA0>", "<0xFF>", "Ġhi", "Ċ",
          "é"]


@pytest.mark.parametrize("case", sorted(DECODER_CASES))
def test_decoder_equals_tokenizers(case):
    hf = DECODER_CASES[case]
    stages = decoders.read_decoders(_state(hf), WHERE, byte_level=False)
    assert len(stages) == 1 and type(stages[0]) is decoders.DECODERS[_state(hf)["type"]]
    chain = DecoderChain(stages, TOKENS)
    rnd = random.Random(case)
    for _ in range(300):
        ids = [rnd.randrange(len(TOKENS)) for _ in range(rnd.randint(1, 6))]
        assert chain.decode(ids) == hf.decode([TOKENS[i] for i in ids]), (case, ids)


def test_null_decoder_joins_with_spaces_and_bytelevel_alone_is_the_byte_gather():
    assert decoders.read_decoders(None, WHERE, byte_level=True) == (decoders.JoinSpace(),)
    assert DecoderChain((decoders.JoinSpace(),), ["a", "b"]).decode([0, 1, 0]) == "a b a"
    assert decoders.read_decoders(_state(D.ByteLevel()), WHERE, byte_level=True) is None
    assert decoders.read_decoders(_state(D.ByteLevel()), WHERE, byte_level=False) == (decoders.ByteLevel(),)


def test_template_processing_ids_around_a_single_sequence():
    hf = PP.TemplateProcessing(single="<s> $A </s> </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    stages = post_processors.read_post_processors(_state(hf), WHERE)
    assert post_processors.template_ids(stages) == ((1,), (2, 2))
    both = {"type": "Sequence", "processors": [_state(PP.ByteLevel()), _state(hf)]}
    stages = post_processors.read_post_processors(both, WHERE)
    assert [type(s) for s in stages] == [post_processors.ByteLevel, post_processors.TemplateProcessing]
    assert post_processors.template_ids(stages) == ((1,), (2, 2))


REFUSALS = [
    (normalizers.read_normalizers, {"type": "Lowercase"}, UnsupportedTokenizerError, "normalizer.type"),
    (normalizers.read_normalizers, {"type": "Replace", "pattern": {"Regex": "a"}, "content": ""},
     UnsupportedTokenizerError, "normalizer.pattern"),
    (normalizers.read_normalizers, {"type": "Replace", "pattern": {"String": ""}, "content": "x"},
     TokenizerFileError, "normalizer needs a non-empty pattern"),
    (normalizers.read_normalizers, {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend"}]},
     TokenizerFileError, "normalizer.normalizers[1].prepend"),
    (pre_tokenizers.read_pre_tokenizers, {"type": "Whitespace"}, UnsupportedTokenizerError, "pre_tokenizer.type"),
    (pre_tokenizers.read_pre_tokenizers, {"type": "ByteLevel", "add_prefix_space": True},
     UnsupportedTokenizerError, "pre_tokenizer.add_prefix_space"),
    (pre_tokenizers.read_pre_tokenizers, {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"},
     UnsupportedTokenizerError, "pre_tokenizer.behavior"),
    (pre_tokenizers.read_pre_tokenizers, {"type": "Split", "pattern": {"Regex": "[a&&b]"}},
     UnsupportedTokenizerError, "pre_tokenizer.pattern"),
    (pre_tokenizers.read_pre_tokenizers, {"type": "Sequence", "pretokenizers": [{"type": "Metaspace",
                                                                                "replacement": "ab"}]},
     UnsupportedTokenizerError, "pre_tokenizer.pretokenizers[0].replacement"),
    (lambda o, w: decoders.read_decoders(o, w, False), {"type": "WordPiece"}, UnsupportedTokenizerError,
     "decoder.type"),
    (lambda o, w: decoders.read_decoders(o, w, False), {"type": "Metaspace", "prepend_scheme": "sometimes"},
     UnsupportedTokenizerError, "decoder.prepend_scheme"),
    (post_processors.read_post_processors, {"type": "BertProcessing"}, UnsupportedTokenizerError,
     "post_processor.type"),
    (post_processors.read_post_processors,
     {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "B"}}], "special_tokens": {}},
     UnsupportedTokenizerError, "post_processor.single"),
    (post_processors.read_post_processors,
     {"type": "Sequence", "processors": [{"type": "TemplateProcessing", "single": []},
                                         {"type": "TemplateProcessing", "single": []}]},
     UnsupportedTokenizerError, "post_processor.processors[1]"),
]


@pytest.mark.parametrize("read,obj,error,field", REFUSALS, ids=[r[3] for r in REFUSALS])
def test_unsupported_options_are_refused_naming_file_and_field(read, obj, error, field):
    with pytest.raises(error) as info:
        read(obj, WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and field in str(info.value), str(info.value)


def test_unknown_type_hint_lists_the_registry():
    with pytest.raises(UnsupportedTokenizerError, match=r"supported decoders: ByteLevel, Metaspace, Replace, "
                                                        r"ByteFallback, Fuse, Strip, Sequence"):
        decoders.read_decoders({"type": "CTC"}, WHERE, False)


@pytest.mark.parametrize("registry", [normalizers.NORMALIZERS, pre_tokenizers.PRE_TOKENIZERS,
                                      post_processors.POST_PROCESSORS, decoders.DECODERS])
def test_registries_name_their_class(registry):
    base = {id(normalizers.NORMALIZERS): normalizers.Normalizer, id(pre_tokenizers.PRE_TOKENIZERS):
            pre_tokenizers.PreTokenizer, id(post_processors.POST_PROCESSORS): post_processors.PostProcessor,
            id(decoders.DECODERS): decoders.Decoder}[id(registry)]
    for name, cls in registry.items():
        assert cls.__name__ == name and issubclass(cls, base) and callable(cls.from_json)
    with pytest.raises(UnsupportedTokenizerError):
        read_stages({"type": ["not", "a", "name"]}, WHERE, "x", "xs", registry, "supported")


@pytest.mark.parametrize("seed", range(4))
def test_rows_with_bytes_matches_a_plain_scan(seed):
    """The kernel that sends rows to Python's text path (a non-ASCII byte under NFC, a byte the
    vocabulary lacks) finds a flagged byte at any offset, in rows of any length, empty ones too."""
    from tltok_jit.kernels.encode_chars import rows_with_bytes
    from tltok_jit.engine.text import read_only

    rng = np.random.default_rng(seed)
    lut = np.zeros(256, dtype=np.uint8)
    lut[rng.choice(256, int(rng.integers(1, 4)), replace=False)] = 1
    plain = np.flatnonzero(lut == 0)
    data = rng.choice(plain, 5000).astype(np.uint8)
    flagged = rng.choice(5000, 40, replace=False)
    data[flagged] = rng.choice(np.flatnonzero(lut), 40)
    cuts = np.sort(rng.choice(np.arange(1, 5000), 300, replace=False))
    offsets = np.concatenate(([int(rng.integers(0, 20))], cuts, cuts[-5:], [5000])).astype(np.int64)
    offsets = np.maximum.accumulate(offsets)
    out = np.zeros(len(offsets) - 1, dtype=bool)
    rows_with_bytes(read_only(lut), read_only(data), read_only(offsets), out)
    want = [bool(lut[data[a:b]].any()) for a, b in zip(offsets[:-1], offsets[1:])]
    assert out.tolist() == want and any(want) and not all(want)
