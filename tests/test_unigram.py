"""Unigram tokenizer.json files (T5, mT5, XLM-R style): ids and decode equal `tokenizers`' on files
trained here with its `UnigramTrainer` (Metaspace schemes, byte fallback, normalizers), on
sentencepiece's botchan model converted as HF's SpmConverter does (its Precompiled charsmap), and on
hand-made vocabularies (ties, unknowns, byte fallback); on the shared corpora and generated Unicode
text. A pure-Python reference of the Viterbi and of the Precompiled normalizer checks the kernels."""

from __future__ import annotations

import base64
import functools
import json
import pickle
import random

import numpy as np
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.errors import TokenizerFileError, UnsupportedTokenizerError
from tltok_jit.kernels import unigram as K
from tltok_jit.kinds.unigram import UnigramTokenizer, UnknownCharacterError
from tltok_jit.loaders.sentencepiece_model import read_sentencepiece_model

from edge_cases import WHITE_SPACE, edge_case_strings, has_surrogates

tokenizers = pytest.importorskip("tokenizers")
pa = pytest.importorskip("pyarrow")

CORPORA = "corpora"
BOTCHAN = "tokenizers/sentencepiece/botchan_en_unigram_1000.model"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EDGE = [t for t in edge_case_strings() if not has_surrogates(t)][::3]
# characters whose grapheme clusters the Precompiled normalizer treats whole
POOL = ("e\u0301a\u0300\r\n\t  \u3000\uff21\ufb01\u00aa\u00b2\u1100\u1161\u11a8\U0001F1FA\U0001F1F8\u200d"
        "\U0001F468\u0915\u094d\u0937\u0308\u0903\u0600x<u\u2581\u00a0\u2460\u337f\uff76\uff9e\U00010781"
        "\uff1cpad\uff1e")


# ------------------------------------------------------------------ references

def ref_viterbi(pieces, scores, unk_id, byte_fallback, s: str) -> list[int]:
    """Unigram::encode_optimized + tokenize, as written in tokenizers' model.rs."""
    if not s:
        return []
    ids = {}
    for i, p in enumerate(pieces):
        ids[p] = i
    unk_score = min(scores) - 10.0
    b = s.encode("utf-8")
    size = len(b)
    best = [(0.0, None, 0)] * (size + 1)  # (score, start, id)
    starts = 0
    maxlen = max(len(p.encode("utf-8")) for p in pieces)
    while starts < size:
        till = best[starts][0]
        mblen = len(b[starts:starts + 4].decode("utf-8", "ignore")[:1].encode("utf-8"))
        single = False
        for end in range(starts + 1, min(size, starts + maxlen) + 1):
            tok = b[starts:end]
            try:
                key = tok.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if key in ids:
                i = ids[key]
                cand = scores[i] + till
                if best[end][1] is None or cand > best[end][0]:
                    best[end] = (cand, starts, i)
                if end - starts == mblen:
                    single = True
        if not single:
            if unk_id is None:
                raise UnknownCharacterError("no unk")
            cand = unk_score + till
            e = starts + mblen
            if best[e][1] is None or cand > best[e][0]:
                best[e] = (cand, starts, unk_id)
        starts += mblen
    path = []
    e = size
    while e > 0:
        _, st_, i = best[e]
        path.append((st_, e, i))
        e = st_
    path.reverse()
    strings = []
    for st_, e, i in path:
        if unk_id is not None and i == unk_id and strings and strings[-1][1]:
            strings[-1] = (strings[-1][0] + b[st_:e], True)
        else:
            strings.append((b[st_:e], unk_id is not None and i == unk_id))
    out = []
    for piece, _ in strings:
        key = piece.decode("utf-8")
        if key in ids:
            out.append(ids[key])
            continue
        if byte_fallback and all(f"<0x{x:02X}>" in ids for x in piece):
            out.extend(ids[f"<0x{x:02X}>"] for x in piece)
            continue
        out.append(unk_id)
    return out


