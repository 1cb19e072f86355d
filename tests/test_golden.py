"""Frozen oracle vectors (fixtures/golden/, format in tests/golden.py) against tltok_jit and the oracles.

The tltok_jit tests need neither an oracle nor the shared folder: the tiktoken encodings come from the
rank files embedded in the package (or TLTOK_DATA when it is set), the Hugging Face ones from the
tokenizer files in fixtures/. `test_installed_oracle_matches_frozen` runs where tiktoken / tokenizers are
installed and fails when the installed oracle no longer gives the frozen outputs, i.e. when an oracle
upgrade changed its ids: the fixture has to be refrozen (fixtures/README.md), after review.
"""

from __future__ import annotations

import pytest

import tltok_jit
from conftest import get_shared_path
from golden import (
    HF_FILES,
    TIKTOKEN_NAMES,
    build_tiktoken_oracle,
    hf_record,
    read_golden,
    read_texts,
    sha256_file,
    tiktoken_record,
)
from tltok_jit.loaders import known_encodings as registry

MAX_REPORTED = 5


class Mismatches:
    """Collects every mismatch of one test and fails once, with the first few and their texts."""

    def __init__(self, what: str, n: int):
        self.what, self.n, self.found = what, n, []

    def check(self, rec: dict, field: str, got, want) -> None:
        if got != want:
            self.found.append(f"  [{rec['cat']}] {rec['text'][:60]!r}: {field}: got {str(got)[:120]}, "
                              f"want {str(want)[:120]}")

    def finish(self) -> None:
        if self.found:
            shown = "\n".join(self.found[:MAX_REPORTED])
            pytest.fail(f"{self.what}: {len(self.found)} mismatches over {self.n} texts; first:\n{shown}")


@pytest.fixture(scope="module", params=["r50k_base", "gpt2", "cl100k_base", "o200k_base"])
def tiktoken_golden(request):
    name = request.param
    _, records = read_golden("r50k_base" if name == "gpt2" else name)
    return tltok_jit.get_encoding(name), records


def test_tiktoken_encodings_equal_frozen_vectors(tiktoken_golden):
    enc, records = tiktoken_golden
    m = Mismatches(f"{enc.name} vs fixtures/golden", len(records))
    for r in records:
        m.check(r, "encode_ordinary", enc.encode_ordinary(r["text"]), r["ids"])
        m.check(r, "encode(allowed_special='all')", enc.encode(r["text"], allowed_special="all"),
                r.get("special", r["ids"]))
        m.check(r, "decode", enc.decode(r["ids"]), r.get("decoded", r["text"]))
    m.finish()


def test_tiktoken_batches_equal_frozen_vectors(tiktoken_golden):
    enc, records = tiktoken_golden
    texts = [r["text"] for r in records]
    assert enc.encode_ordinary_batch(texts, num_threads=2) == [r["ids"] for r in records]
    assert enc.encode_batch(texts, allowed_special="all", num_threads=2) == \
        [r.get("special", r["ids"]) for r in records]


def _hf_encodings():
    yield "gpt2", "tokenizer.json", lambda: tltok_jit.from_file(get_shared_path(HF_FILES["gpt2"]))
    yield "gpt2", "vocab.json+merges.txt", lambda: tltok_jit.from_gpt2_files(
        get_shared_path("tokenizers/gpt2/vocab.json"), get_shared_path("tokenizers/gpt2/merges.txt"))
    yield "smollm2", "tokenizer.json", lambda: tltok_jit.from_file(get_shared_path(HF_FILES["smollm2"]))


@pytest.mark.parametrize("name,files,load", list(_hf_encodings()), ids=lambda x: x if isinstance(x, str) else "")
def test_hf_files_equal_frozen_vectors(name, files, load):
    _, records = read_golden(name)
    enc = load()
    m = Mismatches(f"{name} ({files}) vs fixtures/golden", len(records))
    for r in records:
        text = r["text"]
        m.check(r, "encode", enc.encode(text, allowed_special="all"), r["ids"])
        m.check(r, "encode(add_special_tokens=True)", enc.encode(text, allowed_special="all", add_special_tokens=True),
                r.get("with_special", r["ids"]))
        decoded = r.get("decoded", text)
        m.check(r, "decode", enc.decode(r["ids"]), decoded)
        m.check(r, "decode(skip_special_tokens=True)", enc.decode(r["ids"], skip_special_tokens=True),
                r.get("decoded_skip", decoded))
    m.finish()
    texts = [r["text"] for r in records]
    assert enc.encode_batch(texts, allowed_special="all", num_threads=2) == [r["ids"] for r in records]


# ------------------------------------------------------------------------------ the fixture itself


def test_frozen_vectors_cover_the_edge_cases():
    from edge_cases import edge_case_categories

    cats = {t["cat"].split(":")[0] for t in read_texts()}
    assert set(edge_case_categories()) <= cats
    assert {"udhr", "corpus"} <= cats
    assert len(read_texts()) > 5000


@pytest.mark.parametrize("name", TIKTOKEN_NAMES)
def test_tiktoken_vectors_name_the_published_rank_file(name):
    header, _ = read_golden(name)
    assert header["rank_file_sha256"] == registry.encoding_spec(name).sha256


@pytest.mark.parametrize("name", list(HF_FILES))
def test_hf_vectors_name_the_committed_tokenizer_file(name):
    header, _ = read_golden(name)
    assert header["tokenizer_file_sha256"] == sha256_file(get_shared_path(HF_FILES[name])), \
        f"{HF_FILES[name]} changed since its vectors were frozen: run fixtures/make_golden.py"


# ------------------------------------------------------------------------------ oracle upgrades


def _oracle_records(name: str, header: dict, records: list[dict], tmp_path):
    if header["oracle"] == "tiktoken":
        tiktoken = pytest.importorskip("tiktoken", reason="tiktoken not installed (test extra): oracle not compared")
        from golden import write_embedded_rank_file

        enc = build_tiktoken_oracle(name, write_embedded_rank_file(name, tmp_path))
        return tiktoken.__version__, [tiktoken_record(enc, r["cat"], r["text"]) for r in records]
    tokenizers = pytest.importorskip("tokenizers", reason="tokenizers not installed (test extra): oracle not compared")
    tok = tokenizers.Tokenizer.from_file(str(get_shared_path(HF_FILES[name])))
    return tokenizers.__version__, [hf_record(tok, r["cat"], r["text"]) for r in records]


@pytest.mark.parametrize("name", TIKTOKEN_NAMES + list(HF_FILES))
def test_installed_oracle_matches_frozen(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    header, records = read_golden(name)
    version, fresh = _oracle_records(name, header, records, tmp_path)
    changed = [(old, new) for old, new in zip(records, fresh) if old != new]
    if changed:
        old, new = changed[0]
        diff = {k: (old.get(k), new.get(k)) for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}
        pytest.fail(
            f"the installed {header['oracle']} {version} gives other outputs than the vectors frozen with "
            f"{header['oracle']} {header['oracle_version']} for {name} on {len(changed)} of {len(records)} texts; "
            f"first [{old['cat']}] {old['text'][:60]!r}: {str(diff)[:400]}. An oracle upgrade changed its ids: "
            f"review, then refreeze with `python3 fixtures/make_golden.py --keep-texts` (fixtures/README.md)")
