"""The known tiktoken encodings: their split patterns, special tokens, rank files and where to get them.

Everything here is copied from tiktoken 0.14's `tiktoken_ext/openai_public.py` (patterns, special-token ids,
explicit vocabulary sizes, canonical URLs and sha256). `gpt2` is r50k_base under another name: tiktoken
builds it from the GPT-2 `vocab.bpe`/`encoder.json` pair, which gives the same ranks as
`r50k_base.tiktoken`, so we read that file.

Rank files are looked up, in order, in

1. each directory of `TLTOK_DATA` (separated by `os.pathsep`), as `DIR/<file>.tiktoken` or
   `DIR/tiktoken/<file>.tiktoken` (so `TLTOK_DATA=../shared/tokenizers` works);
2. the cache directory: `$TLTOK_CACHE_DIR`, else `$XDG_CACHE_HOME/tltok_jit`, else `~/.cache/tltok_jit`;
3. the copy embedded in the package (`tltok_jit/data/`: r50k_base, which gpt2 also reads, cl100k_base
   and o200k_base), so these work offline with no setup; p50k_base has none;
4. the network: `$TLTOK_DOWNLOAD_BASE/<file>.tiktoken` if that variable is set (a mirror, or a test
   server), else the canonical OpenAI URL, downloaded to a temporary file in the cache directory and
   renamed into place only after its sha256 matched. `TLTOK_OFFLINE=1` forbids this step.

Every file found, embedded or downloaded is checked against the published sha256 (about 2 ms for
o200k_base's 3.6 MB with hardware SHA; the verdict is also remembered per (path, size, mtime) for the
process). A mismatching file in `TLTOK_DATA` raises, and so does a mismatching embedded copy (a damaged
installation); a mismatching file in the cache directory (ours) is deleted and downloaded again.

`find_rank_file` returns a file on disk, so it never returns the embedded copy (which is compressed
inside the package); `load_description` is what reads the embedded copy.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import tempfile
import threading
import types
import urllib.error
from collections.abc import Mapping
from dataclasses import dataclass

from ..data import embedded_location, has_embedded, read_embedded
from .tiktoken_file import read_tiktoken_model
from ..errors import RankFileHashError, RankFileUnavailableError, TokenizerFileError  # noqa: F401
from ..model.description import ModelDescription
from ..model.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN

__all__ = [
    "EncodingSpec",
    "RankFileHashError",
    "RankFileUnavailableError",
    "cache_dir",
    "embedded_rank_data",
    "encoding_spec",
    "find_rank_file",
    "list_encoding_names",
    "load_description",
]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"


@dataclass(frozen=True)
class _RankFile:
    stem: str  # file name without ".tiktoken"
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.stem}.tiktoken"

    @property
    def url(self) -> str:
        return _BLOB + self.filename


_R50K = _RankFile("r50k_base", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930")
_P50K = _RankFile("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069")
_CL100K = _RankFile("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7")
_O200K = _RankFile("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")


@dataclass(frozen=True)
class EncodingSpec:
    """Everything about a known encoding except its ranks."""

    name: str
    rank_file: str  # file name, e.g. "r50k_base.tiktoken"
    url: str  # canonical download URL
    sha256: str
    pattern: str
    special_tokens: Mapping[str, int]
    pattern_kind: str
    explicit_n_vocab: int | None = None
    shared_special_ids: bool = False  # o200k_harmony: '<|endofprompt|>' and '<|reserved_200018|>' are both 200018


def _spec(name, rf: _RankFile, pattern, specials, kind, n_vocab=None) -> EncodingSpec:
    specials = dict(specials)
    shared = len(set(specials.values())) != len(specials)
    return EncodingSpec(name, rf.filename, rf.url, rf.sha256, pattern, types.MappingProxyType(specials),
                        kind, n_vocab, shared)


_O200K_SPECIALS = {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}
_HARMONY_SPECIALS = {
    **_O200K_SPECIALS,
    "<|startoftext|>": 199998,
    "<|endoftext|>": 199999,
    "<|reserved_200000|>": 200000,
    "<|reserved_200001|>": 200001,
    "<|return|>": 200002,
    "<|constrain|>": 200003,
    "<|reserved_200004|>": 200004,
    "<|channel|>": 200005,
    "<|start|>": 200006,
    "<|end|>": 200007,
    "<|message|>": 200008,
    "<|reserved_200009|>": 200009,
    "<|reserved_200010|>": 200010,
    "<|reserved_200011|>": 200011,
    "<|call|>": 200012,
} | {f"<|reserved_{i}|>": i for i in range(200013, 201088)}

_SPECS: dict[str, EncodingSpec] = {
    s.name: s
    for s in [
        _spec("gpt2", _R50K, R50K_PATTERN, {ENDOFTEXT: 50256}, "gpt2", 50257),
        _spec("r50k_base", _R50K, R50K_PATTERN, {ENDOFTEXT: 50256}, "gpt2", 50257),
        _spec("p50k_base", _P50K, R50K_PATTERN, {ENDOFTEXT: 50256}, "gpt2", 50281),
        _spec("p50k_edit", _P50K, R50K_PATTERN,
              {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}, "gpt2"),
        _spec("cl100k_base", _CL100K, CL100K_PATTERN,
              {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260,
               ENDOFPROMPT: 100276}, "cl100k"),
        _spec("o200k_base", _O200K, O200K_PATTERN, _O200K_SPECIALS, "o200k"),
        _spec("o200k_harmony", _O200K, O200K_PATTERN, _HARMONY_SPECIALS, "o200k"),
    ]
}


def list_encoding_names() -> list[str]:
    return list(_SPECS)


def encoding_spec(name: str) -> EncodingSpec:
    try:
        return _SPECS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown encoding {name!r}; known encodings: {', '.join(_SPECS)}") from None


def registry_defaults(name: str) -> tuple[str, dict[str, int]]:
    """(pattern, special tokens) of a known encoding name."""
    spec = encoding_spec(name)
    return spec.pattern, dict(spec.special_tokens)


def cache_dir() -> pathlib.Path:
    """Where downloaded rank files are kept (not created here)."""
    d = os.environ.get("TLTOK_CACHE_DIR")
    if d:
        return pathlib.Path(d).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return pathlib.Path(xdg).expanduser() / "tltok_jit"
    return pathlib.Path.home() / ".cache" / "tltok_jit"


def _data_candidates(filename: str) -> list[pathlib.Path]:
    out = []
    for d in os.environ.get("TLTOK_DATA", "").split(os.pathsep):
        if d:
            base = pathlib.Path(d).expanduser()
            out += [base / filename, base / "tiktoken" / filename]
    return out


_verdicts: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 hex digest
_lock = threading.Lock()


def _sha256_of(path: pathlib.Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        digest = _verdicts.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        with _lock:
            _verdicts[key] = digest
    return digest


def _read_verified(path: pathlib.Path, expected: str) -> bytes:
    """The contents of a rank file found (and hashed) earlier, hashed again as read: it may have been
    replaced since."""
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise RankFileHashError(f"{path}: sha256 mismatch: expected {expected}, got {actual} (the file changed "
                                "after it was verified)")
    return data


def _download(url: str, dest: pathlib.Path, expected: str) -> None:
    import urllib.request  # ~15 ms of imports (http, email, ssl) that a process with its files never needs

    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as resp:
            while block := resp.read(1 << 20):
                h.update(block)
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        actual = h.hexdigest()
        if actual != expected:
            raise RankFileHashError(
                f"{url}: sha256 mismatch: expected {expected}, got {actual}; the download was deleted")
        os.replace(tmp, dest)
        tmp = None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass


def _local_rank_file(spec: EncodingSpec, searched: list[str]) -> pathlib.Path | None:
    """The verified rank file in TLTOK_DATA or the cache directory, else None; appends what it looked at."""
    filename, expected = spec.rank_file, spec.sha256
    for cand in _data_candidates(filename):
        searched.append(str(cand))
        if cand.is_file():
            actual = _sha256_of(cand)
            if actual != expected:
                raise RankFileHashError(
                    f"{cand}: sha256 mismatch for {filename} (from TLTOK_DATA): expected {expected}, "
                    f"got {actual}")
            return cand
    cached = cache_dir() / filename
    searched.append(str(cached))
    if cached.is_file():
        if _sha256_of(cached) == expected:
            return cached
        cached.unlink(missing_ok=True)  # ours, and wrong: fetch it again
    return None


def embedded_rank_data(name: str) -> bytes | None:
    """The verified contents of the rank file of encoding `name` embedded in the package, or None if the
    package has no copy of it. Raises RankFileHashError if the copy does not have the published sha256."""
    spec = encoding_spec(name)
    data = read_embedded(spec.rank_file)
    if data is None:
        return None
    actual = hashlib.sha256(data).hexdigest()
    if actual != spec.sha256:
        raise RankFileHashError(
            f"{embedded_location(spec.rank_file)}: sha256 mismatch for the embedded {spec.rank_file}: "
            f"expected {spec.sha256}, got {actual} (a damaged installation: reinstall tltok-jit)")
    return data


def _download_rank_file(spec: EncodingSpec, searched: list[str]) -> pathlib.Path:
    name, filename, expected = spec.name, spec.rank_file, spec.sha256
    cached = cache_dir() / filename
    base = os.environ.get("TLTOK_DOWNLOAD_BASE")
    url = base.rstrip("/") + "/" + filename if base else spec.url
    if os.environ.get("TLTOK_OFFLINE", "") not in ("", "0"):
        raise RankFileUnavailableError(
            f"{filename} for encoding {name!r} not found (searched {', '.join(searched)}) and TLTOK_OFFLINE "
            f"forbids downloading it from {url}")
    try:
        _download(url, cached, expected)
    except (urllib.error.URLError, OSError) as e:
        raise RankFileUnavailableError(
            f"{filename} for encoding {name!r} not found (searched {', '.join(searched)}) and downloading "
            f"{url} failed: {e}") from e
    return cached


def find_rank_file(name: str) -> pathlib.Path:
    """Path of a verified rank file of encoding `name` on disk (TLTOK_DATA, the cache), downloading it if
    needed; never the embedded copy, which is not a file (see `load_description`)."""
    spec = encoding_spec(name)
    searched: list[str] = []
    local = _local_rank_file(spec, searched)
    return local if local is not None else _download_rank_file(spec, searched)


def load_description(name: str) -> ModelDescription:
    """The ModelDescription of a known tiktoken encoding, its ranks from TLTOK_DATA, the cache, the copy
    embedded in the package, else a download (in that order)."""
    spec = encoding_spec(name)
    kw = dict(
        name=spec.name,
        pattern=spec.pattern,
        special_tokens=dict(spec.special_tokens),
        pattern_kind=spec.pattern_kind,
        explicit_n_vocab=spec.explicit_n_vocab,
        allow_shared_special_ids=spec.shared_special_ids,
    )
    searched: list[str] = []
    local = _local_rank_file(spec, searched)
    if local is None:
        if has_embedded(spec.rank_file):
            # read (and checked against the published hash) only if the tables are not cached
            return read_tiktoken_model(embedded_location(spec.rank_file), lazy=True, sha256=spec.sha256,
                                       read=functools.partial(embedded_rank_data, name), **kw)
        searched.append("the package (it embeds no copy of this file)")
        local = _download_rank_file(spec, searched)
    return read_tiktoken_model(local, lazy=True, sha256=spec.sha256,
                               read=functools.partial(_read_verified, local, spec.sha256), **kw)
