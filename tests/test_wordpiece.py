"""WordPiece tokenizer.json files (the BERT family): ids, type ids, padded batches and decode equal
`tokenizers`' on all-MiniLM-L6-v2's file and on files trained here over the normalizer's options, on
the shared corpora and on generated Unicode text; a pure-Python reference checks the kernels."""

from __future__ import annotations

import functools
import json
import pickle
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tltok_jit
from tltok_jit.errors import PaddingError, TokenIdError, TokenizerFileError, UnsupportedTokenizerError
from tltok_jit.kernels import wordpiece as K
from tltok_jit.kinds.wordpiece import WordPieceTokenizer
from tltok_jit.unicode import bert_data as D
from tltok_jit.unicode.bert import CJK_RANGES

tokenizers = pytest.importorskip("tokenizers")
pa = pytest.importorskip("pyarrow")

MINILM = "tokenizers/minilm/tokenizer.json"
CORPORA = "corpora"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def minilm_path(shared_path):
    return shared_path(MINILM)


@pytest.fixture(scope="module")
def ours(minilm_path):
    return tltok_jit.from_file(minilm_path)


@pytest.fixture(scope="module")
def hf(minilm_path):
    t = tokenizers.Tokenizer.from_file(str(minilm_path))
    t.no_padding()
    t.no_truncation()
    return t


@pytest.fixture(scope="module")
def hf_file_settings(minilm_path):
    return tokenizers.Tokenizer.from_file(str(minilm_path))


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


def hf_ids(hf, texts, add_special_tokens=False):
    return [e.ids for e in hf.encode_batch(list(texts), add_special_tokens=add_special_tokens)]


def first_difference(ours_ids, hf_ids_, texts):
    for t, a, b in zip(texts, ours_ids, hf_ids_):
        if a != b:
            return f"{t[:120]!r}: ours {a[:30]} tokenizers {b[:30]}"
    return None


# ------------------------------------------------------------------ a pure-Python reference

def _set(ranges) -> set[int]:
    return {c for r in ranges for c in range(r[0], r[-1] + 1)}


@functools.lru_cache(maxsize=1)
def _ref_tables():
    lower = {}
    for start, count, delta in D.LOWER_RUNS:
        for c in range(start, start + count):
            lower[c] = chr(c + delta)
    for c, s in D.LOWER_MULTI.items():
        lower[c] = s
    return (_set(D.DROP), _set(D.SPACE), _set(D.PUNCT), _set(D.MARK), _set(D.DECOMP), _set(D.NONSTARTER), lower)


def _is_cjk(c: str) -> bool:
    return any(a <= ord(c) <= b for a, b in CJK_RANGES)


def ref_nfd(text: str) -> str:
    _drop, _space, _punct, _mark, decomp, nonstarter, _lowers = _ref_tables()
    chars = [d for c in text for d in (unicodedata.normalize("NFD", c) if ord(c) in decomp else c)]
    ccc = [unicodedata.combining(c) if ord(c) in nonstarter else 0 for c in chars]
    out, run = [], []
    for c, k in zip(chars, ccc):
        if k == 0:
            out += [x for _, x in sorted(run, key=lambda p: p[0])]  # stable
            run = []
            out.append(c)
        else:
            run.append((k, c))
    out += [x for _, x in sorted(run, key=lambda p: p[0])]
    return "".join(out)


def ref_normalize(text: str, clean=True, chinese=True, strip=True, lower=True) -> str:
    """BertNormalizer from the shipped sets and unicodedata, one step at a time (HF's order)."""
    drop, space, _punct, mark, _decomp, _nonstarter, lowers = _ref_tables()
    if clean:
        text = "".join(" " if ord(c) in space else c for c in text if ord(c) not in drop)
    if chinese:
        text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
    if strip:
        text = "".join(c for c in ref_nfd(text) if ord(c) not in mark)
    if lower:
        text = "".join(lowers.get(ord(c), c) for c in text)
    return text


def ref_normalize_spec(text: str, n) -> str:
    """A loaded NormalizerSpec, step by step."""
    if n.nfd or n.strip_combining:
        lowers = _ref_tables()[6]
        combining = _set(D.COMBINING)
        if n.nfd:
            text = ref_nfd(text)
        steps = ["strip", "lower"] if n.strip_combining == "before" else ["lower", "strip"]
        for step in steps:
            if step == "strip" and n.strip_combining:
                text = "".join(c for c in text if ord(c) not in combining)
            if step == "lower" and n.lowercase:
                text = "".join(lowers.get(ord(c), c) for c in text)
        return text
    return ref_normalize(text, n.clean_text, n.handle_chinese_chars, n.strip_accents, n.lowercase)