def ref_precompiled(charsmap: bytes, text: str) -> str:
    """spm_precompiled's normalize_string: by extended grapheme cluster (the `regex` module's \\X)."""
    import struct

    (size,) = struct.unpack("<I", charsmap[:4])
    units = np.frombuffer(charsmap, "<u4", count=size // 4, offset=4).astype(np.int64)
    norm = charsmap[4 + size:]

    def transform(chunk: bytes):
        node = 0
        u = int(units[0])
        node ^= (u >> 10) << ((u & (1 << 9)) >> 6)
        for c in chunk:
            if c == 0:
                return None
            node ^= c
            u = int(units[node])
            if (u & (0x80000000 | 0xFF)) != c:
                return None
            node ^= (u >> 10) << ((u & (1 << 9)) >> 6)
            if (u >> 8) & 1:
                v = int(units[node]) & 0x7FFFFFFF
                return norm[v:norm.index(b"\0", v)].decode("utf-8")
        return None

    out = []
    for g in regex.findall(r"\X", text):
        gb = g.encode("utf-8")
        if len(gb) < 6:
            t = transform(gb)
            if t is not None:
                out.append(t)
                continue
        for c in g:
            t = transform(c.encode("utf-8"))
            out.append(c if t is None else t)
    return "".join(out)


def ref_encode(tok: UnigramTokenizer, hf, text: str) -> list[int]:
    """HF's pipeline with the reference Viterbi for the model step (normalized and pre-tokenized by
    HF itself; Metaspace's First scheme prepends only to the text's first segment when its first
    word starts it)."""
    from tokenizers import pre_tokenizers

    m = tok.model
    out = []
    pre = hf.pre_tokenizer
    later = pre
    if m.metaspace and m.metaspace[1] == "first":
        never = pre_tokenizers.Metaspace(replacement=m.metaspace[0], prepend_scheme="never", split=m.metaspace[2])
        later = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), never]) if m.whitespace_split else never
    for k, seg in enumerate(_split_added(m, text)):
        if isinstance(seg, int):
            out.append(seg)
            continue
        s = hf.normalizer.normalize_str(seg) if hf.normalizer else seg
        at_zero = k == 0 and not (m.whitespace_split and seg[:1] in WHITE_SPACE)
        use = pre if at_zero else later
        words = [w for w, _ in use.pre_tokenize_str(s)] if use else [s]
        for w in words:
            out += ref_viterbi(m.pieces, m.scores, m.unk_id, m.byte_fallback, w)
    return out


def _split_added(m, text):
    if not m.added:
        yield text
        return
    pat = regex.compile("|".join(regex.escape(t.content) for t in sorted(m.added, key=lambda t: -len(t.content))))
    ids = {t.content: t.id for t in m.added}
    pos = 0
    for mt in pat.finditer(text):
        if mt.start() > pos:
            yield text[pos:mt.start()]
        yield ids[mt.group()]
        pos = mt.end()
    if pos < len(text):
        yield text[pos:]


# ------------------------------------------------------------------ files

def _hf_ids(hf, texts, add=False):
    return [e.ids for e in hf.encode_batch(list(texts), add_special_tokens=add)]


def first_difference(ours_ids, hf_ids, texts):
    for t, a, b in zip(texts, ours_ids, hf_ids):
        if a != b:
            return t, a, b
    assert len(ours_ids) == len(hf_ids)
    return None


@pytest.fixture(scope="module")
def corpus(shared_dir):
    def read(rel: str) -> str:
        p = shared_dir / CORPORA / rel
        if not p.is_file():
            pytest.skip(f"shared corpus missing: {p}")
        return p.read_text(encoding="utf-8")
    return read


@pytest.fixture(scope="module")
def udhr(shared_dir):
    files = sorted((shared_dir / CORPORA / "udhr").glob("*.txt"))
    if not files:
        pytest.skip(f"shared corpus missing: {shared_dir / CORPORA / 'udhr'}")
    return {f.stem: f.read_text(encoding="utf-8") for f in files}


@pytest.fixture(scope="module")
def training_lines(udhr, corpus):
    lines = [ln for t in list(udhr.values())[::4] for ln in t.splitlines()[:40]]
    lines += corpus("english-war-and-peace.txt").splitlines()[:1500:3]
    lines += corpus("chinese-sanguo-yanyi.txt").splitlines()[:20]
    return [ln for ln in lines if ln.strip()]


@pytest.fixture(scope="module")
def test_lines(udhr, corpus):
    lines = [ln for t in list(udhr.values())[1::2] for ln in t.splitlines()[:25]]
    lines += corpus("english-war-and-peace.txt").splitlines()[20000:21500]
    lines += corpus("chinese-sanguo-yanyi.txt").splitlines()[1000:1300]
    lines += corpus("emoji-test.txt").splitlines()[::10]
    rng = random.Random(7)
    lines += ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 14))) for _ in range(600)]
    return lines + EDGE


def _meta(scheme="always", split=True, rep="\u2581"):
    return {"type": "Metaspace", "replacement": rep, "prepend_scheme": scheme, "split": split}


