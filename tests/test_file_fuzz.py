"""Mutated tokenizer files never crash: each loads and runs, or is refused by a named TltokError.

The cases and the worker are in tests/file_fuzz.py (its docstring lists the mutations and the
outcomes). The default run is a fixed set of cases (seed 0); `--run-slow` adds a longer run with
another seed and the full-size real files as seeds too. bench/file_fuzz.py runs longer still.
The harness tests check that a segfault, a hang and a stray exception in the worker are each
reported as the failure they are, and that a failed case does not stop the cases after it.
"""

from __future__ import annotations

import json

import pytest

import file_fuzz as F

DEFAULT_CASES = 500
SLOW_CASES = 3000


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory):
    """Where the derived seed files are written (once: shrinking the tokenizer.json files takes seconds)."""
    return tmp_path_factory.mktemp("fuzz-seeds")


def _seeds(seed_dir, full: bool):
    seeds = F.prepare_seeds(seed_dir, full=full)
    missing = sorted(set(F.KINDS) - {s.kind for s in seeds})
    if missing:
        pytest.skip(f"no seed files for {missing}: the shared folder {F.TOKENIZERS} is missing files")
    return seeds


def _run(seeds, master_seed: int, n: int, workdir):
    results, seed_results = F.run_cases(range(n), seeds, master_seed, workdir)
    # The seeds themselves load and run (else every case would be a refusal and prove nothing).
    for name, r in (seed_results or {}).items():
        assert r["outcome"] == "ok", f"seed {name}: {json.dumps(r)[:2000]}"
    table = F.summary(results)
    report = "\n".join(f"{k}: " + ", ".join(f"{o} {n}" for o, n in sorted(c.items())) for k, c in table.items())
    print(f"\nfile fuzz, seed {master_seed}, {len(results)} cases\n{report}")
    bad = F.failures(results)
    assert not bad, f"{len(bad)} of {len(results)} cases failed:\n\n" + "\n\n".join(map(F.format_failure, bad[:10]))
    # every kind was fuzzed, and both outcomes occur for each (a kind whose every case is refused
    # would exercise no encoder)
    for kind in F.KINDS:
        c = table.get(kind)
        assert c and c["ok"] and c["refused"], f"{kind}: {dict(c or {})}"
    return results


def test_file_fuzz_default(seed_dir, tmp_path):
    _run(_seeds(seed_dir, full=False), 0, DEFAULT_CASES, tmp_path)


@pytest.mark.slow
def test_file_fuzz_long(seed_dir, tmp_path):
    _run(_seeds(seed_dir, full=True), 1, SLOW_CASES, tmp_path)


def test_make_case_is_deterministic(seed_dir):
    seeds = F.prepare_seeds(seed_dir, full=False)
    if not seeds:
        pytest.skip(f"no seed files: {F.TOKENIZERS} is missing")
    for i in (0, 1, 7, 123):
        a, b = F.make_case(seeds, 5, i), F.make_case(seeds, 5, i)
        assert (a.seed.name, a.mutation, a.data) == (b.seed.name, b.mutation, b.data)
        assert a.data != F._read(a.seed.path)
    assert F.make_case(seeds, 5, 1).data != F.make_case(seeds, 6, 1).data


def test_harness_reports_crash_hang_and_exception(seed_dir, tmp_path):
    """Probe cases (negative numbers) make the worker segfault, hang, or raise outside a case: each
    is reported as such, and the next case runs in a new worker."""
    seeds = F.prepare_seeds(seed_dir, full=False)
    seeds = [s for s in seeds if s.kind == "symbol_table"]
    if not seeds:
        pytest.skip(f"no seed files: {F.TOKENIZERS} is missing")
    runner = F.Runner(seeds, 0, tmp_path, case_timeout=20.0)
    try:
        crash = runner.run(-1)
        assert crash["outcome"] == "crash", crash
        assert "Segmentation fault" in crash["stderr_tail"] or "-11" in crash["why"], crash
        after = runner.run(0)
        assert after["outcome"] in ("ok", "refused"), after
        runner.case_timeout = 2.0
        hang = runner.run(-2)
        assert hang["outcome"] == "hang", hang
        runner.case_timeout = 20.0
        died = runner.run(-3)
        assert died["outcome"] == "crash" and "RuntimeError: probe" in died["stderr_tail"], died
        assert runner.run(1)["outcome"] in ("ok", "refused")
        assert runner.restarts == 3
    finally:
        runner.close()


