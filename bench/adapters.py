"""One adapter per library: how it loads an encoding OFFLINE and which call is timed.

One job: hide each library's API behind the same calls:
    whole(text)            one encode of one string (single thread)
    batch(docs, threads)   one batch encode of ~1-2 KB documents
    short_loop(strs)       a plain Python loop of single encodes
    memory(text)           the numpy-returning encode used for peak RSS
    decode(ids)            one decode of a list of ids to str
    decode_batch(rows, threads)  one batch decode of lists of ids to a list of str
    decode_loop(rows)      a plain Python loop of single decodes
Each encode returns the library's raw result; `to_flat` turns any of them into
(flat ids, per-document lengths) for the exactness check, outside the timer.
The decodes return str (a library that decodes to bytes pays for the UTF-8
decode too, as tiktoken's `decode` does).

An adapter raises NotAvailable(reason) when a library cannot do something
offline; the report prints "n/a: reason", never a number.

Loading APIs (read from the installed sources, versions in README.md):

tiktoken 0.14     tiktoken.Encoding(**spec) where spec comes from
                  tiktoken_ext.openai_public.<name>() with its load_tiktoken_bpe
                  pointed at the local rank file (bench/oracle.py).
tokenizers        tokenizers.Tokenizer.from_file(path); r50k = shared
                  gpt2/tokenizer.json, cl100k/o200k = tokenizer.json built from
                  the rank file (bench/hf_convert.py).  HF matches added
                  (special) tokens in text; the corpora contain none.
gigatoken 0.10    gigatoken.Tokenizer.from_tiktoken(path) reads a .tiktoken
                  file; pretokenizer ("gpt2"/"gpt4"/"o200k") and specials are
                  taken from the file NAME (r50k_base/cl100k_base/o200k_base),
                  or pass pretokenizer=..., special_tokens=... explicitly (we
                  do).  Tokenizer.encode(str) -> np.uint32; encode_batch(list,
                  parallel=bool) -> awkward Array, on rayon's global pool
                  (RAYON_NUM_THREADS).  It always matches special tokens in
                  text (its TiktokenCompat raises on them in encode_ordinary).
fastokens 0.3.5   fastokens.Tokenizer.from_tiktoken(path, pattern=pat_str,
                  special_tokens={...}) (also from_file(tokenizer.json)).
                  encode_ordinary(str) -> Encoding (.ids list);
                  encode_batch_flat(list) -> (uint32 bytes, uint64 offsets
                  bytes).  One encode is split across FASTOKENS_BPE_THREADS
                  threads (default: all cores!) and batches use rayon
                  (RAYON_NUM_THREADS): the runner sets both to the job's
                  thread count.  Its input/segment caches are off unless
                  FASTOKENS_INPUT_CACHE / FASTOKENS_SEGMENT_CACHE are set; the
                  runner unsets them.
bpe-openai 0.1.4  No file loading: cl100k_base / o200k_base ranks are bundled
                  in the wheel (offline), r50k_base is not supported.
                  bpe_openai._bindings.tokenizer_for_encoding(name).encode(str)
                  -> list[int]; we call the binding because the Python
                  Encoding wrapper refuses texts of >= 1,000,000 characters.
                  Its encode_ordinary_batch is a ThreadPoolExecutor over that
                  call; we do the same.
tokie 0.1.4       tokie.Tokenizer.from_json(path to tokenizer.json) (from_file
                  is its own .tkz format; from_pretrained needs the Hub); same
                  files as HF.  encode(str, add_special_tokens=False).ids;
                  encode_batch(list, add_special_tokens=False) uses its own
                  thread pool sized by the CPU affinity the worker sets.
tltok_jit         Encoding.from_tiktoken_file(path, pattern=pat_str,
                  special_tokens=..., name=...) (fallback: get_encoding(name)
                  with TLTOK_DATA); encode_ordinary (whole text, a list
                  like tiktoken's) / encode_ordinary_batch(docs,
                  num_threads=N); encode_to_numpy (memory).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench import oracle


class NotAvailable(Exception):
    """The library cannot do this (offline); the message is printed as the reason."""


# ---------------------------------------------------------------------------
# result conversion (never timed)


def to_flat(result) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids as uint32, per-document lengths as int64) for any result shape
    the adapters produce.  A single encode counts as one document."""
    if isinstance(result, np.ndarray):
        return result.astype(np.uint32, copy=False).ravel(), np.array([result.size], dtype=np.int64)
    mod = type(result).__module__.partition(".")[0]
    if mod == "awkward":
        import awkward as ak

        return ak.to_numpy(ak.flatten(result)).astype(np.uint32), ak.to_numpy(ak.num(result)).astype(np.int64)
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        lens = np.asarray(result.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64)
        return np.asarray(result.flatten().to_numpy(zero_copy_only=False), dtype=np.uint32), lens
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], (bytes, np.ndarray)):
        ids, offs = result
        ids = np.frombuffer(ids, dtype=np.uint32) if isinstance(ids, bytes) else np.asarray(ids, dtype=np.uint32)
        offs = np.frombuffer(offs, dtype=np.uint64) if isinstance(offs, bytes) else np.asarray(offs)
        return ids, np.diff(offs.astype(np.int64))
    if hasattr(result, "ids"):  # one HF-style Encoding
        ids = np.asarray(result.ids, dtype=np.uint32)
        return ids, np.array([ids.size], dtype=np.int64)
    seq = list(result)
    if seq and hasattr(seq[0], "ids"):
        seq = [e.ids for e in seq]
    if not seq or isinstance(seq[0], (int, np.integer)):
        ids = np.asarray(seq, dtype=np.uint32)
        return ids, np.array([ids.size], dtype=np.int64)
    lens = np.fromiter((len(x) for x in seq), dtype=np.int64, count=len(seq))
    flat = np.concatenate([np.asarray(x, dtype=np.uint32) for x in seq]) if seq else np.zeros(0, np.uint32)
    return flat, lens


