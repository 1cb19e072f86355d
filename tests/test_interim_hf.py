"""The Python encoder that answers for byte-level tokenizer.json models while the kernels compile
(tltok_jit.compile.python_encoder_hf), against Hugging Face `tokenizers` (the oracle) and against our kernels; the
Encoding's routing to it; and a real first use with an empty kernel cache in a fresh process.

Oracle: `tokenizers.Tokenizer.from_file(path).encode(text, add_special_tokens=...)`, which always
matches the added tokens in text: the Python encoder with every added token allowed must give its ids.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from conftest import SHARED, get_shared_path, has_shared_file, missing_reason
from edge_cases import edge_case_strings, stress_text
from test_hf_json import EDGE, HARD
from tltok_jit import Encoding
from tltok_jit.compile import python_encoder as interim, python_encoder_hf as interim_hf, background as warm
from tltok_jit.compile.python_encoder_hf import HFInterimEncoder, _merge_heap, _merge_rescan
from tltok_jit.loaders.hf_json import read_hf_json

tokenizers = pytest.importorskip("tokenizers")

REPO = Path(__file__).resolve().parent.parent
SUPPORTED = ["gpt2", "smollm2", "llama3", "qwen2.5", "mistral-nemo"]
MODELS = [n for n in SUPPORTED if has_shared_file(f"tokenizers/{n}/tokenizer.json")]


def _path(name: str) -> str:
    return str(get_shared_path(f"tokenizers/{name}/tokenizer.json"))


@functools.lru_cache(maxsize=None)
def _description(path: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_hf_json(path)


@functools.lru_cache(maxsize=None)
def _trio(path: str):
    """(the Python encoder, HF's tokenizer, every added token's text)."""
    d = _description(path)
    return HFInterimEncoder(d), tokenizers.Tokenizer.from_file(path), frozenset(t.content for t in d.added_tokens)


@pytest.fixture(scope="module", params=MODELS)
def name(request):
    return request.param


@pytest.fixture(scope="module")
def trio(name):
    return _trio(_path(name))


def _fixed(s: str) -> str:
    """Lone surrogates as U+FFFD (HF refuses them; our front end replaces them before encoding)."""
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _first_diff(a, b) -> int:
    return next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))


def assert_equal_hf(ours, hf, allowed, text: str, label: str = ""):
    got = ours.encode(text, allowed)
    want = hf.encode(text, add_special_tokens=False).ids
    if got != want:
        i = _first_diff(got, want)
        pytest.fail(f"{label or repr(text[:60])}: first difference at id {i}: ours {got[max(0, i - 3):i + 4]} "
                    f"HF {want[max(0, i - 3):i + 4]}")


# ---------------------------------------------------------------------------------------------
# the Python encoder against tokenizers


def test_edge_cases_equal_hf(trio):
    ours, hf, allowed = trio
    for s in edge_case_strings() + EDGE + HARD:
        assert_equal_hf(ours, hf, allowed, _fixed(s))


def corpus_texts() -> list[tuple[str, str]]:
    """(label, text): slices of the three corpora, every UDHR translation; missing files skip."""
    corpora = SHARED / "corpora"
    out = []
    for rel, size in (("english-war-and-peace.txt", 300_000), ("chinese-sanguo-yanyi.txt", 100_000),
                      ("emoji-test.txt", 200_000)):
        p = corpora / rel
        if not p.is_file():
            pytest.skip(missing_reason(p))
        out.append((rel, p.read_text(encoding="utf-8")[:size]))
    udhr = sorted((corpora / "udhr").glob("*.txt"))
    if not udhr:
        pytest.skip(missing_reason(corpora / "udhr"))
    out += [(p.name, p.read_text(encoding="utf-8")) for p in udhr]
    return out


def test_corpora_equal_hf(trio):
    ours, hf, allowed = trio
    for label, text in corpus_texts():
        assert_equal_hf(ours, hf, allowed, text, label)


def test_corpora_with_added_tokens_equal_hf(trio):
    """Added tokens between, inside and against words and whitespace of real text."""
    ours, hf, allowed = trio
    added = sorted(allowed)
    rng = random.Random(7)
    text = dict(corpus_texts())["english-war-and-peace.txt"][:60_000]
    cuts = sorted(rng.sample(range(len(text)), 300))
    parts, pos = [], 0
    for c in cuts:
        parts += [text[pos:c], rng.choice(added)]
        pos = c
    mixed = "".join(parts) + text[pos:]
    assert_equal_hf(ours, hf, allowed, mixed, "war and peace with added tokens")
    for a in added[:50]:
        for s in (a, a + a, " " + a + " ", "x" + a + "y", a[:-1], a[1:], a + "\n\n  " + a, "é" + a + "\u0301",
                  "12" + a + "34", a + "'s"):
            assert_equal_hf(ours, hf, allowed, s)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stress_text(allow_surrogates=False))
def test_random_text_equal_hf(trio, text):
    ours, hf, allowed = trio
    assert_equal_hf(ours, hf, allowed, text)


def test_ordinary_equals_the_kernels(name, trio):
    """With no added token, or only some, allowed, the others are text (HF has no such mode): equal to
    our kernels."""
    ours, _hf, allowed = trio
    from tltok_jit import from_file

    compiled = from_file(_path(name))
    assert compiled.compile_state == "compiled"  # the test suite compiles in the foreground
    texts = [_fixed(s) for s in edge_case_strings()[:2000] + EDGE + HARD] + [" ".join(sorted(allowed)[:40])]
    for t in texts:
        assert ours.encode_ordinary(t) == compiled.encode_ordinary(t), repr(t[:60])
        sub = frozenset(sorted(allowed)[::3])
        assert ours.encode(t, sub) == compiled.encode(t, allowed_special=sub, disallowed_special=()), repr(t[:60])


def test_heap_merge_equals_rescan():
    if not MODELS:
        pytest.skip(missing_reason(SHARED / "tokenizers/llama3/tokenizer.json"))
    path = _path("llama3" if "llama3" in MODELS else MODELS[0])
    d = _description(path)
    ranks = dict(zip(d.merges, range(len(d.merges))))
    rng = random.Random(5)
    for n in (2, 3, 10, 63, 64, 65, 200, 1000):
        for _ in range(20):
            piece = "".join(rng.choice("abcdeéxyz 日") for _ in range(n)).encode()
            parts = [piece[i:i + 1] for i in range(len(piece))]
            assert _merge_heap(parts, ranks) == _merge_rescan(list(parts), ranks)
    long = ("ab" * 5000).encode()
    assert b"".join(_merge_heap([long[i:i + 1] for i in range(len(long))], ranks)) == long


def test_long_pieces_equal_hf(trio):
    """Pieces past the heap threshold (one word, one run of digits, one run of punctuation)."""
    ours, hf, allowed = trio
    for s in ("x" * 3000, "abcde" * 400, "1" * 777, "!?" * 500, "日本" * 300, "é" * 999, " " * 2000 + "a"):
        assert_equal_hf(ours, hf, allowed, s)


def test_what_it_supports():
    for name in MODELS:
        assert interim_hf.supports(_description(_path(name))), name
        assert not interim.supports(_description(_path(name))), name
    p7 = SHARED / "tokenizers" / "mistral-7b" / "tokenizer.json"
    if p7.is_file():  # SentencePiece-style (character-level) BPE
        assert not interim_hf.supports(_description(str(p7)))
        with pytest.raises(ValueError, match="byte-level tokenizer.json"):
            HFInterimEncoder(_description(str(p7)))
    from tltok_jit.loaders.known_encodings import load_description

    assert not interim_hf.supports(load_description("r50k_base"))  # a rank file: interim.py's


def _variant(tmp_path, name: str, edit) -> str:
    d = json.loads(Path(_path(name)).read_text(encoding="utf-8"))
    edit(d)
    out = tmp_path / f"{name}-variant.json"
    out.write_text(json.dumps(d), encoding="utf-8")
    return str(out)


def test_refuses_what_it_does_not_reproduce(tmp_path):
    """A Python pretokenizer pipeline (a split pattern without a scanner) and a normalizer other than NFC
    keep to the kernels' path."""
    if "gpt2" not in MODELS:
        pytest.skip(missing_reason(SHARED / "tokenizers/gpt2/tokenizer.json"))

    def other_split(d):
        d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": r"\w+|\s+|[^\w\s]+"}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}

    def replace_norm(d):
        d["normalizer"] = {"type": "Replace", "pattern": {"String": "a"}, "content": "b"}

    def nfc(d):
        d["normalizer"] = {"type": "NFC"}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not interim_hf.supports(read_hf_json(_variant(tmp_path, "gpt2", other_split)))
        assert not interim_hf.supports(read_hf_json(_variant(tmp_path, "gpt2", replace_norm)))
        assert interim_hf.supports(read_hf_json(_variant(tmp_path, "gpt2", nfc)))