def test_failures_are_failures():
    """What the worker reports as a non-TltokError, an unnamed file or a wrong round trip fails."""
    results = [
        {"index": 0, "kind": "tiktoken", "outcome": "ok"},
        {"index": 1, "kind": "tiktoken", "outcome": "refused", "error": "TokenizerFileError"},
        {"index": 2, "kind": "tiktoken", "outcome": "fail", "why": "load raised a non-TltokError"},
        {"index": 3, "kind": "tiktoken", "outcome": "crash"},
        {"index": 4, "kind": "tiktoken", "outcome": "hang"},
    ]
    assert [r["index"] for r in F.failures(results)] == [2, 3, 4]


def test_run_case_classifies(tmp_path):
    """run_case on a good file, a refused one, and one whose error would not name the file."""
    good = tmp_path / "units.txt"
    good.write_text("<blank> 0\na 1\nb 2\n", encoding="utf-8")
    assert F.run_case("symbol_table", str(good), "", "x")["outcome"] == "ok"
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\n", encoding="utf-8")
    r = F.run_case("symbol_table", str(bad), "", "x")
    assert r["outcome"] == "refused" and r["error"] == "TokenizerAssetError" and str(bad) in r["message"]
    r = F.run_case("tiktoken", str(tmp_path / "absent.tiktoken"), "r50k_base", "x")
    assert r["outcome"] == "fail" and r["error"] == "FileNotFoundError", r


# --------------------------------------------------------------------------------------------
# what the fuzzer found, one file each: refused by name (each was a TypeError, a ValueError from
# numpy, or an allocation sized by a stray id before)
# --------------------------------------------------------------------------------------------

def _tiny_tokenizer_json(**changes) -> dict:
    """A byte-level tokenizer.json with the 256 byte tokens and one merge."""
    from tltok_jit.model.byte_alphabet import bytes_to_unicode

    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    vocab["ab"] = 256
    d = {"model": {"type": "BPE", "vocab": vocab, "merges": ["a b"]},
         "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
         "decoder": {"type": "ByteLevel"}, "added_tokens": []}
    d.update(changes)
    return d


def _write_json(tmp_path, d, name="tokenizer.json", ensure_ascii=False):
    p = tmp_path / name
    p.write_text(json.dumps(d, ensure_ascii=ensure_ascii), encoding="utf-8")
    return p


def test_tiny_tokenizer_json_loads(tmp_path):
    import tltok_jit

    enc = tltok_jit.from_file(_write_json(tmp_path, _tiny_tokenizer_json()))
    assert enc.encode("abc") == [256, ord("c")]


