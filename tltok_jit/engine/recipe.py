"""How an `Encoding` travels through pickle: by the recipe it was built from, not by its tables.

A recipe is a tuple naming the constructor and its arguments:

  ("encoding", name)                                           tltok_jit.get_encoding(name)
  ("hf_json", path, config, name)                              tltok_jit.from_file
  ("gpt2_files", vocab_path, merges_path, name)                tltok_jit.from_gpt2_files
  ("tiktoken_file", path, pattern, specials, name, kind, n)    Encoding.from_tiktoken_file
  ("ranks", name, pat_str, mergeable_ranks, specials, n)       Encoding(name, pat_str=..., ...)
  ("description", model, use_cache)                            Encoding(ModelDescription)

Paths are absolute and mappings are tuples of their items in order (or the very dict the encoding
was built from), so pickling one encoding twice gives the same bytes. `cached` keeps one Encoding per
recipe per process (`encoding.rebuild`, which pickle calls, goes through it): a worker that unpickles
the same encoding for every task builds its tables once.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading

_BUILT: dict[object, object] = {}  # recipe key -> Encoding, for the life of the process
_LOCK = threading.Lock()


def abspath(path) -> str | None:
    return None if path is None else os.path.abspath(os.fspath(path))


def _key(recipe: tuple) -> object:
    try:
        hash(recipe)
        return recipe
    except TypeError:  # holds a dict or a description: key by the content
        return (recipe[0], hashlib.sha256(pickle.dumps(recipe, protocol=4)).hexdigest())


def cached(recipe: tuple, build):
    """`build(recipe)`, called at most once per recipe per process (later calls return that result)."""
    key = _key(recipe)
    enc = _BUILT.get(key)
    if enc is None:
        with _LOCK:
            enc = _BUILT.get(key)
            if enc is None:
                enc = build(recipe)
                _BUILT[key] = enc
    return enc