def ref_words(text: str, mode: int) -> list[str]:
    _drop, space, punct, *_ = _ref_tables()
    if mode == K.PRE_NONE:
        return [text] if text else []
    if mode == K.PRE_WHITESPACE:
        word, rspace = _set(D.RE_WORD), _set(D.RE_SPACE)
        kinds = ["s" if ord(c) in rspace else "w" if ord(c) in word else "o" for c in text]
        words, start = [], 0
        for k in range(1, len(text) + 1):
            if k == len(text) or kinds[k] != kinds[start]:
                if kinds[start] != "s":
                    words.append(text[start:k])
                start = k
        return words
    words, cur = [], []
    for c in text:
        if ord(c) in space and mode != K.PRE_PUNCT:
            if cur:
                words.append("".join(cur))
            cur = []
        elif mode in (K.PRE_BERT, K.PRE_PUNCT) and ord(c) in punct:
            if cur:
                words.append("".join(cur))
            words.append(c)
            cur = []
        else:
            cur.append(c)
    if cur:
        words.append("".join(cur))
    return words


def ref_wordpiece(word: str, vocab: dict, prefix: str, unk: int, max_chars: int) -> list[int]:
    if len(word) > max_chars:
        return [unk]
    out, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            sub = word[start:end] if start == 0 else prefix + word[start:end]
            if sub in vocab:
                out.append(vocab[sub])
                break
            end -= 1
        else:
            return [unk]
        start = end
    return out


def ref_encode(tok: WordPieceTokenizer, text: str) -> list[int]:
    m = tok.model
    n = m.normalizer
    added = sorted(m.added, key=lambda t: -len(t.content))
    out, seg, i = [], [], 0

    def flush():
        s = "".join(seg)
        if n is not None:
            s = ref_normalize_spec(s, n)
        for w in ref_words(s, m.pre_mode):
            out.extend(ref_wordpiece(w, m.vocab, m.prefix, m.unk_id, m.max_chars))
        seg.clear()

    while i < len(text):
        hit = next((t for t in added if text.startswith(t.content, i)), None)
        if hit is None:
            seg.append(text[i])
            i += 1
        else:
            flush()
            out.append(hit.id)
            i += len(hit.content)
    flush()
    return out


# ------------------------------------------------------------------ the character tables

def test_tables_are_what_tokenizers_does():
    """Every code point, measured again from tokenizers, against the shipped sets (bert_data)."""
    from tltok_jit.unicode import bert_generate as G

    m = G.measure()
    assert m["version"] == D.TOKENIZERS_VERSION
    for key, shipped in (("drop", D.DROP), ("space", D.SPACE), ("punct", D.PUNCT), ("mark", D.MARK),
                         ("decomp", D.DECOMP), ("combining", D.COMBINING), ("re_word", D.RE_WORD),
                         ("re_space", D.RE_SPACE)):
        assert set(m[key]) == _set(shipped), key
    lowers = _ref_tables()[6]
    assert {c: s for c, s in m["lower"].items()} == lowers
    unknown = set(G.unknown_nonstarters(m))
    assert _set(D.NONSTARTER) == {c for c in range(0x110000) if not 0xD800 <= c < 0xE000
                                  and unicodedata.combining(chr(c)) and c not in unknown}


def test_version_differences_are_as_documented():
    """What tokenizers 0.23.3 does that no single Unicode version explains (found by the measurement;
    kept here so a change shows)."""
    drop, space, punct, mark, decomp, nonstarter, lowers = _ref_tables()
    # unassigned code points are not "other" to clean_text (the crate's is_other has no Cn)
    assert 0x0378 not in drop and 0xE0000 not in drop
    # format characters added after its Unicode version are kept
    assert 0x0890 not in drop and 0x13430 not in drop
    # old categories: U+1734 was Mn, U+166D and U+111C9 were Po
    assert 0x1734 in mark and 0x166D in punct and 0x111C9 in punct
    # newer punctuation and marks are neither
    assert 0x2E52 not in punct and 0x1ABF not in mark
    # NFD knows no decomposition of U+11938 (Unicode 13) and no class of U+1ABF
    assert 0x11938 not in decomp and 0x1ABF not in nonstarter
    # lowercase is Rust's Unicode 17: Garay and U+A7CB (beyond Python 3.11's unicodedata 14)
    assert lowers[0x10D50] == "\U00010D70" and lowers[0xA7CB] == "\u0264" and lowers[0x130] == "i\u0307"
    # tab, newline, carriage return are whitespace; vertical tab and U+0085 are dropped by clean_text first
    assert {9, 10, 13, 0x3000} <= space and {0x0B, 0x0C, 0x85} <= drop
    # no character is both (a Sequence of the two splits is their union, in either order)
    assert not space & punct
    # StripAccents drops every mark (Mn, Mc, Me) of its tables, BertNormalizer only nonspacing ones
    combining = _set(D.COMBINING)
    assert 0x0903 in combining and 0x0903 not in mark and 0x20DD in combining


