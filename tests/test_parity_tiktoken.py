"""Golden parity: tltok_jit.get_encoding(name) must produce exactly tiktoken 0.14's ids.

Encodings: r50k_base, p50k_base, cl100k_base, o200k_base; gpt2 as an alias of r50k_base when tltok_jit
knows that name. r50k_base, cl100k_base and o200k_base are embedded in the package, so they run without
the shared folder; p50k_base runs only where its rank file is present (shared/ or TLTOK_DATA), else its
absence is reported once, by test_rank_file_present, instead of by each of its ~85 tests.

Inputs: every edge-case string (tests/edge_cases.py, grouped by category), each shared corpus file
whole, a deterministic ~2 MB subset of the CPython stdlib sources (all of it with --run-slow), and
hypothesis-generated stress text. A mismatch reports the encoding, the case, the first differing
token index and the text around it, never a full diff.

Where tiktoken's behaviour is an artefact of its Python wrapper (see test_oracle_facts.py):
  - strings with surrogates: ours must give the ids tiktoken gives (utf-16 surrogatepass/replace
    fixup) for encode/encode_ordinary/encode_batch; for encode_to_numpy tiktoken raises
    UnicodeEncodeError, ours may either raise UnicodeEncodeError or return those same ids.
  - decode of an id outside the vocabulary: tiktoken raises KeyError; ours must raise KeyError too
    (for negative or >= 2**32 ids tiktoken raises OverflowError; ours may raise OverflowError,
    ValueError or KeyError).
"""

from __future__ import annotations

import hashlib
import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED, TIKTOKEN_FILES, has_shared_file
from edge_cases import edge_case_categories, edge_cases_labeled, has_surrogates, stress_text

tiktoken = pytest.importorskip("tiktoken")

ALL_ENCODINGS = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]
ENCODINGS = [n for n in ALL_ENCODINGS if has_shared_file(TIKTOKEN_FILES[n])]
MAX_REPORTED = 5


# ------------------------------------------------------------------------------------------------
# fixtures and reporting helpers
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request, tiktoken_oracle, ours):
    """(tiktoken oracle, our encoding) for one encoding name."""
    ref = tiktoken_oracle(request.param)  # skips (with the path) when the rank file is missing
    return ref, ours(request.param)


@pytest.mark.parametrize("name", ALL_ENCODINGS)
def test_rank_file_present(name, tiktoken_oracle, ours):
    """Every encoding has its rank file here (else this skips naming it), and ours agrees with tiktoken's
    vocabulary size and on a sentence."""
    ref, enc = tiktoken_oracle(name), ours(name)
    assert enc.n_vocab == ref.n_vocab
    text = "Hello world! It's 2024 and   spaces\n\tcafé 😀 <|endoftext|>"
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