# ---------------------------------------------------------------------------------------------
# The Encoding while its kernels compile: every call it answers from the Python encoder equals the
# kernels' answer (and HF's where HF has the call).


def _pretend_compiling(monkeypatch, ready=()):
    monkeypatch.setattr(warm, "background_enabled", lambda: True)
    monkeypatch.setattr(warm, "all_ready", lambda *stages: False)
    monkeypatch.setattr(warm, "stage_ready", lambda stage: stage in ready)
    monkeypatch.setattr(warm, "start_background", lambda *args: True)
    monkeypatch.setattr(warm, "worker_running", lambda: True)


def test_encoding_answers_while_compiling(name, monkeypatch):
    import pyarrow as pa

    import tltok_jit

    path = _path(name)
    compiled = tltok_jit.from_file(path)
    assert compiled.compile_state == "compiled"
    hf = tokenizers.Tokenizer.from_file(path)
    _pretend_compiling(monkeypatch)
    enc = Encoding(_description(path))
    assert enc.compile_state == "interim"
    assert enc.n_vocab == compiled.n_vocab == hf.get_vocab_size(with_added_tokens=True)
    added = sorted(enc.special_tokens_set)
    texts = ([_fixed(s) for s in edge_case_strings()[:300] + EDGE + HARD]
             + ["\ud800 lone", "", f"x{added[0]}y {added[-1]}", "e\u0301 " + added[0] + "\u0301 \x04z"])
    for t in texts:
        for add in (False, True):
            want = hf.encode(_fixed(t), add_special_tokens=add).ids
            assert enc.encode(t, allowed_special="all", add_special_tokens=add) == want, repr(t[:60])
            assert enc.encode_to_numpy(t, allowed_special="all", add_special_tokens=add).tolist() == want
        assert enc.encode(t, disallowed_special=()) == compiled.encode(t, disallowed_special=())
        assert enc.encode_ordinary(t) == compiled.encode_ordinary(t)
        assert enc.count(t, allowed_special="all") == compiled.count(t, allowed_special="all")
    t = f"x{added[0]}y"
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode(t)
    with pytest.raises(ValueError, match="disallowed special token"):
        compiled.encode(t)
    for add in (False, True):
        want = [e.ids for e in hf.encode_batch([_fixed(t) for t in texts], add_special_tokens=add)]
        assert enc.encode_batch(texts, allowed_special="all", add_special_tokens=add) == want
        ids, offs = enc.encode_batch_to_numpy(texts, allowed_special="all", add_special_tokens=add)
        cids, coffs = compiled.encode_batch_to_numpy(texts, allowed_special="all", add_special_tokens=add)
        assert np.array_equal(ids, cids) and np.array_equal(offs, coffs)
    assert enc.encode_ordinary_batch(texts) == compiled.encode_ordinary_batch(texts)
    col = pa.chunked_array([pa.array(texts[:10] + [None]), pa.array(texts[10:60])])
    for kw in ({"allowed_special": "all"}, {"disallowed_special": ()}):
        assert enc.encode_arrow(col, **kw).equals(compiled.encode_arrow(col, **kw))
        assert enc.count_arrow(col, **kw).equals(compiled.count_arrow(col, **kw))
    assert enc.compile_state == "interim"
    all_ids = compiled.encode("héllo 世界 🙂 " + added[0], allowed_special="all")
    assert enc.decode(all_ids) == compiled.decode(all_ids) == hf.decode(all_ids, skip_special_tokens=False)
    assert enc.decode(all_ids, skip_special_tokens=True) == compiled.decode(all_ids, skip_special_tokens=True)
    assert enc.decode_bytes(all_ids[:3]) == compiled.decode_bytes(all_ids[:3])
    with pytest.raises(KeyError):
        enc.decode([compiled.n_vocab + 5])
    assert enc.decode_tokens_bytes(all_ids) == compiled.decode_tokens_bytes(all_ids)
    ids_with_added = [i for i in range(enc.n_vocab) if compiled.engine.valid[i]][-5:]  # the added tokens' ids
    assert enc.decode_tokens_bytes(ids_with_added) == compiled.decode_tokens_bytes(ids_with_added)
    assert enc.encode_single_token("hello") == compiled.encode_single_token("hello")
    assert enc.encode_single_token(added[0]) == compiled.encode_single_token(added[0])
    with pytest.raises(KeyError):
        enc.encode_single_token("hello world, not one token")
    assert enc.compile_state == "interim"


