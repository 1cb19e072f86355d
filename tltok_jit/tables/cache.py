"""Compiled tables kept on disk, so a later process loads a model in milliseconds.

Building the tables of o200k_base runs a dozen kernels (one of them merges every token's bytes) and
takes most of a warm process's start-up. The result depends only on the model and on the code that
builds it, so it is saved once, as `.npy` files, under the kernel cache folder (which is keyed by the
kernel sources) in a folder named by a hash of the model's content and of `tables.py`; a process
memory-maps them (shared between processes through the page cache), but the hash tables the
kernels probe at random, which go to huge pages (`on_huge_pages`, unless TLTOK_HUGE_PAGES=0). A
folder is written under a temporary name and renamed into place, so a reader never sees half of one.
`TLTOK_NO_TABLE_CACHE=1` turns this off.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Sequence

import numpy as np

from ..kernels import jit, numba_cache
from ..kernels.layout import Tables
from ..model.description import ModelDescription

_FORMAT = 1
# the hash tables the kernels probe at random, megabytes each: copied to huge pages at load
# (on_huge_pages). (The character route's tables too, ~7 MB more for o200k: no faster on
# Chinese or Indic text.)
RANDOM_ACCESS = ("vocab_slots", "vocab_hash", "short_vocab", "pair_slots", "rank_ids")
_TABLES_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bpe.py")


def enabled() -> bool:
    return (jit.USER_CACHE or jit.SHIPPED) and not os.environ.get("TLTOK_NO_TABLE_CACHE")


def fingerprint(model: ModelDescription, use_cache: bool) -> str:
    """sha256 of everything compile_model reads from `model`, and of tables/bpe.py itself."""
    h = hashlib.sha256()
    with open(_TABLES_SOURCE, "rb") as f:
        h.update(f.read())
    h.update(repr((_FORMAT, model.pattern, model.pattern_kind, model.ignore_merges, model.explicit_n_vocab,
                   model.allow_missing_bytes, model.char_level, use_cache,
                   sorted((model.added_bytes or {}).items()),
                   [(t.content, t.id, t.special) for t in model.added_tokens])).encode())
    if model.digest is not None:  # the loader hashed its source: no need to read the vocabulary
        h.update(model.digest.encode())
        return h.hexdigest()[:24]
    # in the dict's order (a loader's order is stable; another order is only a cache miss)
    vocab = model.vocab
    h.update(np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab)).tobytes())
    h.update(np.fromiter(map(len, vocab), dtype=np.int64, count=len(vocab)).tobytes())
    h.update(b"".join(vocab))
    if model.merges is not None:
        h.update(np.array([len(a) for a, _ in model.merges] + [len(b) for _, b in model.merges], dtype=np.int64).tobytes())
        h.update(b"".join(a + b for a, b in model.merges))
    return h.hexdigest()[:24]


def _folder(key: str) -> str:
    return os.path.join(jit.KERNEL_CACHE_DIR, "tables", key)


def _shipped_folder(key: str) -> str:
    """Where the built package keeps the tables of its default encoding (build_kernels)."""
    return os.path.join(numba_cache.SHIPPED_DIR, "tables", key)


def load(key: str, on_huge_pages):
    """(Tables, valid, n_vocab, unicode version) saved under `key` in the package (when its kernels
    run here: the same code built them) or in the user cache, or None."""
    if jit.SHIPPED and os.path.isdir(_shipped_folder(key)):
        hit = _load(_shipped_folder(key), on_huge_pages, shipped=True)
        if hit is not None:
            return hit
    return _load(_folder(key), on_huge_pages) if jit.USER_CACHE else None


def _load(d: str, on_huge_pages, shipped: bool = False):
    try:
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        arrays = {}
        for name in Tables._fields + ("valid",):
            arrays[name] = np.asarray(np.load(os.path.join(d, name + ".npy"), mmap_mode="r"))  # read-only views
    except (OSError, ValueError, KeyError):
        if os.path.isdir(d) and not shipped:  # damaged (a file missing or unreadable): the next build rewrites it
            shutil.rmtree(d, ignore_errors=True)
        return None
    # (outside the try: a bad TLTOK_HUGE_PAGES is the caller's error, not a damaged folder)
    arrays.update(zip(RANDOM_ACCESS, on_huge_pages([arrays[name] for name in RANDOM_ACCESS])))
    valid = arrays.pop("valid")
    return Tables(**arrays), valid, int(meta["n_vocab"]), meta["unicode_version"]


def save(key: str, tables: Tables, valid: np.ndarray, n_vocab: int, unicode_version: str) -> None:
    """Write the folder for `key` (best effort: a full disk or a race with another writer is fine)."""
    final = _folder(key)
    if not jit.USER_CACHE or os.path.isdir(final):
        return
    parent = os.path.dirname(final)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
        try:
            for name, a in list(zip(Tables._fields, tables)) + [("valid", valid)]:
                np.save(os.path.join(tmp, name + ".npy"), np.ascontiguousarray(a))
            with open(os.path.join(tmp, "meta.json"), "w") as f:
                json.dump({"n_vocab": n_vocab, "unicode_version": unicode_version, "format": _FORMAT}, f)
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    except OSError:
        pass


_HUGE = 1 << 21  # a transparent huge page
_THP_MODE = "/sys/kernel/mm/transparent_hugepage/enabled"
_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")


def huge_pages_wanted() -> bool:
    """Whether on_huge_pages copies: TLTOK_HUGE_PAGES=0 (or false, no, off) says no, 1 (or true, yes,
    on) yes; unset or empty, yes where the kernel backs advised memory with huge pages (Linux,
    transparent huge pages "always" or "madvise"). Any other value is a ValueError."""
    v = os.environ.get("TLTOK_HUGE_PAGES", "").strip().lower()
    if v and v not in _OFF + _ON:
        raise ValueError(f"TLTOK_HUGE_PAGES={os.environ['TLTOK_HUGE_PAGES']!r}: expected one of "
                         f"{', '.join(_OFF + _ON)} (or unset: huge pages where the kernel offers them)")
    if not hasattr(mmap, "MADV_HUGEPAGE"):
        return False
    if v:
        return v in _ON
    try:
        with open(_THP_MODE) as f:
            return "[never]" not in f.read()
    except OSError:
        return False


def on_huge_pages(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Read-only copies of `arrays`, side by side (each 64-byte aligned) in one anonymous mapping
    advised MADV_HUGEPAGE, when huge_pages_wanted() and they hold 2 MB or more together; else the
    arrays themselves. A table probed at random misses the TLB on nearly every probe once it spans
    more 4 KB pages than the TLB holds (o200k's whole-token table is 16 MB): on a 2-core AMD EPYC VM
    the copy made a first o200k call 7-14% faster (r50k's 4 MB table: no change), for a private
    copy of ~30 MB (o200k) per process where the memory-mapped table cache is otherwise shared
    between processes, and no measurable time at load (an Intel Xeon VM had shown no gain)."""
    sizes = [-(-a.nbytes // 64) * 64 for a in arrays]
    if not huge_pages_wanted() or sum(sizes) < _HUGE:
        return list(arrays)
    try:
        m = mmap.mmap(-1, sum(sizes) + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        raw = np.frombuffer(m, dtype=np.uint8)
        off = (-raw.ctypes.data) % _HUGE
        m.madvise(mmap.MADV_HUGEPAGE, off, len(m) - off)
    except (OSError, ValueError, AttributeError):
        return list(arrays)
    out = []
    for a, size in zip(arrays, sizes):
        c = raw[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
        c[...] = a
        c.flags.writeable = False
        out.append(c)
        off += size
    return out
