"""How an `Encoding` travels through pickle: by the recipe it was built from, not by its tables.

A recipe is a tuple naming the constructor and its arguments:

  ("encoding", name)                                           tltok_jit.get_encoding(name)
  ("hf_json", path, config, name)                              tltok_jit.from_file
  ("gpt2_files", vocab_path, merges_path, name)                tltok_jit.from_gpt2_files
  ("tiktoken_file", path, pattern, specials, name, kind, n)    Encoding.from_tiktoken_file
  ("ranks", name, pat_str, mergeable_ranks, specials, n)       Encoding(name, pat_str=..., ...)
  ("description", model, use_cache)                            Encoding(ModelDescription)

Paths are absolute and mappings are tuples of their items in order (or the very dict the encoding
was built from), so pickling one encoding twice gives the same bytes. `rebuild` keeps one Encoding per
recipe per process: a worker that unpickles the same encoding for every task builds its tables once.
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


def _build(recipe: tuple):
    import tltok_jit
    from .encoding import Encoding

    kind, args = recipe[0], recipe[1:]
    if kind == "encoding":
        return tltok_jit.get_encoding(*args)
    if kind == "hf_json":
        path, config, name = args
        return tltok_jit.from_file(path, config, name=name)
    if kind == "gpt2_files":
        vocab, merges, name = args
        return tltok_jit.from_gpt2_files(vocab, merges, name=name)
    if kind == "tiktoken_file":
        path, pattern, specials, name, pattern_kind, n_vocab = args
        return Encoding.from_tiktoken_file(path, pattern=pattern, special_tokens=dict(specials), name=name,
                                           pattern_kind=pattern_kind, explicit_n_vocab=n_vocab)
    if kind == "ranks":
        name, pat_str, ranks, specials, n_vocab = args
        return Encoding(name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=dict(specials),
                        explicit_n_vocab=n_vocab)
    if kind == "description":
        model, use_cache = args
        return Encoding(model, use_cache=use_cache)
    raise ValueError(f"unknown Encoding recipe kind {kind!r}")


def rebuild(recipe: tuple):
    """The Encoding `recipe` describes, built at most once per process (pickle calls this)."""
    key = _key(recipe)
    enc = _BUILT.get(key)
    if enc is None:
        with _LOCK:
            enc = _BUILT.get(key)
            if enc is None:
                enc = _build(recipe)
                _BUILT[key] = enc
    return enc