def test_waits_for_the_tokenizer_json_stage(name, monkeypatch):
    """A model whose kernels' path runs the tokenizer.json text path (Qwen2.5's NFC, SmolLM2's missing
    bytes) stays on the Python encoder until the worker's "hf" stage is ready too; GPT-2, Llama-3 and
    Mistral-Nemo need only what a rank file needs."""
    path = _path(name)
    hf = tokenizers.Tokenizer.from_file(path)
    _pretend_compiling(monkeypatch, ready={"single"})
    enc = Encoding(_description(path))
    assert enc.compile_state == "interim"
    text = "e\u0301 x\x04 12"
    assert enc.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    needs_hf = name in ("qwen2.5", "smollm2")
    assert interim_hf.needs_hf_kernels(_description(path)) == needs_hf
    assert enc.compile_state == ("interim" if needs_hf else "compiled")
    monkeypatch.setattr(warm, "stage_ready", lambda stage: stage in ("single", "hf"))
    assert enc.encode(text, allowed_special="all") == hf.encode(text, add_special_tokens=False).ids
    assert enc.compile_state == "compiled"


# ---------------------------------------------------------------------------------------------
# First use in a real process: empty kernel cache, background compiling (the suite's foreground
# setting removed)

FIRST_USE = """
import json, sys, time
t0 = time.perf_counter()
import tltok_jit
enc = tltok_jit.from_file(sys.argv[1])
text = sys.argv[2]
ids = enc.encode(text, allowed_special="all", add_special_tokens=True)
print(json.dumps({"state": enc.compile_state, "ids": ids, "seconds": time.perf_counter() - t0}))
"""