def _byte_pieces(d: dict) -> None:
    """Adds the 256 `<0xXX>` pieces and turns byte_fallback on."""
    have = {p for p, _ in d["model"]["vocab"]}
    low = min(s for _, s in d["model"]["vocab"])
    d["model"]["vocab"] += [[f"<0x{b:02X}>", low - 1] for b in range(256) if f"<0x{b:02X}>" not in have]
    d["model"]["byte_fallback"] = True


VARIANTS = {
    "always": dict(pre=_meta()),
    "first_nosplit_bytes": dict(pre=_meta("first", split=False), bytes=True,
                                decoder={"type": "Sequence", "decoders": [
                                    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                    {"type": "ByteFallback"}, {"type": "Fuse"},
                                    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}),
    "never_lower": dict(pre=_meta("never"), norm={"type": "Lowercase"}),
    "ws_meta_seq": dict(pre={"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _meta("first")]},
                        norm={"type": "Sequence", "normalizers": [
                            {"type": "Replace", "pattern": {"String": "``"}, "content": "\""},
                            {"type": "Strip", "strip_left": True, "strip_right": True}, {"type": "Lowercase"}]},
                        bytes=True),
    "ws_only": dict(pre={"type": "WhitespaceSplit"}, decoder=None),
    "nfkc_always": dict(pre=_meta(), norm={"type": "NFKC"}),
    "nfc_lower_first": dict(pre=_meta("first"), norm={"type": "Sequence", "normalizers": [
        {"type": "NFC"}, {"type": "Lowercase"}]}, bytes=True),
    "nfkc_ws_meta": dict(pre={"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _meta("first")]},
                         norm={"type": "Sequence", "normalizers": [
                             {"type": "NFKC"}, {"type": "Strip", "strip_left": True, "strip_right": True}]}),
    "meta_underscore": dict(pre=_meta("always", rep="_"), norm={"type": "Replace", "pattern": {"String": "ab"},
                                                                "content": "\u00e9\u00e9\u00e9"}),
}


@functools.lru_cache(maxsize=None)
def _trained(tmp: str, lines: tuple, name: str) -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    opts = VARIANTS[name]
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    chars = len(set("".join(lines)))
    tr = trainers.UnigramTrainer(vocab_size=chars + 600, special_tokens=["<unk>", "<pad>", "</s>"], unk_token="<unk>",
                                 shrinking_factor=0.5, n_sub_iterations=1, max_piece_length=8)
    tok.train_from_iterator(lines, tr)
    d = json.loads(tok.to_str())
    d["pre_tokenizer"] = opts["pre"]
    d["normalizer"] = opts.get("norm")
    meta = opts["pre"] if opts["pre"]["type"] == "Metaspace" else None
    d["decoder"] = opts.get("decoder", meta)
    if opts.get("bytes"):
        _byte_pieces(d)
    d["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}],
        "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    path = f"{tmp}/unigram-{name}.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(d, f)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory, training_lines):
    tmp = str(tmp_path_factory.mktemp("unigram"))
    return lambda name: _trained(tmp, tuple(training_lines), name)


def spm_converted(model_path: str, pre=None, norm="precompiled", byte_fallback=None) -> str:
    """A tokenizer.json of a sentencepiece Unigram model as HF's SpmConverter writes T5's: the
    charsmap as a Precompiled normalizer, WhitespaceSplit + Metaspace, the control and unknown
    pieces as special added tokens."""
    m = read_sentencepiece_model(model_path)
    specials = [i for i, t in enumerate(m.types) if t in (2, 3)]  # UNKNOWN, CONTROL
    unk = m.types.index(2)
    d = {"version": "1.0", "truncation": None, "padding": None,
         "added_tokens": [{"id": i, "content": m.pieces[i], "single_word": False, "lstrip": False, "rstrip": False,
                           "normalized": False, "special": True} for i in specials],
         "normalizer": ({"type": "Precompiled",
                         "precompiled_charsmap": base64.b64encode(m.normalizer.precompiled_charsmap).decode()}
                        if norm == "precompiled" else norm),
         "pre_tokenizer": pre or {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _meta()]},
         "post_processor": None, "decoder": _meta(),
         "model": {"type": "Unigram", "unk_id": unk, "vocab": [[p, s] for p, s in zip(m.pieces, m.scores)],
                   "byte_fallback": bool(m.byte_fallback if byte_fallback is None else byte_fallback)}}
    return json.dumps(d)


@pytest.fixture(scope="module")
def botchan(shared_path, tmp_path_factory):
    p = tmp_path_factory.mktemp("botchan") / "tokenizer.json"
    p.write_text(spm_converted(str(shared_path(BOTCHAN))), encoding="utf-8")
    return str(p)


def _pair(path):
    return tltok_jit.from_file(path), tokenizers.Tokenizer.from_file(path)


# ------------------------------------------------------------------ tests: ids

def test_from_file_and_registry_give_the_unigram_kind(botchan):
    ours = tltok_jit.from_file(botchan)
    assert isinstance(ours, UnigramTokenizer)
    from tltok_jit.tokenizer import TokenizerSpec
    from tltok_jit.kinds.huggingface import build

    reg = build(TokenizerSpec("huggingface", {"tokenizer": botchan}))
    assert isinstance(reg, UnigramTokenizer) and reg.encode("Hello there") == ours.encode("Hello there")


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_trained_files(trained, test_lines, name):
    ours, hf = _pair(trained(name))
    assert first_difference(ours.encode_batch(test_lines), _hf_ids(hf, test_lines), test_lines) is None
    for t in test_lines[::40]:
        assert ours.encode(t) == hf.encode(t, add_special_tokens=False).ids
        assert ours.encode(t, add_special_tokens=True) == hf.encode(t).ids
    for ids in _hf_ids(hf, test_lines[::5], add=True):
        assert ours.decode(ids) == hf.decode(ids)
        assert ours.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_reference_viterbi_on_trained_files(trained, test_lines, name):
    ours, hf = _pair(trained(name))
    for t in test_lines[::25]:
        assert ref_encode(ours, hf, t) == ours.encode(t), t


def test_botchan_precompiled_on_corpora(botchan, corpus, udhr):
    ours, hf = _pair(botchan)
    texts = []
    for name in ("english-war-and-peace.txt", "chinese-sanguo-yanyi.txt", "emoji-test.txt"):
        whole = corpus(name)
        texts += whole.splitlines()[:2500]
        texts.append(whole[:200_000])
    for t in udhr.values():
        texts += t.splitlines()[:30]
        texts.append(t)
    rng = random.Random(3)
    texts += ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 16))) for _ in range(3000)]
    texts += EDGE
    assert first_difference(ours.encode_batch(texts), _hf_ids(hf, texts), texts) is None
    for ids in _hf_ids(hf, texts[::30]):
        assert ours.decode(ids) == hf.decode(ids)