# ------------------------------------------------------------------ golden: MiniLM on the corpora

def test_loads_as_wordpiece(ours, minilm_path):
    assert isinstance(ours, WordPieceTokenizer)
    assert ours.vocab_size == 30522
    assert ours.special_ids == {0, 100, 101, 102, 103}
    assert tltok_jit.from_file(minilm_path, minilm_path.parent / "tokenizer_config.json").vocab_size == 30522


def test_other_files_still_load_as_bpe(shared_path):
    enc = tltok_jit.from_file(shared_path("tokenizers/gpt2/tokenizer.json"))
    assert not isinstance(enc, WordPieceTokenizer)
    assert enc.encode("hello world") == [31373, 995]


def test_batch_with_special_tokens(ours, hf):
    texts = EDGE[:12] + ["Hello, world!"]
    assert ours.encode_batch(texts, add_special_tokens=True) == hf_ids(hf, texts, add_special_tokens=True)
    assert [ours.encode(t, add_special_tokens=True) for t in texts] == hf_ids(hf, texts, add_special_tokens=True)


def test_known_ids(ours):
    assert ours.encode("Hello, world!") == [7592, 1010, 2088, 999]
    assert ours.encode("Hello, world!", add_special_tokens=True) == [101, 7592, 1010, 2088, 999, 102]


@pytest.mark.parametrize("name", ["english-war-and-peace.txt", "chinese-sanguo-yanyi.txt", "emoji-test.txt"])
def test_corpus_lines_and_whole(ours, hf, corpus, name):
    text = corpus(name)
    lines = text.splitlines()[:6000]
    assert first_difference(ours.encode_batch(lines), hf_ids(hf, lines), lines) is None
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_udhr_whole_files_and_lines(ours, hf, udhr):
    texts = list(udhr.values())
    lines = [ln for t in texts for ln in t.splitlines()]
    assert first_difference(ours.encode_batch(texts), hf_ids(hf, texts), list(udhr)) is None
    assert first_difference(ours.encode_batch(lines), hf_ids(hf, lines), lines) is None
    assert [ours.encode(t) for t in texts[:20]] == hf_ids(hf, texts[:20])


def test_reference_on_udhr(ours, hf, udhr):
    """The pure-Python reference is itself exact, and equals the kernels."""
    for name, t in list(udhr.items())[::5]:
        ref = ref_encode(ours, t)
        assert ref == hf.encode(t, add_special_tokens=False).ids, name
        assert ref == ours.encode(t), name


EDGE = [
    "", " ", "\x00", "\ufffd", "a\x00b\ufffdc", "\t\n\r\x0b\x0c\x85\u2028\u3000\xa0x", "\x1c\x1d\x1e\x1fy",
    "e\u0301 \u00e9 E\u0301\u0327 a\u0327\u0301 a\u0301\u0327", "\u1e9b\u0323 \u0390 \u1f82",
    "ǅ İstanbul ΑΣ ß ẞ ﬁ", "中文字 丽 \U00020000 \u3400x\u4dbf", "한국어 각 日本語 カタカナ",
    "¿¡«»—–„“”‘’…·•※†‡§¶", "#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "a" * 100, "a" * 101, "é" * 100, "é" * 101,
    "Supercalifragilisticexpialidocious" * 4, "[CLS][SEP][PAD][MASK][UNK]", "[cls] [Sep", "x[CLS]y",
    "\u200b\u200d\u2060\ufeff\u00ad", "\U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1EF\U0001F1F5",
    "\ue000\U000f0000", "a\u0300\u0301\u0302\u0303\u0304" * 30, "\u0378\u0890\u1734\u166d\u111c9\u2e52",
    "\ua7cb\U00010d50\u1c89", "x\u0345\u0300\u0315\u035c\u0334y",
]