@pytest.mark.parametrize("changes, field", [
    ({"decoder": {"type": "Strip", "content": " ", "start": {"Regex": "("}, "stop": 0}}, "decoder.start"),
    ({"decoder": {"type": "Strip", "content": " ", "start": 1, "stop": -1}}, "decoder.stop"),
    ({"decoder": {"type": "Strip", "content": 5, "start": 1, "stop": 0}}, "decoder.content"),
    ({"decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "a"}, "content": 5}]}},
     "decoder.decoders[0].content"),
    ({"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X"}}],
                         "special_tokens": {"X": {"ids": ["7"]}}}}, "special_tokens['X'].ids"),
    ({"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X"}}],
                         "special_tokens": {"X": {"ids": [-1]}}}}, "special_tokens['X'].ids"),
    ({"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": 5}],
                         "special_tokens": {}}}, "post_processor.single"),
    ({"post_processor": {"type": "TemplateProcessing", "single": [], "special_tokens": [1]}},
     "post_processor.special_tokens"),
    ({"added_tokens": [{"id": True, "content": "<x>"}]}, "added_tokens[0]"),
    ({"added_tokens": [{"id": -5, "content": "<x>"}]}, "added_tokens[0]"),
])
def test_hf_stage_fields_refused_by_name(tmp_path, changes, field):
    import tltok_jit

    p = _write_json(tmp_path, _tiny_tokenizer_json(**changes))
    with pytest.raises(tltok_jit.TokenizerFileError) as e:
        tltok_jit.from_file(p)
    assert str(p) in str(e.value) and field in str(e.value)


@pytest.mark.parametrize("token_id", [2**31 - 2, 2**40, 10**30, -1, True, 1.5, "7", None])
def test_hf_vocab_ids_refused_by_name(tmp_path, token_id):
    """A stray large id would size every table (a list and arrays of 2**31 entries) before."""
    import tltok_jit

    d = _tiny_tokenizer_json(decoder={"type": "Fuse"})  # a decoder chain: token strings indexed by id
    d["model"]["vocab"]["zz"] = token_id
    p = _write_json(tmp_path, d)
    with pytest.raises(tltok_jit.TokenizerFileError) as e:
        tltok_jit.from_file(p)
    assert str(p) in str(e.value) and "model.vocab['zz']" in str(e.value)


def test_hf_ids_may_leave_some_ids_free(tmp_path):
    import tltok_jit

    d = _tiny_tokenizer_json()
    d["model"]["vocab"]["zz"] = 2 * 258 + 1000
    enc = tltok_jit.from_file(_write_json(tmp_path, d))
    assert enc.n_vocab == 2 * 258 + 1001 and enc.decode([2 * 258 + 1000]) == "zz"


def test_hf_lone_surrogate_refused(tmp_path):
    import tltok_jit

    d = _tiny_tokenizer_json(decoder={"type": "Fuse"}, pre_tokenizer=None)
    d["model"]["vocab"]["\ud800"] = 257
    p = tmp_path / "tokenizer.json"
    p.write_text(json.dumps(d, ensure_ascii=True), encoding="ascii")
    with pytest.raises(tltok_jit.TokenizerFileError, match="lone surrogate") as e:
        tltok_jit.from_file(p)
    assert str(p) in str(e.value) and "model.vocab" in str(e.value)
    # a pair of escapes is one character: fine
    d["model"]["vocab"] = {"a": 0, "\U0001F600": 1}
    d["model"]["merges"] = []
    d["model"]["unk_token"] = "a"
    p.write_text(json.dumps(d, ensure_ascii=True), encoding="ascii")
    assert tltok_jit.from_file(p).decode([1]) == "\U0001F600"


def test_hf_unk_token_must_be_a_string(tmp_path):
    import tltok_jit

    d = _tiny_tokenizer_json(pre_tokenizer=None, decoder={"type": "Fuse"})
    d["model"]["unk_token"] = ["a"]
    p = _write_json(tmp_path, d)
    with pytest.raises(tltok_jit.TokenizerFileError, match="model.unk_token"):
        tltok_jit.from_file(p)


def test_units_stray_large_id_refused(tmp_path):
    import tltok_jit

    p = tmp_path / "units.txt"
    p.write_text("<blank> 0\na 1\nb 18446744073709551616\n", encoding="utf-8")
    with pytest.raises(tltok_jit.TokenizerAssetError, match="line 3: id 18446744073709551616 is too large") as e:
        tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("symbol_table", {"units": p}))
    assert str(p) in str(e.value)
    p.write_text("<blank> 0\na 1\nb 1029\n", encoding="utf-8")  # below 2 * 3 + 1024: kept
    tok = tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("symbol_table", {"units": p}))
    assert tok.vocab_size == 1030 and tok.decode([1, 1029]) == "ab"