def test_precompiled_reference_is_graphemes(botchan, shared_path):
    """The reference normalizer (grapheme clusters by `regex`) is tokenizers' on the pool, and a
    cluster under 6 bytes that starts with a charsmap key is replaced whole (its marks dropped)."""
    hf = tokenizers.Tokenizer.from_file(botchan)
    blob = read_sentencepiece_model(str(shared_path(BOTCHAN))).normalizer.precompiled_charsmap
    rng = random.Random(5)
    for _ in range(2000):
        t = "".join(rng.choice(POOL) for _ in range(rng.randint(1, 12)))
        assert ref_precompiled(blob, t) == hf.normalizer.normalize_str(t), t
    assert hf.normalizer.normalize_str("\u00aa\u0301") == "a"  # per character it would keep the mark


def test_graphemes_after_a_key_every_bmp_character(botchan):
    """ª (a charsmap key) followed by each BMP character, and each character before ª + U+0301: the
    cluster boundaries the kernel finds are tokenizers' (unicode-segmentation's)."""
    ours, hf = _pair(botchan)
    texts = ["\u00aa" + chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000][::3]
    texts += [chr(c) + "\u00aa\u0301" for c in range(0x110000) if not 0xD800 <= c < 0xE000][::61]
    assert first_difference(ours.encode_batch(texts), _hf_ids(hf, texts), texts) is None