@pytest.mark.parametrize("text", EDGE)
def test_edge_cases(ours, hf, text):
    want = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == want
    assert ref_encode(ours, text) == want
    assert ours.decode(want) == hf.decode(want)


INTERESTING = st.sampled_from(
    "aAzZ09 \t\n\r\x0b\x0c\x00\x01\x7f\x85\xa0\u2000\u3000\ufffd\u200b\u00ad"
    ".,!?'\"-_()[]{}#@&*\\/:;<>¡¿«»—„‘’…·\u2e52\u166d\u00a7"
    "\u0300\u0301\u0302\u0308\u0327\u0323\u0345\u0334\u093c\u094d\u0e48\u1734\u1abf"
    "éÉñÑçÇøÅåßİıǅǈΣσςᾂΐ"
    "中文日本語한국\u3400\uf900\U00020000\U0002a700\U0002f800カ"
    "😀👍🏽\u200d\U0001F1EF\U0001F1F5\U00010d50\ua7cb"
    "[CLS][SEP]"
)


@SETTINGS
@given(st.lists(st.one_of(INTERESTING, st.characters(blacklist_categories=("Cs",))), max_size=60).map("".join))
def test_generated_unicode(ours, hf, text):
    want = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text) == want
    assert ref_encode(ours, text) == want


@SETTINGS
@given(st.lists(st.sampled_from(["a", "é", "\u0301", "x", "b", "##", "中"]), min_size=95, max_size=110).map("".join))
def test_generated_long_words(ours, hf, text):
    assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids


def test_long_runs_of_marks_leave_the_column_kernel(ours, hf):
    """A run of non-starters longer than a worker's reordering buffer (64) is encoded on the
    single-text path: same ids."""
    texts = ["a" + "\u0301\u0327" * 100 + "b", "x" + "\u0345\u0300" * 40, "plain"]
    assert ours.encode_batch(texts) == hf_ids(hf, texts)


# ------------------------------------------------------------------ decode

def test_decode(ours, hf, corpus, udhr):
    lines = corpus("english-war-and-peace.txt").splitlines()[:2000] + list(udhr.values())[:10] + EDGE
    for ids in hf_ids(hf, lines, add_special_tokens=True):
        assert ours.decode(ids) == hf.decode(ids)
        assert ours.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)


def test_decode_refuses_bad_ids(ours):
    with pytest.raises(TokenIdError):
        ours.decode([ours.vocab_size])
    with pytest.raises(TokenIdError):
        ours.decode([-1])


def test_decode_incremental_and_pieces(ours, hf):
    ids = hf.encode("Hello, world! don't stop. [SEP] naïve 中文", add_special_tokens=True).ids
    state: dict = {}
    parts = [ours.decode_incremental([i], state) for i in ids]
    ours.decode_incremental([], state, final=True)
    assert "".join(parts) == state["text"] == ours.decode(ids)
    assert "".join(ours.token_pieces(ids)) == ours.decode(ids)


@SETTINGS
@given(st.lists(st.integers(0, 30521), max_size=40), st.lists(st.integers(0, 60), max_size=6))
def test_decode_incremental_any_cuts(ours, hf, ids, cuts):
    from kinds_contract import check_incremental, check_pieces

    check_incremental(ours, ids, cuts)
    check_pieces(ours, ids)
    assert ours.decode(ids) == hf.decode(ids)


# ------------------------------------------------------------------ Arrow columns and threads

def test_arrow_columns(ours, hf):
    texts = ["Hello, world!", None, "", "naïve café 中文", "x" * 300, None, "[CLS] a"]
    want = [None if t is None else h for t, h in zip(texts, hf_ids(hf, [t or "" for t in texts]))]
    for typ in (pa.string(), pa.large_string(), pa.string_view()):
        arr = pa.array(texts, type=typ)
        assert ours.encode_arrow(arr).to_pylist() == want
        assert ours.count_arrow(arr).to_pylist() == [None if w is None else len(w) for w in want]
        assert ours.encode_arrow(arr.slice(2, 4)).to_pylist() == want[2:6]
    chunked = pa.chunked_array([pa.array(texts[:3]), pa.array(texts[3:])])
    out = ours.encode_arrow(chunked)
    assert isinstance(out, pa.ChunkedArray) and out.to_pylist() == want
    assert ours.encode_arrow(pa.array(texts).dictionary_encode()).to_pylist() == want
    assert ours.encode_arrow(pa.array([], pa.string())).to_pylist() == []
    decoded = ours.decode_arrow(ours.encode_arrow(pa.array(texts)))
    assert decoded.to_pylist() == [None if w is None else hf.decode(w) for w in want]