def _kill_my_workers(cache: Path) -> None:
    """Stop the compile worker(s) started for `cache` (by pid; nothing else is touched)."""
    for pid in subprocess.run(["pgrep", "-f", "tltok_jit.compile.worker"], capture_output=True,
                              text=True).stdout.split():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"TLTOK_KERNEL_CACHE={cache}".encode() in environ.split(b"\0"):
            try:
                os.kill(int(pid), 15)
            except ProcessLookupError:
                pass


def test_first_use_of_llama3_answers_from_python_at_once(tmp_path):
    path = SHARED / "tokenizers" / "llama3" / "tokenizer.json"
    if not path.is_file():
        pytest.skip(missing_reason(path))
    cache = tmp_path / "kernels"
    env = dict(os.environ)
    for k in ("TLTOK_COMPILE", "NUMBA_CACHE_DIR", "TLTOK_NO_CACHE"):
        env.pop(k, None)
    env["TLTOK_KERNEL_CACHE"] = str(cache)
    env["TLTOK_NO_SHIPPED_KERNELS"] = "1"
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    text = "Hello world! <|begin_of_text|>It's 2024, café 日本語 🙂<|eot_id|>"
    want = tokenizers.Tokenizer.from_file(str(path)).encode(text, add_special_tokens=True).ids
    try:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", FIRST_USE, str(path), text], env=env, capture_output=True,
                           text=True, timeout=120)
        wall = time.perf_counter() - t0
        assert p.returncode == 0, p.stderr
        res = json.loads(p.stdout)
        assert res["state"] == "interim"
        assert res["ids"] == want
        assert wall < 20, f"first ids after {wall:.1f} s (in-process {res['seconds']:.1f} s)"
        assert list(cache.glob("*/state-*/compile.lock")), "no background worker was started"
    finally:
        _kill_my_workers(cache)