# ---------------------------------------------------------------------------
# adapters


class Adapter:
    label = "?"
    api: dict[str, str] = {}

    def __init__(self, encoding: str):
        self.encoding = encoding
        self.source = ""  # where the vocabulary came from

    def whole(self, text: str):
        raise NotAvailable("no single-string encode")

    def batch(self, docs: list[str], threads: int):
        raise NotAvailable("no batch encode")

    def short_loop(self, strs: list[str]):
        return [self.whole(s) for s in strs]

    def long(self, text: str, threads: int):
        """One whole text with `threads` threads available (libraries that cannot split one text use one)."""
        return self.whole(text)

    def memory(self, text: str):
        return self.whole(text)

    def decode(self, ids: list[int]) -> str:
        raise NotAvailable("no decode")

    def decode_batch(self, rows: list[list[int]], threads: int) -> list[str]:
        raise NotAvailable("no batch decode")

    def decode_loop(self, rows: list[list[int]]) -> list[str]:
        f = self.decode
        return [f(r) for r in rows]


class Tiktoken(Adapter):
    label = "tiktoken"
    api = {
        "whole": "encode_ordinary(str) -> list",
        "batch": "encode_ordinary_batch(docs, num_threads=N)",
        "short_loop": "[encode_ordinary(s) for s in strs]",
        "memory": "encode_to_numpy(str, disallowed_special=())",
        "decode": "decode(list) -> str",
        "decode_batch": "decode_batch(rows, num_threads=N)",
        "decode_loop": "[decode(ids) for ids in rows]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        self.enc = oracle.tiktoken_encoding(encoding)
        self.source = str(oracle.rank_file(encoding))

    def whole(self, text):
        return self.enc.encode_ordinary(text)

    def batch(self, docs, threads):
        return self.enc.encode_ordinary_batch(docs, num_threads=threads)

    def short_loop(self, strs):
        f = self.enc.encode_ordinary
        return [f(s) for s in strs]

    def memory(self, text):
        return self.enc.encode_to_numpy(text, disallowed_special=())

    def decode(self, ids):
        return self.enc.decode(ids)

    def decode_batch(self, rows, threads):
        return self.enc.decode_batch(rows, num_threads=threads)


class HF(Adapter):
    label = "hf-tokenizers"
    api = {
        "whole": "Tokenizer.encode(str, add_special_tokens=False).ids",
        "batch": "Tokenizer.encode_batch_fast(docs, add_special_tokens=False), RAYON_NUM_THREADS=N",
        "short_loop": "[encode(s, add_special_tokens=False).ids for s in strs]",
        "memory": "Tokenizer.encode(str, add_special_tokens=False).ids (no numpy API)",
        "decode": "Tokenizer.decode(ids)",
        "decode_batch": "Tokenizer.decode_batch(rows), RAYON_NUM_THREADS=N",
        "decode_loop": "[decode(ids) for ids in rows]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        import tokenizers

        from bench import hf_convert

        path, how = hf_convert.tokenizer_json(encoding)
        self.tok = tokenizers.Tokenizer.from_file(str(path))
        self.source = how
        self._batch = getattr(self.tok, "encode_batch_fast", None) or self.tok.encode_batch

    def whole(self, text):
        return self.tok.encode(text, add_special_tokens=False).ids

    def batch(self, docs, threads):
        return self._batch(docs, add_special_tokens=False)

    def short_loop(self, strs):
        f = self.tok.encode
        return [f(s, add_special_tokens=False).ids for s in strs]

    def decode(self, ids):
        return self.tok.decode(ids)

    def decode_batch(self, rows, threads):
        return self.tok.decode_batch(rows)


_GIGA_PRETOK = {"r50k_base": "gpt2", "cl100k_base": "gpt4", "o200k_base": "o200k"}


class Gigatoken(Adapter):
    label = "gigatoken"
    api = {
        "whole": "Tokenizer.encode(str) -> np.uint32",
        "batch": "Tokenizer.encode_batch(docs, parallel=N>1) -> awkward, RAYON_NUM_THREADS=N",
        "short_loop": "[encode(s) for s in strs]",
        "memory": "Tokenizer.encode(str) -> np.uint32",
        "decode": "Tokenizer.decode(ids) -> bytes, .decode('utf-8', 'replace')",
        "decode_loop": "[decode(ids).decode('utf-8', 'replace') for ids in rows]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        import gigatoken

        if encoding not in _GIGA_PRETOK:
            raise NotAvailable(f"no gigatoken pretokenizer for {encoding}")
        path = oracle.rank_file(encoding)
        self.tok = gigatoken.Tokenizer.from_tiktoken(
            str(path), pretokenizer=_GIGA_PRETOK[encoding], special_tokens=oracle.special_tokens(encoding)
        )
        self.source = str(path)

    def whole(self, text):
        return self.tok.encode(text)

    def batch(self, docs, threads):
        return self.tok.encode_batch(docs, parallel=threads > 1)

    def short_loop(self, strs):
        f = self.tok.encode
        return [f(s) for s in strs]

    def decode(self, ids):
        return self.tok.decode(ids).decode("utf-8", "replace")


class Fastokens(Adapter):
    label = "fastokens"
    api = {
        "whole": "Tokenizer.encode_ordinary(str).ids, FASTOKENS_BPE_THREADS=1",
        "long": "Tokenizer.encode_ordinary(str).ids, FASTOKENS_BPE_THREADS=N (it splits one text)",
        "batch": "Tokenizer.encode_batch_flat(docs), RAYON_NUM_THREADS=FASTOKENS_BPE_THREADS=N",
        "short_loop": "[encode_ordinary(s).ids for s in strs]",
        "memory": "Tokenizer.encode_ordinary(str).ids (no numpy API)",
        "decode": "Tokenizer.decode(ids)",
        "decode_batch": "Tokenizer.decode_batch(rows), RAYON_NUM_THREADS=N",
        "decode_loop": "[decode(ids) for ids in rows]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        import fastokens

        path = oracle.rank_file(encoding)
        self.tok = fastokens.Tokenizer.from_tiktoken(
            str(path), pattern=oracle.pattern(encoding), special_tokens=oracle.special_tokens(encoding)
        )
        self.source = str(path)

    def whole(self, text):
        return self.tok.encode_ordinary(text).ids

    def batch(self, docs, threads):
        return self.tok.encode_batch_flat(docs)

    def short_loop(self, strs):
        f = self.tok.encode_ordinary
        return [f(s).ids for s in strs]

    def decode(self, ids):
        return self.tok.decode(ids)

    def decode_batch(self, rows, threads):
        return self.tok.decode_batch(rows)


class BpeOpenai(Adapter):
    label = "bpe-openai"
    api = {
        "whole": "_bindings.tokenizer_for_encoding(name).encode(str) -> list",
        "batch": "ThreadPoolExecutor(N).map(PyTokenizer.encode, docs) (= its encode_ordinary_batch)",
        "short_loop": "[encode(s) for s in strs]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        from bpe_openai import _bindings

        if encoding not in _bindings.supported_encodings():
            raise NotAvailable(
                f"bpe-openai bundles only {', '.join(_bindings.supported_encodings())}; it cannot load a rank file"
            )
        self.tok = _bindings.tokenizer_for_encoding(encoding)
        self.source = "ranks bundled in the bpe-openai wheel"

    def whole(self, text):
        return self.tok.encode(text)

    def batch(self, docs, threads):
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(self.tok.encode, docs))

    def short_loop(self, strs):
        f = self.tok.encode
        return [f(s) for s in strs]

    def memory(self, text):
        raise NotAvailable("not in the memory set")


class Tokie(Adapter):
    label = "tokie"
    api = {
        "whole": "Tokenizer.encode(str, add_special_tokens=False).ids",
        "batch": "Tokenizer.encode_batch(docs, add_special_tokens=False) (own pool, CPU affinity = N)",
        "short_loop": "[encode(s, add_special_tokens=False).ids for s in strs]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        import tokie

        from bench import hf_convert

        path, how = hf_convert.tokenizer_json(encoding)
        self.tok = tokie.Tokenizer.from_json(str(path))
        self.source = how

    def whole(self, text):
        return self.tok.encode(text, add_special_tokens=False).ids

    def batch(self, docs, threads):
        return self.tok.encode_batch(docs, add_special_tokens=False)

    def short_loop(self, strs):
        f = self.tok.encode
        return [f(s, add_special_tokens=False).ids for s in strs]

    def memory(self, text):
        raise NotAvailable("not in the memory set")


class Ours(Adapter):
    label = "tltok_jit"
    api = {
        "whole": "encode_ordinary(str) -> list[int] (as tiktoken's)",
        "long": "encode_ordinary_to_numpy(str, num_threads=N)",
        "batch": "encode_ordinary_batch(docs, num_threads=N)",
        "short_loop": "[encode_ordinary(s) for s in strs]",
        "memory": "encode_to_numpy(str)",
        "decode": "decode(list) -> str",
        "decode_batch": "decode_batch(rows, num_threads=N)",
        "decode_loop": "[decode(ids) for ids in rows]",
    }

    def __init__(self, encoding):
        super().__init__(encoding)
        try:
            import tltok_jit
        except Exception as e:  # noqa: BLE001 - anything means "not usable yet"
            raise NotAvailable(f"tltok_jit not importable ({type(e).__name__}: {e})") from None
        path = oracle.rank_file(encoding)
        enc = None
        errors = []
        factory = getattr(getattr(tltok_jit, "Encoding", None), "from_tiktoken_file", None)
        if factory is not None:
            try:
                enc = factory(str(path), pattern=oracle.pattern(encoding),
                              special_tokens=oracle.special_tokens(encoding), name=encoding)
                self.source = str(path)
            except Exception as e:  # noqa: BLE001
                errors.append(f"from_tiktoken_file: {type(e).__name__}: {e}")
        if enc is None and hasattr(tltok_jit, "get_encoding"):
            try:
                enc = tltok_jit.get_encoding(encoding)
                self.source = "get_encoding (TLTOK_DATA)"
            except Exception as e:  # noqa: BLE001
                errors.append(f"get_encoding: {type(e).__name__}: {e}")
        if enc is None:
            raise NotAvailable("tltok_jit cannot load " + encoding + ("; " + "; ".join(errors) if errors else
                               ": no Encoding.from_tiktoken_file / get_encoding"))
        self.enc = enc
        for meth in ("encode_to_numpy", "encode_ordinary"):
            if not hasattr(enc, meth):
                raise NotAvailable(f"tltok_jit Encoding has no {meth}")

    def whole(self, text):
        return self.enc.encode_ordinary(text)

    def batch(self, docs, threads):
        if not hasattr(self.enc, "encode_ordinary_batch"):
            raise NotAvailable("tltok_jit Encoding has no encode_ordinary_batch")
        return self.enc.encode_ordinary_batch(docs, num_threads=threads)

    def short_loop(self, strs):
        f = self.enc.encode_ordinary
        return [f(s) for s in strs]

    def long(self, text, threads):
        return self.enc.encode_ordinary_to_numpy(text, num_threads=threads)

    def memory(self, text):
        return self.enc.encode_to_numpy(text)

    def decode(self, ids):
        return self.enc.decode(ids)

    def decode_batch(self, rows, threads):
        return self.enc.decode_batch(rows, num_threads=threads)


class OursArrow(Ours):
    """Optional extra row: the Arrow batch API, once it exists."""

    label = "tltok_jit[arrow]"
    api = {"batch": "encode_arrow(pa.array(docs), num_threads=N) (pa.array built outside the timer)"}

    def __init__(self, encoding):
        super().__init__(encoding)
        if not hasattr(self.enc, "encode_arrow"):
            raise NotAvailable("tltok_jit has no encode_arrow yet")

    def whole(self, text):
        raise NotAvailable("arrow variant is batch-only")

    def short_loop(self, strs):
        raise NotAvailable("arrow variant is batch-only")

    def memory(self, text):
        raise NotAvailable("arrow variant is batch-only")

    def prepare_batch(self, docs):
        if not hasattr(self.enc, "encode_arrow"):
            raise NotAvailable("tltok_jit has no encode_arrow yet")
        import pyarrow as pa

        return pa.array(docs, type=pa.large_string())

    def batch(self, docs, threads):
        return self.enc.encode_arrow(docs, num_threads=threads)


class OursNumpy(Ours):
    """Optional extra row: one whole text to a numpy array, the output gigatoken's encode gives."""

    label = "tltok_jit[numpy]"
    api = {"whole": "encode_ordinary_to_numpy(str, num_threads=1) -> np.uint32 (as gigatoken's)"}

    def whole(self, text):
        return self.enc.encode_ordinary_to_numpy(text, num_threads=1)

    def batch(self, docs, threads):
        raise NotAvailable("numpy variant is whole-text only")

    def short_loop(self, strs):
        raise NotAvailable("numpy variant is whole-text only")

    def long(self, text, threads):
        raise NotAvailable("numpy variant is whole-text only")

    def memory(self, text):
        raise NotAvailable("numpy variant is whole-text only")


ADAPTERS: dict[str, type[Adapter]] = {
    a.label: a for a in (Tiktoken, HF, Gigatoken, Fastokens, BpeOpenai, Tokie, Ours, OursArrow, OursNumpy)
}
LIBRARIES = tuple(ADAPTERS)
MEMORY_LIBRARIES = ("tiktoken", "hf-tokenizers", "gigatoken", "fastokens", "tltok_jit")