def test_arrow_invalid_utf8(ours, hf):
    rows = [b"ok \xff bad", b"fine", b"over\xc0\xafl", b"sur\xed\xa0\x80x", b"cut\xe4\xb8", b"big\xf4\x90\x80\x80",
            b"\xf0\x9f\x98", "caf\u00e9 \U0001F600".encode()]
    arr = pa.array(rows, type=pa.binary())
    assert ours.encode_arrow(arr).to_pylist() == hf_ids(hf, [r.decode("utf-8", "replace") for r in rows])
    arr = pa.array([b"ok \xff bad", b"fine"], type=pa.binary())
    with pytest.raises(tltok_jit.ArrowRowError) as e:
        ours.encode_arrow(arr, errors="strict")
    assert e.value.row == 0


def test_thread_count_invariance(ours, hf, corpus):
    text = corpus("english-war-and-peace.txt")[:400_000] + corpus("chinese-sanguo-yanyi.txt")[:100_000]
    docs = [text[i:i + 1500] for i in range(0, len(text), 1500)]
    want = hf_ids(hf, docs)
    arr = pa.array(docs)
    for threads in (1, 2, 3, 8):
        assert ours.encode_batch(docs, num_threads=threads) == want, threads
        assert ours.encode_arrow(arr, num_threads=threads).to_pylist() == want, threads


# ------------------------------------------------------------------ fixed-shape batches

def _hf_batch(hf_tok, texts, pairs, add):
    inputs = list(texts) if pairs is None else list(zip(texts, pairs))
    es = hf_tok.encode_batch(inputs, add_special_tokens=add)
    return ([e.ids for e in es], [e.type_ids for e in es], [e.attention_mask for e in es])


def _ours_batch(b):
    return b.input_ids.tolist(), b.token_type_ids.tolist(), b.attention_mask.tolist()


A = ["Hello world, this is a test.", "short", "word " * 150, "", "naïve café 中文 " * 20]
B = ["second", "a b c d e f " * 30, "y", "zz", "the other text " * 25]


@pytest.mark.parametrize("pairs", [None, B])
@pytest.mark.parametrize("add", [True, False])
def test_padded_file_settings(ours, hf_file_settings, pairs, add):
    """No options: the file's truncation (128, longest_first) and padding (fixed 128)."""
    got = ours.encode_batch_padded(A, pairs, add_special_tokens=add)
    assert _ours_batch(got) == _hf_batch(hf_file_settings, A, pairs, add)
    assert got.input_ids.shape == (len(A), 128)
    assert got.lengths.tolist() == [sum(m) for m in _hf_batch(hf_file_settings, A, pairs, add)[2]]


@pytest.mark.parametrize("pairs", [None, B])
@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("max_length", [9, 40])
def test_padded_truncation(ours, minilm_path, pairs, strategy, side, max_length):
    hf_tok = tokenizers.Tokenizer.from_file(str(minilm_path))
    hf_tok.enable_truncation(max_length, strategy=strategy, direction=side)
    hf_tok.enable_padding(direction=side, pad_id=0, pad_to_multiple_of=8)
    texts = A if pairs is None else [a + " more" for a in A]
    for add in (True, False):
        kwargs = dict(max_length=max_length, truncation=strategy, truncation_side=side, padding="longest",
                      padding_side=side, pad_to_multiple_of=8, add_special_tokens=add)
        try:
            want = _hf_batch(hf_tok, texts, pairs, add)
        except Exception:  # tokenizers cannot cut this batch (only_* on a text too short): we refuse too
            with pytest.raises(PaddingError):
                ours.encode_batch_padded(texts, pairs, **kwargs)
            continue
        assert _ours_batch(ours.encode_batch_padded(texts, pairs, **kwargs)) == want


def test_padded_overflow_and_stride(ours, minilm_path):
    hf_tok = tokenizers.Tokenizer.from_file(str(minilm_path))
    hf_tok.enable_truncation(16, stride=3)
    hf_tok.enable_padding(length=16, pad_id=0)
    es = hf_tok.encode_batch(A, add_special_tokens=True)
    rows = [(e.ids, e.type_ids) for e in es for e in [e] + e.overflowing]
    got = ours.encode_batch_padded(A, max_length=16, truncation=True, stride=3, padding="max_length",
                                   return_overflowing_tokens=True, add_special_tokens=True)
    assert list(zip(got.input_ids.tolist(), got.token_type_ids.tolist())) == rows
    assert got.overflow_to_sample_mapping.tolist() == [i for i, e in enumerate(es) for _ in [e] + e.overflowing]