def _fixup(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _as_ids(x) -> list[int]:
    return [int(t) for t in x]


def _short(s: str, n: int = 80) -> str:
    r = repr(s)
    return r if len(r) <= n else r[: n - 20] + "..." + r[-17:] + f" (len {len(s)})"


def describe_mismatch(ref, text: str, got, want, label: str) -> str:
    """First differing index, the tokens around it and the text around it."""
    got, want = _as_ids(got), _as_ids(want)
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
    try:
        off = len(ref.decode_bytes(want[:i]))
    except Exception:  # pragma: no cover
        off = 0
    raw = _fixup(text).encode("utf-8")
    lo, hi = max(0, off - 60), off + 60
    before = raw[lo:off].decode("utf-8", "replace")
    after = raw[off:hi].decode("utf-8", "replace")

    def toks(ids, a, b):
        out = []
        for t in ids[a:b]:
            try:
                out.append(f"{t}:{ref.decode_single_token_bytes(t)!r}")
            except Exception:
                out.append(f"{t}:<invalid>")
        return ", ".join(out)

    a, b = max(0, i - 3), i + 5
    return (
        f"[{label}] text {_short(text)}: first difference at token {i} (byte {off}); "
        f"len ours={len(got)} tiktoken={len(want)}\n"
        f"    text: ...{before!r} <<HERE>> {after!r}...\n"
        f"    tiktoken[{a}:{b}]: {toks(want, a, b)}\n"
        f"    ours    [{a}:{b}]: {toks(got, a, b)}"
    )


class Mismatches:
    """Collects failures of a loop over many cases and fails once with the first few."""

    def __init__(self, what: str):
        self.what = what
        self.items: list[str] = []
        self.count = 0
        self.total = 0

    def check_ids(self, ref, text, got, want, label):
        self.total += 1
        if _as_ids(got) != _as_ids(want):
            self.count += 1
            if len(self.items) < MAX_REPORTED:
                self.items.append(describe_mismatch(ref, text, got, want, label))

    def add(self, msg: str):
        self.total += 1
        self.count += 1
        if len(self.items) < MAX_REPORTED:
            self.items.append(msg)

    def ok(self):
        self.total += 1

    def finish(self):
        if self.count:
            pytest.fail(
                f"{self.what}: {self.count} of {self.total} cases differ; first {len(self.items)}:\n"
                + "\n".join(self.items),
                pytrace=False,
            )


def _builtin_name(e: BaseException) -> str:
    """The name of the built-in class an exception is (ours subclass ValueError / KeyError with
    a named type, e.g. DisallowedSpecialTokenError; tiktoken raises the built-in)."""
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


def outcome(fn):
    """('ok', ids) or ('raise', built-in exception type name, message)."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001
        return ("raise", _builtin_name(e), str(e))
    if isinstance(r, np.ndarray):
        return ("ok", _as_ids(r))
    if r and isinstance(r[0], (list, np.ndarray)):
        return ("ok", [_as_ids(x) for x in r])
    return ("ok", _as_ids(r))


# ------------------------------------------------------------------------------------------------
# API surface
# ------------------------------------------------------------------------------------------------


def test_api_surface(pair):
    ref, enc = pair
    assert enc.name == ref.name
    assert enc.n_vocab == ref.n_vocab
    assert enc.eot_token == ref.eot_token
    assert set(enc.special_tokens_set) == ref.special_tokens_set

    ids = enc.encode_ordinary("hello world")
    assert type(ids) is list and all(type(t) is int for t in ids)
    ids = enc.encode("hello <|endoftext|>", allowed_special="all")
    assert type(ids) is list and all(type(t) is int for t in ids)
    arr = enc.encode_to_numpy("hello world")
    assert isinstance(arr, np.ndarray) and arr.dtype == np.uint32 and arr.ndim == 1
    batch = enc.encode_batch(["a", "b c"], num_threads=2)
    assert type(batch) is list and all(type(x) is list for x in batch)
    batch = enc.encode_ordinary_batch(["a", "b c"], num_threads=2)
    assert type(batch) is list and all(type(x) is list for x in batch)
    assert isinstance(enc.decode(ids), str)
    assert isinstance(enc.decode_bytes(ids), bytes)
    assert isinstance(enc.decode_single_token_bytes(ids[0]), bytes)
    assert enc.encode_ordinary("") == [] and enc.encode("") == [] and enc.encode_batch([]) == []
    assert len(enc.encode_to_numpy("")) == 0


def test_gpt2_alias(tiktoken_oracle, ours):
    ref = tiktoken_oracle("gpt2")
    try:
        enc = ours("gpt2")
    except (KeyError, ValueError) as e:
        pytest.skip(f"tltok_jit.get_encoding('gpt2') not supported: {e}")
    assert enc.n_vocab == ref.n_vocab and enc.eot_token == ref.eot_token
    m = Mismatches("gpt2 encode_ordinary")
    for cat, s in edge_cases_labeled()[::7]:
        m.check_ids(ref, s, enc.encode_ordinary(s), ref.encode_ordinary(s), f"gpt2/{cat}")
    m.finish()


# ------------------------------------------------------------------------------------------------
# edge cases
# ------------------------------------------------------------------------------------------------

_BY_CATEGORY: dict[str, list[str]] = {}
for _cat, _s in edge_cases_labeled():
    _BY_CATEGORY.setdefault(_cat, []).append(_s)


@pytest.mark.parametrize("category", edge_case_categories())
def test_edge_encode_ordinary(pair, category):
    ref, enc = pair
    m = Mismatches(f"{ref.name} encode_ordinary [{category}]")
    for k, s in enumerate(_BY_CATEGORY[category]):
        m.check_ids(ref, s, enc.encode_ordinary(s), ref.encode_ordinary(s), f"{ref.name}/{category}#{k}")
    m.finish()


@pytest.mark.parametrize("category", edge_case_categories())
def test_edge_encode_special_modes(pair, category):
    """encode() with default arguments (may raise), allowed_special='all', disallowed_special=()."""
    ref, enc = pair
    m = Mismatches(f"{ref.name} encode [{category}]")
    modes = {
        "default": {},
        "allowed=all": {"allowed_special": "all"},
        "disallowed=()": {"disallowed_special": ()},
    }
    for k, s in enumerate(_BY_CATEGORY[category]):
        for mode, kw in modes.items():
            want = outcome(lambda: ref.encode(s, **kw))
            got = outcome(lambda: enc.encode(s, **kw))
            label = f"{ref.name}/{category}#{k} encode({mode})"
            if want[0] == "ok" and got[0] == "ok":
                m.check_ids(ref, s, got[1], want[1], label)
            elif want == got:
                m.ok()
            else:
                m.add(f"[{label}] text {_short(s)}: tiktoken {want[:2]} {want[2:]!r:.300}, ours {got[:2]} {got[2:]!r:.300}")
    m.finish()


@pytest.mark.parametrize("category", edge_case_categories())
def test_edge_encode_to_numpy(pair, category):
    ref, enc = pair
    m = Mismatches(f"{ref.name} encode_to_numpy [{category}]")
    for k, s in enumerate(_BY_CATEGORY[category]):
        label = f"{ref.name}/{category}#{k} encode_to_numpy"
        want = ref.encode(s, allowed_special="all")  # tiktoken's numpy path raises on surrogates
        try:
            got = enc.encode_to_numpy(s, allowed_special="all")
        except UnicodeEncodeError:
            if has_surrogates(s):
                m.ok()
            else:
                m.add(f"[{label}] text {_short(s)}: ours raised UnicodeEncodeError")
            continue
        if not (isinstance(got, np.ndarray) and got.dtype == np.uint32):
            m.add(f"[{label}] returned {type(got).__name__} {getattr(got, 'dtype', '')}, want ndarray[uint32]")
            continue
        m.check_ids(ref, s, got, want, label)
    m.finish()


@pytest.mark.parametrize("category", edge_case_categories())
def test_edge_roundtrip(pair, category):
    """decode(encode(s)) == s and decode_bytes == UTF-8 (surrogate-free strings)."""
    ref, enc = pair
    m = Mismatches(f"{ref.name} roundtrip [{category}]")
    for k, s in enumerate(_BY_CATEGORY[category]):
        if has_surrogates(s):
            continue
        ids = enc.encode(s, disallowed_special=())
        back, raw = enc.decode(ids), enc.decode_bytes(ids)
        if back == s and raw == s.encode("utf-8"):
            m.ok()
        else:
            m.add(f"[{ref.name}/{category}#{k}] {_short(s)}: decode -> {_short(back)}, decode_bytes -> {raw[:80]!r}")
    m.finish()


# ------------------------------------------------------------------------------------------------
# corpora
# ------------------------------------------------------------------------------------------------


def _corpus_files() -> list[str]:
    files = ["corpora/english-war-and-peace.txt", "corpora/chinese-sanguo-yanyi.txt", "corpora/emoji-test.txt"]
    udhr = SHARED / "corpora" / "udhr"
    if udhr.is_dir():
        files += sorted(f"corpora/udhr/{p.name}" for p in udhr.glob("*.txt"))
    else:
        files.append("corpora/udhr")  # skips with the path
    return files


@pytest.mark.parametrize("rel", _corpus_files())
def test_corpus_file(pair, shared_path, rel):
    ref, enc = pair
    path = shared_path(rel)
    text = path.read_text(encoding="utf-8")
    m = Mismatches(f"{ref.name} {rel}")
    want = ref.encode_ordinary(text)
    m.check_ids(ref, text, enc.encode_ordinary(text), want, f"{ref.name}/{rel} encode_ordinary")
    m.check_ids(ref, text, enc.encode_to_numpy(text), want, f"{ref.name}/{rel} encode_to_numpy")
    if enc.decode(want) != text:
        m.add(f"[{ref.name}/{rel}] decode(tiktoken ids) != file text")
    m.finish()


# ------------------------------------------------------------------------------------------------
# CPython stdlib sources
# ------------------------------------------------------------------------------------------------

STDLIB_SUBSET_BYTES = 2_000_000


def stdlib_files(everything: bool) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = [p for p in root.rglob("*.py") if "site-packages" not in p.parts and "dist-packages" not in p.parts]
    files.sort(key=lambda p: p.relative_to(root).as_posix())
    if everything:
        return files
    # deterministic pseudo-random subset: order by a hash of the relative path, take ~2 MB
    files.sort(key=lambda p: hashlib.sha1(p.relative_to(root).as_posix().encode()).hexdigest())
    out, total = [], 0
    for p in files:
        size = p.stat().st_size
        if size > 300_000:
            continue
        out.append(p)
        total += size
        if total >= STDLIB_SUBSET_BYTES:
            break
    return sorted(out)


def _check_stdlib(ref, enc, files):
    assert files, "no stdlib .py files found"
    m = Mismatches(f"{ref.name} stdlib ({len(files)} files)")
    for p in files:
        text = p.read_bytes().decode("utf-8", "replace")
        m.check_ids(ref, text, enc.encode_ordinary(text), ref.encode_ordinary(text), f"{ref.name} {p}")
    m.finish()


def test_stdlib_subset(pair):
    ref, enc = pair
    _check_stdlib(ref, enc, stdlib_files(everything=False))


@pytest.mark.slow
def test_stdlib_all(pair):
    ref, enc = pair
    _check_stdlib(ref, enc, stdlib_files(everything=True))


# ------------------------------------------------------------------------------------------------
# hypothesis
# ------------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402

_HSET = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=300, **_HSET)
@given(s=stress_text(allow_surrogates=False))
def test_property_roundtrip(pair, s):
    _, enc = pair
    assert enc.decode(enc.encode_ordinary(s)) == s
    assert enc.decode(enc.encode(s, disallowed_special=())) == s


@settings(max_examples=300, **_HSET)
@given(s=stress_text())
def test_property_encode_ordinary_parity(pair, s):
    ref, enc = pair
    got, want = enc.encode_ordinary(s), ref.encode_ordinary(s)
    assert _as_ids(got) == want, describe_mismatch(ref, s, got, want, f"{ref.name} hypothesis")
    got, want = enc.encode(s, allowed_special="all"), ref.encode(s, allowed_special="all")
    assert _as_ids(got) == want, describe_mismatch(ref, s, got, want, f"{ref.name} hypothesis allowed=all")


@pytest.mark.slow
@settings(max_examples=5000, **_HSET)
@given(s=stress_text())
def test_property_encode_ordinary_parity_long(pair, s):
    ref, enc = pair
    got, want = enc.encode_ordinary(s), ref.encode_ordinary(s)
    assert _as_ids(got) == want, describe_mismatch(ref, s, got, want, f"{ref.name} hypothesis")


# ------------------------------------------------------------------------------------------------
# special-token semantics
# ------------------------------------------------------------------------------------------------

SPECIAL_TEXTS = [
    "", "hello", "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", "x <|endoftext|>\n y",
    "<|endofprompt|>", "a<|endofprompt|>b<|endoftext|>c", "<|fim_prefix|>p<|fim_middle|>m<|fim_suffix|>s",
    "<|endof", "<|endoftext|", "<|ENDOFTEXT|>", "<<|endoftext|>>", "hello world", "say hello",
    "\ud800<|endoftext|>", "<|endoftext|>\ud83d\ude00", "<|endoftext|>'s", " <|endoftext|>  ",
]


def _arg_combos(ref):
    specials = sorted(ref.special_tokens_set)
    others = [t for t in specials if t != "<|endoftext|>"]
    allowed = [set(), "all", {"<|endoftext|>"}, frozenset(ref.special_tokens_set), {"<|notatoken|>"}]
    if others:
        allowed.append({others[0]})
    disallowed = ["all", (), {"<|endoftext|>"}, frozenset(), ["<|endoftext|>"]]
    if others:
        disallowed.append(set(others))
    return [(a, d) for a in allowed for d in disallowed]


def test_special_token_semantics(pair):
    ref, enc = pair
    m = Mismatches(f"{ref.name} special-token semantics")
    for a, d in _arg_combos(ref):
        for k, t in enumerate(SPECIAL_TEXTS):
            kw = dict(allowed_special=a, disallowed_special=d)
            label = f"{ref.name} text#{k} allowed_special={a!r} disallowed_special={d!r}"
            calls = {
                "encode": (lambda: ref.encode(t, **kw), lambda: enc.encode(t, **kw)),
                "encode_batch": (
                    lambda: ref.encode_batch([t, "ok"], num_threads=2, **kw),
                    lambda: enc.encode_batch([t, "ok"], num_threads=2, **kw),
                ),
            }
            if not has_surrogates(t):
                calls["encode_to_numpy"] = (lambda: ref.encode_to_numpy(t, **kw), lambda: enc.encode_to_numpy(t, **kw))
            for fname, (fr, fo) in calls.items():
                want, got = outcome(fr), outcome(fo)
                if want == got:
                    m.ok()
                else:
                    m.add(f"[{label} {fname}] text {_short(t)}:\n    tiktoken {want!r:.400}\n    ours     {got!r:.400}")
    m.finish()


def test_disallowed_special_accepts_arbitrary_strings(pair):
    """tiktoken quirk: disallowed_special is searched as plain strings, so a non-special string in it
    raises the same ValueError (tiktoken: encode("hello", disallowed_special={"hello"}) raises)."""
    ref, enc = pair
    m = Mismatches(f"{ref.name} disallowed_special with non-special strings")
    for d in [{"hello"}, {"hello", "<|endoftext|>"}, ["wor"]]:
        for t in ["hello", "hello world", "say hello", "nothing here", "<|endoftext|>"]:
            kw = dict(disallowed_special=d)
            for fname in ("encode", "encode_to_numpy", "encode_batch"):
                if fname == "encode_batch":
                    want = outcome(lambda: ref.encode_batch([t], **kw))
                    got = outcome(lambda: enc.encode_batch([t], **kw))
                else:
                    want = outcome(lambda: getattr(ref, fname)(t, **kw))
                    got = outcome(lambda: getattr(enc, fname)(t, **kw))
                if want == got:
                    m.ok()
                else:
                    m.add(f"[{fname}({t!r}, disallowed_special={d!r})]\n    tiktoken {want!r:.300}\n    ours     {got!r:.300}")
    m.finish()


def test_disallowed_special_error_message(pair):
    ref, enc = pair
    for tok in sorted(ref.special_tokens_set):
        text = f"prefix {tok} suffix"
        with pytest.raises(ValueError) as want:
            ref.encode(text)
        with pytest.raises(ValueError) as got:
            enc.encode(text)
        assert type(got.value).__mro__[1] is ValueError  # DisallowedSpecialTokenError, a ValueError
        assert got.value.token == tok
        assert str(got.value) == str(want.value)


# ------------------------------------------------------------------------------------------------
# batches
# ------------------------------------------------------------------------------------------------


def _batch_texts(shared_path) -> list[str]:
    texts = [s for _, s in edge_cases_labeled()]
    try:
        eng = shared_path("corpora/english-war-and-peace.txt").read_text(encoding="utf-8")
    except pytest.skip.Exception:
        return texts
    lines = eng.splitlines(keepends=True)[:20000]
    return texts + lines + [eng[:200_000]]


@pytest.fixture(scope="module")
def batch_texts(shared_path):
    return _batch_texts(shared_path)


_BATCH_KWS = ({"allowed_special": "all"}, {"disallowed_special": ()})
_batch_expect_cache: dict[str, dict] = {}


def _batch_expected(ref, enc, texts) -> dict:
    """tiktoken's ids and our serial ids, computed once per encoding."""
    if ref.name not in _batch_expect_cache:
        exp = {"ordinary": ([ref.encode_ordinary(t) for t in texts], [_as_ids(enc.encode_ordinary(t)) for t in texts])}
        for kw in _BATCH_KWS:
            exp[repr(kw)] = ([ref.encode(t, **kw) for t in texts], [_as_ids(enc.encode(t, **kw)) for t in texts])
        _batch_expect_cache[ref.name] = exp
    return _batch_expect_cache[ref.name]


@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_batch_parity(pair, batch_texts, num_threads):
    """encode_ordinary_batch / encode_batch == tiktoken's ids == our serial calls, for any thread count."""
    ref, enc = pair
    texts = batch_texts
    exp = _batch_expected(ref, enc, texts)
    m = Mismatches(f"{ref.name} batch num_threads={num_threads}")
    runs = [("encode_ordinary_batch", "ordinary", lambda: enc.encode_ordinary_batch(texts, num_threads=num_threads))]
    for kw in _BATCH_KWS:
        runs.append((f"encode_batch({kw})", repr(kw), lambda kw=kw: enc.encode_batch(texts, num_threads=num_threads, **kw)))
    for fname, key, run in runs:
        got = run()
        want, serial = exp[key]
        if len(got) != len(texts):
            m.add(f"{fname} returned {len(got)} results for {len(texts)} texts")
            continue
        for k, (t, g, w, s) in enumerate(zip(texts, got, want, serial)):
            g = _as_ids(g)
            m.check_ids(ref, t, g, w, f"{ref.name} {fname}[{k}]")
            if g != s:
                m.add(f"[{ref.name} {fname}[{k}]] batch result != serial result for {_short(t)}")
    m.finish()


@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_batch_small_and_errors(pair, num_threads):
    ref, enc = pair
    assert enc.encode_batch([], num_threads=num_threads) == []
    assert enc.encode_ordinary_batch([], num_threads=num_threads) == []
    assert _as_ids(enc.encode_batch(["x"], num_threads=num_threads)[0]) == ref.encode("x")
    texts = ["fine", "also fine", "bad <|endoftext|> one", "fine again"]
    want, got = outcome(lambda: ref.encode_batch(texts, num_threads=num_threads)), outcome(
        lambda: enc.encode_batch(texts, num_threads=num_threads)
    )
    assert got == want


# ------------------------------------------------------------------------------------------------
# decoding
# ------------------------------------------------------------------------------------------------


def test_decode_single_token_bytes_all_ids(pair):
    """Every id 0..n_vocab+2: same bytes; ids tiktoken rejects (holes, >= n_vocab) must raise too."""
    ref, enc = pair
    m = Mismatches(f"{ref.name} decode_single_token_bytes")
    for i in range(ref.n_vocab + 3):
        want = outcome_str(lambda: ref.decode_single_token_bytes(i))
        got = outcome_str(lambda: enc.decode_single_token_bytes(i))
        if want[0] == "raise":
            if got[0] != "raise":
                m.add(f"id {i}: tiktoken raises {want[1]}, ours returns {got[1]!r:.100}")
            else:
                m.ok()
        elif got != want:
            m.add(f"id {i}: tiktoken {want!r:.200}, ours {got!r:.200}")
        else:
            m.ok()
    m.finish()


def test_decode_random_sequences(pair):
    ref, enc = pair
    rng = random.Random(99)
    valid = [i for i in range(ref.n_vocab) if _valid(ref, i)]
    m = Mismatches(f"{ref.name} decode")
    for k in range(500):
        ids = [rng.choice(valid) for _ in range(rng.randint(0, 30))]
        if k % 5 == 0:
            ids.append(ref.eot_token)
        want_b = ref.decode_bytes(ids)
        if enc.decode_bytes(ids) != want_b:
            m.add(f"decode_bytes({ids}) differs")
        for errors in ("replace", "ignore", "strict", "surrogateescape"):
            want = outcome_str(lambda: ref.decode(ids, errors=errors))
            got = outcome_str(lambda: enc.decode(ids, errors=errors))
            if want != got:
                m.add(f"decode({ids}, errors={errors!r}): tiktoken {want!r:.200}, ours {got!r:.200}")
            else:
                m.ok()
    # default errors is "replace"
    lead = ref.encode_single_token(b"\xf0")
    assert enc.decode([lead]) == ref.decode([lead]) == "\ufffd"
    m.finish()


def _valid(ref, i):
    try:
        ref.decode_single_token_bytes(i)
        return True
    except KeyError:
        return False


def outcome_str(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001
        return ("raise", _builtin_name(e))


def _bad_ids(ref):
    holes = [i for i in range(ref.n_vocab) if not _valid(ref, i)][:3]
    return [ref.n_vocab, ref.n_vocab + 1000, 2**32 - 1] + holes


def test_decode_invalid_ids_raise(pair):
    """Ids outside the vocabulary raise (any of KeyError / ValueError / OverflowError)."""
    ref, enc = pair
    for bad in _bad_ids(ref) + [-1, 2**32, 2**64]:
        for f in ("decode", "decode_bytes"):
            with pytest.raises((KeyError, ValueError, OverflowError)):
                getattr(enc, f)([0, bad])
        with pytest.raises((KeyError, ValueError, OverflowError)):
            enc.decode_single_token_bytes(bad)


def test_decode_invalid_ids_keyerror_like_tiktoken(pair):
    """Exception-type parity: tiktoken raises KeyError for an unknown id (>= n_vocab or a hole).
    (An exception class deriving from both KeyError and ValueError satisfies this and ValueError users.)"""
    ref, enc = pair
    for bad in _bad_ids(ref):
        for f in ("decode", "decode_bytes"):
            with pytest.raises(KeyError):
                getattr(ref, f)([0, bad])
            with pytest.raises(KeyError):
                getattr(enc, f)([0, bad])
        with pytest.raises(KeyError):
            enc.decode_single_token_bytes(bad)