def test_botchan_variants(shared_path, tmp_path):
    """The charsmap in a Sequence with Lowercase / Replace / Strip, Metaspace alone with each scheme."""
    model = str(shared_path(BOTCHAN))
    blob = base64.b64encode(read_sentencepiece_model(model).normalizer.precompiled_charsmap).decode()
    pre_ = {"type": "Precompiled", "precompiled_charsmap": blob}
    rng = random.Random(11)
    texts = ["".join(rng.choice(POOL + "AbC  ") for _ in range(rng.randint(0, 16))) for _ in range(800)] + EDGE[::4]
    texts += ["<unk>a</s>", "</s></s>", "  </s>  x", "<s>", " ab  ab ", "\u2581\u2581x", "hhello", "h hello", "hh",
              "<s>hello", " hello", "\thello h"]
    for k, (pre, norm) in enumerate([
            (_meta("first"), {"type": "Sequence", "normalizers": [pre_, {"type": "Lowercase"}]}),
            (_meta("never", split=False), {"type": "Sequence", "normalizers": [
                {"type": "Strip", "strip_left": False, "strip_right": True}, pre_,
                {"type": "Replace", "pattern": {"String": "  "}, "content": "\u2581"}]}),
            (_meta("always"), {"type": "Sequence", "normalizers": [{"type": "Lowercase"}, pre_]}),
            ({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _meta("first")]},
             {"type": "Sequence", "normalizers": [{"type": "Strip", "strip_left": True, "strip_right": False}, pre_]}),
            (_meta("first"), {"type": "Sequence", "normalizers": [
                {"type": "Replace", "pattern": {"String": "h"}, "content": ""}, pre_]}),
            ({"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _meta("first")]},
             {"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"String": "h"}, "content": ""},
                                                  {"type": "Lowercase"}]}),
            (None, pre_)]):
        p = tmp_path / f"v{k}.json"
        p.write_text(spm_converted(model, pre=pre, norm=norm, byte_fallback=k % 2 == 1), encoding="utf-8")
        if pre is None:
            d = json.loads(p.read_text())
            d["pre_tokenizer"] = None
            p.write_text(json.dumps(d))
        ours, hf = _pair(str(p))
        assert first_difference(ours.encode_batch(texts), _hf_ids(hf, texts), texts) is None, k