def test_padded_arrow_and_int32(ours, hf_file_settings):
    got = ours.encode_batch_padded(pa.chunked_array([pa.array(A[:2]), pa.array(A[2:])]), dtype="int32")
    assert got.input_ids.dtype == np.int32
    assert _ours_batch(got) == _hf_batch(hf_file_settings, A, None, False)


def test_padded_refusals(ours):
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, truncation=False)  # "word " * 150 is longer than the fixed 128
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(["a", None])
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, ["one"])
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, truncation="only_second")
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, B, return_overflowing_tokens=True)
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, padding="do_not_pad", truncation=False, max_length=None)
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(A, padding="sideways")


# ------------------------------------------------------------------ other files: trained here, edited copies

@functools.lru_cache(maxsize=None)
def _trained_json(tmp: str, udhr_key: tuple, options: str) -> str:
    opts = json.loads(options)
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix=opts["prefix"],
                                                max_input_chars_per_word=opts["max_chars"]))
    if isinstance(opts["normalizer"], list):
        steps = [getattr(normalizers, name)() for name in opts["normalizer"]]
        tok.normalizer = steps[0] if len(steps) == 1 else normalizers.Sequence(steps)
    elif opts["normalizer"] is not None:
        tok.normalizer = normalizers.BertNormalizer(**opts["normalizer"])
    tok.pre_tokenizer = {"bert": pre_tokenizers.BertPreTokenizer(), "ws": pre_tokenizers.WhitespaceSplit(),
                         "punct": pre_tokenizers.Punctuation(), "white": pre_tokenizers.Whitespace(),
                         "seq": pre_tokenizers.Sequence([pre_tokenizers.Punctuation(), pre_tokenizers.WhitespaceSplit()]),
                         None: None}[opts["pre"]]
    trainer = trainers.WordPieceTrainer(vocab_size=opts["vocab"], continuing_subword_prefix=opts["prefix"],
                                        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.train_from_iterator(list(udhr_key), trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    if opts["post"] == "template":
        tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                           special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    elif opts["post"] == "bert":
        tok.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    if opts["decoder"]:
        tok.decoder = decoders.WordPiece(prefix=opts["prefix"], cleanup=opts["cleanup"])
    path = f"{tmp}/wp-{abs(hash(options)):x}.json"
    tok.save(path)
    return path


VARIANTS = [
    dict(normalizer=dict(lowercase=True), pre="bert", post="template", decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=dict(lowercase=False), pre="bert", post="bert", decoder=True, cleanup=False, prefix="##"),
    dict(normalizer=dict(lowercase=False, strip_accents=True), pre="bert", post=None, decoder=False, cleanup=True,
         prefix="##"),
    dict(normalizer=dict(lowercase=True, strip_accents=False, handle_chinese_chars=False), pre="bert",
         post="template", decoder=True, cleanup=True, prefix="@@"),
    dict(normalizer=dict(clean_text=False, lowercase=True), pre="ws", post="bert", decoder=True, cleanup=True,
         prefix="##"),
    dict(normalizer=None, pre="bert", post=None, decoder=True, cleanup=True, prefix=""),
    dict(normalizer=dict(lowercase=True), pre=None, post=None, decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=dict(lowercase=True), pre="punct", post="template", decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=dict(lowercase=False), pre="seq", post="bert", decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=["NFD", "Lowercase", "StripAccents"], pre="bert", post="template", decoder=True, cleanup=True,
         prefix="##"),
    dict(normalizer=["NFD", "StripAccents", "Lowercase"], pre="seq", post=None, decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=["StripAccents"], pre="bert", post=None, decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=["Lowercase"], pre="ws", post=None, decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=["NFD"], pre="bert", post=None, decoder=True, cleanup=True, prefix="##"),
    dict(normalizer=["NFD", "Lowercase", "StripAccents"], pre="white", post="template", decoder=True, cleanup=True,
         prefix="##"),
    dict(normalizer=dict(lowercase=False), pre="white", post=None, decoder=True, cleanup=True, prefix="##"),
]


@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_trained_files(udhr, tmp_path_factory, variant):
    opts = dict(VARIANTS[variant], max_chars=30 if variant % 2 else 100, vocab=3000)
    texts = list(udhr.values())
    path = _trained_json(str(tmp_path_factory.getbasetemp()), tuple(texts[::3]), json.dumps(opts, sort_keys=True))
    ours = tltok_jit.from_file(path)
    hf = tokenizers.Tokenizer.from_file(path)
    lines = [ln for t in texts[1::3] for ln in t.splitlines()][:3000] + EDGE
    assert first_difference(ours.encode_batch(lines), hf_ids(hf, lines), lines) is None
    for t in lines[:200]:
        assert ref_encode(ours, t) == hf.encode(t, add_special_tokens=False).ids
    for ids in hf_ids(hf, lines[:300], add_special_tokens=True):
        assert ours.decode(ids) == hf.decode(ids)
    for add in (True, False):
        got = ours.encode_batch_padded(lines[:50], lines[50:100], add_special_tokens=add, pad_id=0)
        hf.enable_padding(pad_id=0)
        assert _ours_batch(got) == _hf_batch(hf, lines[:50], lines[50:100], add)
        hf.no_padding()


def _edited(minilm_path, tmp_path, edit) -> str:
    d = json.loads(minilm_path.read_text(encoding="utf-8"))
    edit(d)
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    return str(p)


REFUSED = [
    ("normalizer.type", lambda d: d.update(normalizer={"type": "NFKC"})),
    ("normalizer.normalizers", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Lowercase"}, {"type": "NFD"}]})),
    ("normalizer.normalizers[1].type", lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "NFC"}]})),
    ("normalizer.strip_accents", lambda d: d["normalizer"].update(strip_accents="yes")),
    ("pre_tokenizer.type", lambda d: d.update(pre_tokenizer={"type": "Digits"})),
    ("pre_tokenizer.pretokenizers[0].type", lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"}, {"type": "Punctuation"}]})),
    ("pre_tokenizer.pretokenizers[1].behavior", lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Removed"}]})),
    ("post_processor.type", lambda d: d.update(post_processor={"type": "RobertaProcessing"})),
    ("decoder.type", lambda d: d.update(decoder={"type": "BPEDecoder"})),
    ("added_tokens[0].lstrip", lambda d: d["added_tokens"][0].update(lstrip=True)),
    ("added_tokens[].normalized", lambda d: d["added_tokens"][0].update(normalized=True)),
    ("model.unk_token", lambda d: d["model"].update(unk_token="<unk>")),
    ("model.dropout", lambda d: d["model"].update(dropout=0.1)),
    ("model.max_input_chars_per_word", lambda d: d["model"].update(max_input_chars_per_word=-1)),
    ("padding.strategy", lambda d: d["padding"].update(strategy="Bucket")),
    ("truncation.strategy", lambda d: d["truncation"].update(strategy="Middle")),
    ("post_processor.pair", lambda d: d["post_processor"].update(pair=d["post_processor"]["pair"][::-1])),
]


@pytest.mark.parametrize("field,edit", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_fields(minilm_path, tmp_path, field, edit):
    path = _edited(minilm_path, tmp_path, edit)
    with pytest.raises(TokenizerFileError) as e:
        tltok_jit.from_file(path)
    assert field in str(e.value)
    if isinstance(e.value, UnsupportedTokenizerError):
        assert e.value.field == field


def test_file_without_truncation_or_padding(minilm_path, tmp_path):
    path = _edited(minilm_path, tmp_path, lambda d: d.update(truncation=None, padding=None))
    ours = tltok_jit.from_file(path)
    hf = tokenizers.Tokenizer.from_file(path)
    hf.enable_padding(pad_id=0)
    assert _ours_batch(ours.encode_batch_padded(A, pad_id=0)) == _hf_batch(hf, A, None, False)
    with pytest.raises(PaddingError):
        ours.encode_batch_padded(["a", "a b c"])  # padding needed, no pad_id


# ------------------------------------------------------------------ the rest of the contract

def test_pickle(ours):
    again = pickle.loads(pickle.dumps(ours))
    assert again.encode("naïve [SEP] text") == ours.encode("naïve [SEP] text")


def test_double_array_holds_every_token(ours):
    base, check, value, root_a, root_b = ours._kargs[4:9]
    for s, i in list(ours.model.vocab.items())[::7]:
        key = np.frombuffer(s.encode("utf-8"), np.uint8)
        assert K.trie_lookup(base, check, value, root_a, key) == i
        if s.startswith("##") and len(s) > 2:
            assert K.trie_lookup(base, check, value, root_b, key[2:]) == i
    assert K.trie_lookup(base, check, value, root_a, np.frombuffer(b"qqqzzz", np.uint8)) == -1


def test_warm_compiles_what_production_runs(ours):
    """warm() and production calls share one compiled variant per kernel (a read-only / writable
    mismatch would show as a second signature)."""
    from tltok_jit.kernels import padding as P

    K.warm()
    P.warm()
    ours.encode("warm ü 中")
    ours.encode_batch(["a", "b c"])
    ours.encode_arrow(pa.array(["x", None]))
    for dt in ("int64", "int32"):
        ours.encode_batch_padded(["a b"], ["c"], dtype=dt)
        ours.encode_batch_padded(["a b"], dtype=dt)
    for kernel, n in ((K.encode_text, 1), (K.encode_rows, 1), (K.compact, 1), (K.build_double_array, 1),
                      (P.fill_pairs, 2), (P.fill_padded, 2)):
        assert len(kernel.signatures) == n, (kernel, kernel.signatures)


def test_canonical_order_of_spacing_marks(tmp_path):
    """Non-starters that accent stripping keeps (spacing marks with a combining class) come out in
    canonical order: a vocabulary trained on them tells the orders apart."""
    from tokenizers import models, normalizers, pre_tokenizers, trainers

    marks = ["\u302e", "\u1b44", "\U0001d16d", "\U0001d165", "\ua953"]
    words = [f"x{a}{b}" for a in marks for b in marks if a != b] + [f"y{a}\u0301{b}" for a in marks for b in marks]
    tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator([" ".join(words)] * 20, trainers.WordPieceTrainer(vocab_size=200,
                                                                                special_tokens=["[UNK]"]))
    path = tmp_path / "marks.json"
    tok.save(str(path))
    ours = tltok_jit.from_file(path)
    assert len({tuple(tok.encode(w).ids) for w in words}) > 1  # the vocabulary sees the order
    for w in words:
        assert ours.encode(w) == tok.encode(w, add_special_tokens=False).ids, w
        assert ref_encode(ours, w) == tok.encode(w, add_special_tokens=False).ids, w


@pytest.mark.parametrize("max_chars", [0, 1, 5])
def test_max_input_chars_per_word(minilm_path, tmp_path, max_chars):
    path = _edited(minilm_path, tmp_path, lambda d: d["model"].update(max_input_chars_per_word=max_chars))
    ours = tltok_jit.from_file(path)
    hf = tokenizers.Tokenizer.from_file(path)
    hf.no_padding()
    hf.no_truncation()
    texts = ["a ab abcde abcdef éééééé 中文 , !", "x" * 7 + "[SEP]" + "y" * 3] + EDGE
    assert ours.encode_batch(texts) == hf_ids(hf, texts)
    assert [ref_encode(ours, t) for t in texts] == hf_ids(hf, texts)


def test_added_tokens_beyond_the_vocabulary(minilm_path, tmp_path):
    def edit(d):
        d["added_tokens"] += [{"id": 30522, "content": "<new>", "single_word": False, "lstrip": False,
                               "rstrip": False, "normalized": False, "special": False},
                              {"id": 30523, "content": "<new>er", "single_word": False, "lstrip": False,
                               "rstrip": False, "normalized": False, "special": True}]
    path = _edited(minilm_path, tmp_path, edit)
    ours = tltok_jit.from_file(path)
    hf = tokenizers.Tokenizer.from_file(path)
    hf.no_padding()
    hf.no_truncation()
    texts = ["a <new> b", "<new>er<new>", "x<new>ery", "<NEW> <ne w>"]
    assert ours.vocab_size == 30524 and ours.special_ids == {0, 100, 101, 102, 103, 30523}
    assert ours.encode_batch(texts) == hf_ids(hf, texts)
    for ids in hf_ids(hf, texts, add_special_tokens=True):
        assert ours.decode(ids) == hf.decode(ids)
        assert ours.decode(ids, skip_special_tokens=False) == hf.decode(ids, skip_special_tokens=False)


def test_calls_from_several_python_threads(ours, hf, udhr):
    from concurrent.futures import ThreadPoolExecutor

    texts = list(udhr.values())[:24]
    want = hf_ids(hf, texts)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: ours.encode_batch(texts[k:] + texts[:k], num_threads=2), range(8)))
    assert all(g == want[k:] + want[:k] for k, g in enumerate(got))