def test_gpt2_files_answer_while_compiling(monkeypatch):
    """vocab.json + merges.txt (`from_gpt2_files`) is GPT-2's tokenizer.json model too."""
    from tltok_jit.loaders.gpt2_files import read_gpt2_files

    vocab = get_shared_path("tokenizers/gpt2/vocab.json")
    merges = get_shared_path("tokenizers/gpt2/merges.txt")
    hf = tokenizers.Tokenizer.from_file(_path("gpt2"))
    model = read_gpt2_files(vocab, merges)
    assert interim_hf.supports(model)
    _pretend_compiling(monkeypatch)
    enc = Encoding(model)
    assert enc.compile_state == "interim"
    for t in [_fixed(s) for s in edge_case_strings()[:1000] + EDGE + HARD]:
        assert enc.encode(t, allowed_special="all") == hf.encode(t, add_special_tokens=False).ids, repr(t[:60])
    assert enc.compile_state == "interim"


@pytest.mark.parametrize("pattern", [r"(?=a)|b", r"x*", r"\b", r"a|(?=b)", r"(?=x)|x+", r"\b|\w+",
                                     r"\s+(?!\S)|\s+", r"(?i:'s|'t)|\p{L}+"])
def test_split_isolated_equals_tokenizers_split(pattern):
    """The split, including patterns with empty matches (where Python's match iteration is not
    Oniguruma's), against `tokenizers`' own Split pre-tokenizer."""
    from tokenizers import Regex, pre_tokenizers

    from tltok_jit.compile.python_encoder_hf import split_isolated
    from tltok_jit.loaders.hf_json import compile_onig

    split = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    rx = compile_onig(pattern)
    # (?=x)|x+ on "xx": Python finds "xx" after the empty match at 0, Oniguruma moves on and splits
    for s in ["", "a", "ba", "bab", "aab b", "xx", "axxb", "xxyxx", "hello world  it's", " a\tb\n\nc ",
              "ſ's 'S ab'T", "日本 語"]:
        assert split_isolated(rx, s) == [p for p, _ in split.pre_tokenize_str(s)], (pattern, s)


def test_ignore_merges_pieces_equal_hf(trio):
    """Tokens that BPE of their own bytes does not reach (Llama-3 has 588): with `ignore_merges` the
    whole piece is that token; without it, the merges decide."""
    ours, hf, allowed = trio
    from tltok_jit.compile.python_encoder_hf import merge_parts

    unreached = []
    for tok in sorted(ours.ranks, key=lambda b: (len(b), b)):
        if len(tok) < 2 or merge_parts([tok[i:i + 1] for i in range(len(tok))], ours.merge_ranks) == [tok]:
            continue
        try:
            text = tok.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text not in allowed:
            unreached.append(text)
    for t in unreached[:400]:
        assert_equal_hf(ours, hf, allowed, t)
    assert_equal_hf(ours, hf, allowed, " ".join(unreached[:400]))