def _spm_seed(shared_path):
    return shared_path("tokenizers/sentencepiece/botchan_en_bpe_1000.model").read_bytes()


def _spm_load(tmp_path, data: bytes):
    import tltok_jit

    p = tmp_path / "m.model"
    p.write_bytes(data)
    return p, lambda: tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("sentencepiece", {"model": p}))


def test_spm_trainer_field_of_wrong_wire_type_refused(tmp_path, shared_path):
    import tltok_jit

    top = F.pb_fields(_spm_seed(shared_path))
    trainer = next(f for f in top if f[0] == 2)
    trainer[2] = F.pb_write([f for f in F.pb_fields(trainer[2]) if f[0] != 3] + [[3, 2, b"\x01"]])
    p, load = _spm_load(tmp_path, F.pb_write(top))
    with pytest.raises(tltok_jit.TokenizerAssetError, match="TrainerSpec field 3 has wire type 2") as e:
        load()
    assert str(p) in str(e.value)


@pytest.mark.parametrize("payload", [5, 9, 1024])
def test_spm_charsmap_trie_past_the_blob_refused(tmp_path, shared_path, payload):
    """The trie size leaves fewer bytes than it names (numpy's ValueError before)."""
    import tltok_jit

    top = F.pb_fields(_spm_seed(shared_path))
    norm = next(f for f in top if f[0] == 3)
    blob = struct_pack_size(payload + 4) + bytes(payload)  # names 4 bytes more than follow
    norm[2] = F.pb_write([f for f in F.pb_fields(norm[2]) if f[0] != 2] + [[2, 2, blob]])
    p, load = _spm_load(tmp_path, F.pb_write(top))
    with pytest.raises(tltok_jit.TokenizerAssetError, match="precompiled_charsmap: trie size") as e:
        load()
    assert str(p) in str(e.value)


def struct_pack_size(n: int) -> bytes:
    return (n & ~3).to_bytes(4, "little")


def _with_charsmap(data: bytes, change) -> bytes:
    top = F.pb_fields(data)
    norm = next(f for f in top if f[0] == 3)
    sub = F.pb_fields(norm[2])
    cm = next(f for f in sub if f[0] == 2)
    cm[2] = change(bytearray(cm[2]))
    norm[2] = F.pb_write(sub)
    return F.pb_write(top)


def test_spm_charsmap_replacements_checked(tmp_path, shared_path):
    """A replacement string that is not UTF-8, or a trie value that starts no string, is refused: the
    normalized text would not be UTF-8 (normalize() raised UnicodeDecodeError before)."""
    import tltok_jit

    data = _spm_seed(shared_path)

    def break_strings(blob):
        n = int.from_bytes(blob[:4], "little")
        tail = blob[4 + n:]
        blob[4 + n:] = tail.replace(b"\0", b"\xff")
        return bytes(blob)

    def point_past(blob):
        n = int.from_bytes(blob[:4], "little")
        return bytes(blob[:4 + n] + blob[4 + n:4 + n + 16])  # strings cut: the trie's offsets run past them

    def cut_trie(blob):  # the units after the first half are read as replacement strings
        n = int.from_bytes(blob[:4], "little")
        return ((n // 2) & ~3).to_bytes(4, "little") + bytes(blob[4:])

    for change, message in ((break_strings, "is not UTF-8"), (point_past, "starts no string"),
                            (cut_trie, "precompiled_charsmap")):
        p, load = _spm_load(tmp_path, _with_charsmap(data, change))
        with pytest.raises(tltok_jit.TokenizerAssetError, match=message) as e:
            load()
        assert str(p) in str(e.value) and "precompiled_charsmap" in str(e.value)