def test_xlmr_style(shared_path, tmp_path):
    """XLM-R's layout: Precompiled + Replace(Regex " {2,}" -> " "), Metaspace alone, <s> $A </s> (pairs
    with </s> </s>), and <mask> added after the vocabulary with lstrip (and here an rstrip token)."""
    model = str(shared_path(BOTCHAN))
    blob = base64.b64encode(read_sentencepiece_model(model).normalizer.precompiled_charsmap).decode()
    d = json.loads(spm_converted(model, pre={"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True},
                                 norm={"type": "Sequence", "normalizers": [
                                     {"type": "Precompiled", "precompiled_charsmap": blob},
                                     {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}))
    n = len(d["model"]["vocab"])
    d["added_tokens"] += [
        {"id": n, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False,
         "special": True},
        {"id": n + 1, "content": "[R]", "single_word": False, "lstrip": False, "rstrip": True, "normalized": False,
         "special": False}]
    d["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                           "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    p = tmp_path / "xlmr.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    ours, hf = _pair(str(p))
    rng = random.Random(13)
    texts = ["The capital of France is <mask>.", "a  <mask>  b", "<mask>", " <mask>", "\u3000\t<mask>x", "x<mask>",
             "a [R]  b", "[R]", "[R]\u3000\n y", "a    b     c", "  lead", "trail   ", "<mask>[R] <mask>  [R]  "]
    texts += ["".join(rng.choice(POOL + "   <mask>[R]") for _ in range(rng.randint(0, 20))) for _ in range(1500)]
    texts += EDGE[::3]
    assert first_difference(ours.encode_batch(texts), _hf_ids(hf, texts), texts) is None
    for t in texts[:40]:
        e = hf.encode(t, t[::-1])
        assert ours.encode_pair(t, t[::-1]) == (e.ids, e.type_ids)
        assert ours.decode(e.ids) == hf.decode(e.ids)
    # the file's own truncation and padding, as encode_batch applies them
    d["truncation"] = {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0}
    d["padding"] = {"strategy": "BatchLongest", "direction": "Left", "pad_to_multiple_of": 8, "pad_id": 3,
                    "pad_type_id": 0, "pad_token": "<unk>"}
    p.write_text(json.dumps(d), encoding="utf-8")
    ours, hf = _pair(str(p))
    for pairs in (None, texts[100:150]):
        enc = hf.encode_batch(texts[:50] if pairs is None else list(zip(texts[:50], pairs)))
        got = ours.encode_batch_padded(texts[:50], pairs, add_special_tokens=True)
        assert got.input_ids.tolist() == [e.ids for e in enc]
        assert got.attention_mask.tolist() == [e.attention_mask for e in enc]


# ------------------------------------------------------------------ hand-made vocabularies

def _hand(tmp_path, vocab, unk_id=0, byte_fallback=False, pre=None, added=()):
    from tokenizers import Tokenizer, models

    tok = Tokenizer(models.Unigram([tuple(v) for v in vocab], unk_id, byte_fallback))
    if pre is not None:
        tok.pre_tokenizer = pre
    if added:
        tok.add_special_tokens(list(added))
    p = tmp_path / f"hand-{abs(hash((tuple(map(tuple, vocab)), unk_id, byte_fallback, str(pre)))):x}.json"
    tok.save(str(p))
    return _pair(str(p))


def test_ties_unknowns_and_byte_fallback(tmp_path):
    vocab = [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["ab", -2.0], ["abc", -3.0], ["c", -1.0], ["bc", -2.0],
             ["xy", -0.5], ["<0x78>", -5.0], ["<0xC3>", -5.0], ["<0xA9>", -5.0]]
    texts = ["abc", "ab", "abab", "xx", "xxy", "xyx", "zz", "\u00e9\u00e9", "a\u00e9x", "", "aqqqb", "bcab"]
    for bf in (False, True):
        ours, hf = _hand(tmp_path, vocab, 0, bf)
        for t in texts:
            assert ours.encode(t) == hf.encode(t).ids == ref_viterbi(
                [p for p, _ in vocab], [s for _, s in vocab], 0, bf, t), t


def test_no_unk_id_raises_like_tokenizers(tmp_path):
    ours, hf = _hand(tmp_path, [["a", -1.0], ["b", -2.0]], None)
    assert ours.encode("abba") == hf.encode("abba").ids
    with pytest.raises(Exception):
        hf.encode("abc")
    with pytest.raises(UnknownCharacterError):
        ours.encode("abc")
    with pytest.raises(UnknownCharacterError):
        ours.encode_batch(["ab", "abc"])


@st.composite
def _vocab_and_text(draw):
    alphabet = "ab\u00e9\u4e2d "
    pieces = draw(st.lists(st.text(alphabet, min_size=1, max_size=4), min_size=1, max_size=14, unique=True))
    scores = draw(st.lists(st.sampled_from([-1.0, -2.0, -0.5, -3.25, -1.0]), min_size=len(pieces),
                           max_size=len(pieces)))
    text = draw(st.text(alphabet + "x", max_size=24))
    return pieces, scores, text


@SETTINGS
@given(_vocab_and_text(), st.booleans())
def test_viterbi_property(tmp_path_factory, case, byte_fallback):
    from tokenizers import Tokenizer, models

    pieces, scores, text = case
    vocab = [("<unk>", -4.0)] + list(zip(pieces, scores))
    if byte_fallback:
        vocab += [(f"<0x{b:02X}>", -6.0) for b in b"x\xc3\xa9"]
    tok = Tokenizer(models.Unigram(vocab, 0, byte_fallback))
    ours = UnigramTokenizer(_model_of(json.loads(tok.to_str()), tmp_path_factory))
    want = tok.encode(text).ids
    assert ours.encode(text) == want
    assert ref_viterbi([p for p, _ in vocab], [s for _, s in vocab], 0, byte_fallback, text) == want


def _model_of(d, tmp_path_factory):
    from tltok_jit.loaders.hf_unigram import read_unigram_json

    p = tmp_path_factory.getbasetemp() / "prop.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    return read_unigram_json(str(p))


@pytest.mark.parametrize("name", ["first_nosplit_bytes", "nfc_lower_first", "nfkc_ws_meta"])
def test_added_tokens_in_text(trained, name):
    ours, hf = _pair(trained(name))
    texts = ["<pad>x", "a<pad>", "<pad><pad>", " <pad> b", "</s>", "x</s>y", "<unk>", "q<un", "<pad>\u00e9 a",
             "\uff1cpad\uff1e", "<pad>\uff1cpad\uff1e <pad>", "e\u0301<pad>e\u0301", "\u2460 <pad>\u2460",
             " \u2460x", "<pad> \u2460"]
    for t in texts:
        assert ours.encode(t) == hf.encode(t, add_special_tokens=False).ids, t
        assert ours.encode(t, add_special_tokens=True) == hf.encode(t).ids, t
    assert ours.encode_batch(texts) == _hf_ids(hf, texts)
    col = ours.encode_arrow(pa.array(texts + [None]))
    assert col.to_pylist() == _hf_ids(hf, texts) + [None]


# ------------------------------------------------------------------ columns, decode, the contract

def test_arrow_columns_and_threads(botchan, test_lines):
    ours, hf = _pair(botchan)
    # a 70000-byte word and charsmap expansions (U+FDFA becomes 18 characters) outgrow the first buffers
    rows = test_lines[:1500] + [None, "", "x" * 70000, "\u337f" * 3000, "\ufdfa" * 700 + " a" * 50, "ab " * 9000]
    col = pa.array(rows, pa.string())
    want = [None if r is None else hf.encode(r, add_special_tokens=False).ids for r in rows]
    for threads in (1, 2):
        got = ours.encode_arrow(col, num_threads=threads)
        assert got.to_pylist() == want
        counts = ours.count_arrow(col, num_threads=threads).to_pylist()
        assert counts == [None if w is None else len(w) for w in want]
    dec = ours.decode_arrow(pa.array(want, pa.list_(pa.uint32()))).to_pylist()
    assert dec == [None if w is None else hf.decode(w) for w in want]
    bad = pa.array([b"ok \xff x", b"fine"], pa.binary()).cast(pa.string(), safe=False)
    assert ours.encode_arrow(bad).to_pylist() == [ours.encode("ok \ufffd x"), ours.encode("fine")]


def test_decode_incremental_and_pieces(trained, test_lines):
    ours, hf = _pair(trained("first_nosplit_bytes"))
    for t in test_lines[::97]:
        ids = hf.encode(t, add_special_tokens=False).ids
        assert "".join(ours.token_pieces(ids)) == ours.decode(ids) == hf.decode(ids)
        state: dict = {}
        for k in range(0, len(ids), 3):
            ours.decode_incremental(ids[k:k + 3], state)
        ours.decode_incremental([], state, final=True)
        assert state["text"] == hf.decode(ids)


def test_padded_batch(botchan):
    ours, hf = _pair(botchan)
    texts = ["Hello there", "a much longer line of text, with words", ""]
    got = ours.encode_batch_padded(texts, pad_id=0)
    hf.enable_padding(pad_id=0)
    enc = hf.encode_batch(texts, add_special_tokens=False)
    assert got.input_ids.tolist() == [e.ids for e in enc]
    assert got.attention_mask.tolist() == [e.attention_mask for e in enc]


@pytest.mark.parametrize("add", [True, False])
def test_pairs_and_type_ids(trained, test_lines, add):
    ours, hf = _pair(trained("nfc_lower_first"))
    a, b = test_lines[:60], test_lines[300:360]
    for x, y in zip(a[:20], b[:20]):
        e = hf.encode(x, y, add_special_tokens=add)
        assert ours.encode_pair(x, y, add_special_tokens=add) == (e.ids, e.type_ids)
    hf.enable_padding(pad_id=1, pad_type_id=0)
    for pairs in (None, b):
        for trunc in (None, ("longest_first", "right"), ("longest_first", "left")):
            if trunc is None:
                hf.no_truncation()
                opts = {}
            else:
                hf.enable_truncation(max_length=24, strategy=trunc[0], direction=trunc[1])
                opts = dict(truncation=trunc[0], max_length=24, truncation_side=trunc[1])
            enc = hf.encode_batch(a if pairs is None else list(zip(a, pairs)), add_special_tokens=add)
            got = ours.encode_batch_padded(a, pairs, add_special_tokens=add, pad_id=1, **opts)
            assert got.input_ids.tolist() == [e.ids for e in enc]
            assert got.attention_mask.tolist() == [e.attention_mask for e in enc]
            if pairs is not None:
                assert got.token_type_ids.tolist() == [e.type_ids for e in enc]
    got = ours.encode_batch_padded(pa.array(a), pa.array(b), add_special_tokens=add, pad_id=1)
    hf.no_truncation()
    assert got.input_ids.tolist() == [e.ids for e in hf.encode_batch(list(zip(a, b)), add_special_tokens=add)]
    hf.no_padding()


def test_pickle(botchan):
    ours = tltok_jit.from_file(botchan)
    again = pickle.loads(pickle.dumps(ours))
    assert again.encode("naïve </s> text") == ours.encode("naïve </s> text")


def test_warm_compiles_what_production_runs(botchan):
    """warm() and production calls share one compiled variant per kernel."""
    K.warm()
    ours = tltok_jit.from_file(botchan)
    ours.encode("warm ü 中")
    ours.encode_batch(["a", "b c"])
    ours.encode_arrow(pa.array(["x", None]))
    for kernel in (K.encode_one, K.encode_rows):
        assert len(kernel.signatures) == 1, (kernel, kernel.signatures)


# ------------------------------------------------------------------ refusals

def _edited(path, tmp_path, edit) -> str:
    d = json.loads(open(path, encoding="utf-8").read())
    edit(d)
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    return str(p)


REFUSED = [
    ("normalizer.type", lambda d: d.update(normalizer={"type": "NFD"})),
    ("normalizer.normalizers[1].type", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Lowercase"}, {"type": "NFKC"}]})),
    ("normalizer.normalizers[1].type", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Lowercase"}, {"type": "StripAccents"}]})),
    ("normalizer.pattern", lambda d: d.update(normalizer={"type": "Replace", "pattern": {"Regex": " +|x"},
                                                          "content": " "})),
    ("pre_tokenizer.type", lambda d: d.update(pre_tokenizer={"type": "ByteLevel"})),
    ("pre_tokenizer.pretokenizers[1].type", lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        _meta(), {"type": "WhitespaceSplit"}]})),
    ("pre_tokenizer.prepend_scheme", lambda d: d.update(pre_tokenizer=_meta("sometimes"))),
    ("normalizer.strip_left", lambda d: d.update(normalizer={"type": "Strip"})),
    ("pre_tokenizer.replacement", lambda d: d.update(pre_tokenizer={"type": "Metaspace"})),
    ("post_processor.type", lambda d: d.update(post_processor={"type": "RobertaProcessing"})),
    ("decoder.type", lambda d: d.update(decoder={"type": "WordPiece"})),
    ("decoder.decoders[0].type", lambda d: d.update(decoder={"type": "Sequence", "decoders": [{"type": "CTC"}]})),
    ("added_tokens[0].single_word", lambda d: d["added_tokens"][0].update(single_word=True)),
    ("model.unk_id", lambda d: d["model"].update(unk_id=10**6)),
    ("model.vocab[3]", lambda d: d["model"]["vocab"].__setitem__(3, ["x"])),
    ("model.dropout", lambda d: d["model"].update(dropout=0.1)),
    ("precompiled_charsmap", lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "AAAA"})),
    ("precompiled_charsmap", lambda d: d.update(normalizer={"type": "Precompiled", "precompiled_charsmap": "!!"})),
]


@pytest.mark.parametrize("field,edit", REFUSED, ids=[f"{r[0]}-{k}" for k, r in enumerate(REFUSED)])
def test_refused_fields(botchan, tmp_path, field, edit):
    path = _edited(botchan, tmp_path, edit)
    with pytest.raises(TokenizerFileError) as e:
        tltok_jit.from_file(path)
    assert field in str(e.value)
    if isinstance(e.value, UnsupportedTokenizerError):
        assert field.endswith(e.value.field) or e.value.field.endswith(field)


def test_damaged_charsmap_never_crashes(botchan, tmp_path):
    """A charsmap whose double array points anywhere: bounds-checked reads, no crash."""
    d = json.loads(open(botchan, encoding="utf-8").read())
    blob = bytearray(base64.b64decode(d["normalizer"]["precompiled_charsmap"]))
    rng = random.Random(1)
    for k in range(6):
        bad = bytearray(blob)
        for _ in range(200):
            bad[rng.randrange(4, min(len(bad), 40000))] = rng.randrange(256)
        if k == 5:
            bad = bad[:5000]
        d["normalizer"]["precompiled_charsmap"] = base64.b64encode(bytes(bad)).decode()
        p = tmp_path / f"bad{k}.json"
        p.write_text(json.dumps(d), encoding="utf-8")
        try:
            ours = tltok_jit.from_file(str(p))
        except TokenizerFileError:
            continue
        ours.encode_batch(EDGE[:300])


def test_scores_are_read_as_tokenizers_reads_them():
    """serde_json (no float_roundtrip) can read a score an ulp off the correctly rounded value, and
    Viterbi ties follow what it read: `tokenizers` writes back exactly what serde_f64 computes."""
    from tltok_jit.loaders.hf_unigram import serde_f64

    rng = random.Random(0)
    lits = []
    while len(lits) < 1500:
        k = rng.random()
        if k < 0.4:
            s = f"-{rng.randint(0, 30)}." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 25)))
        elif k < 0.6:
            s = repr(-rng.random() * 10 ** rng.randint(-5, 5))
        elif k < 0.8:
            s = f"-{rng.randint(1, 9)}.{rng.randint(0, 99)}e{rng.choice(['', '-', '+'])}{rng.randint(0, 330)}"
        else:
            s = f"-{rng.randint(10**18, 10**25)}.{rng.randint(0, 10**6)}"
        try:
            serde_f64(s)
        except OverflowError:
            continue
        lits.append(s)
    vocab = ",".join(f'["p{i}", {s}]' for i, s in enumerate(lits))
    hf = tokenizers.Tokenizer.from_str('{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":null,'
                                       '"post_processor":null,"decoder":null,"model":{"type":"Unigram","unk_id":0,'
                                       f'"vocab":[{vocab}],"byte_fallback":false}}}}')
    got = [v for _, v in json.loads(hf.to_str())["model"]["vocab"]]
    assert got == [serde_f64(s) for s in lits]
    assert sum(serde_f64(s) != float(s) for s in lits) > 100  # the two readings do differ
