"""Dataframe UDFs: polars expressions, DuckDB SQL functions, pyarrow.compute functions.

polars and duckdb are optional and imported only by the function that needs them.

polars::

    import polars as pl
    from tltok_jit.udf import register_polars
    register_polars()                                   # adds the `tltok` namespace
    df.with_columns(ids=pl.col("text").tltok.encode("o200k_base"),      # List(UInt32)
                    n=pl.col("text").tltok.count("o200k_base"))         # Int64
    df["text"].tltok.encode()                           # the same on a Series
    pl.col("ids").tltok.decode("o200k_base")            # List(UInt32) -> String

DuckDB::

    con = duckdb.connect()
    register_duckdb(con)                                # tltok_encode(VARCHAR) -> UINTEGER[],
                                                        # tltok_count(VARCHAR) -> BIGINT
    con.sql("SELECT tltok_count(text) FROM 'data.parquet'")

pyarrow.compute::

    register_pyarrow()      # tltok_encode / tltok_count for `string`, tltok_encode_large /
                            # tltok_count_large for `large_string` (Arrow UDFs dispatch on exact types)
    pc.call_function("tltok_count", [arr])

`encoding` is a name, a tokenizer file's path (.tiktoken, tokenizer.json: loaded once per process) or
a tokenizer (an Encoding, or a WordPiece / Unigram tokenizer, which always matches its added tokens).
Special tokens: every UDF takes `special="text" | "error" | "allow"`, default "text": special-token
text is encoded as ordinary text (tiktoken's `encode_ordinary`); "error" is tiktoken's `encode` default
(a row holding a special token raises, naming the row); "allow" gives special tokens their ids.
Invalid UTF-8 is encoded as `bytes.decode("utf-8", "replace")` would give it. Null stays null.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

import pyarrow as pa

__all__ = ["register_duckdb", "register_polars", "register_pyarrow", "special_kwargs"]

DEFAULT_ENCODING = "o200k_base"
_LOCK = threading.Lock()


def special_kwargs(special: str | None, enc=None) -> dict:
    """encode_arrow keyword arguments for special="text" (None: the default) | "error" | "allow".
    A WordPiece / Unigram tokenizer (`enc` not an Encoding) always matches its added tokens, as
    `tokenizers` does: it takes None or "allow" and no keywords."""
    if special not in (None, "text", "error", "allow"):
        raise ValueError(f"special must be 'text', 'error' or 'allow', not {special!r}")
    if enc is not None and not _is_encoding(enc):
        if special not in (None, "allow"):
            raise ValueError(f"special={special!r}: {type(enc).__name__} always matches its added tokens in the "
                             "text, as tokenizers does (leave special out, or pass 'allow')")
        return {}
    if special in (None, "text"):
        return {"allowed_special": set(), "disallowed_special": ()}
    if special == "allow":
        return {"allowed_special": "all", "disallowed_special": ()}
    return {"allowed_special": set(), "disallowed_special": "all"}


def _is_encoding(enc) -> bool:
    from .encoding import Encoding

    return isinstance(enc, Encoding)


@functools.lru_cache(maxsize=16)
def _from_path(path: str):
    import tltok_jit

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {p}")
    if p.suffix == ".tiktoken":
        return tltok_jit.Encoding.from_tiktoken_file(p, name=p.stem)
    cfg = p.with_name("tokenizer_config.json")
    return tltok_jit.from_file(p, cfg if cfg.is_file() else None)


def _encoding(encoding):
    """An encoding name, a tokenizer file path (.json, .tiktoken; loaded once), or a tokenizer."""
    if isinstance(encoding, (str, os.PathLike)):
        if Path(encoding).suffix in (".json", ".tiktoken"):
            return _from_path(os.fspath(encoding))
        import tltok_jit

        return tltok_jit.get_encoding(os.fspath(encoding))
    return encoding  # an Encoding or a registry-kind tokenizer


def _single(result):
    """An Array for a one-chunk ChunkedArray (what most consumers want back)."""
    if isinstance(result, pa.ChunkedArray):
        if result.num_chunks == 1:
            return result.chunk(0)
        return result.combine_chunks()
    return result


# ------------------------------------------------------------------------------------------------
# polars
# ------------------------------------------------------------------------------------------------

_POLARS_DONE = False


def register_polars() -> None:
    """Register the `tltok` namespace on polars expressions and Series (idempotent)."""
    global _POLARS_DONE
    import polars as pl

    with _LOCK:
        if _POLARS_DONE:
            return

        def _to_series(name: str, arr) -> "pl.Series":
            return pl.Series(name, _single(arr))

        def _encode(s: "pl.Series", encoding, num_threads, special) -> "pl.Series":
            enc = _encoding(encoding)
            out = enc.encode_arrow(s, num_threads=num_threads, large_list=None, **special_kwargs(special, enc))
            return _to_series(s.name, out)

        def _count(s: "pl.Series", encoding, num_threads, special) -> "pl.Series":
            enc = _encoding(encoding)
            out = enc.count_arrow(s, num_threads=num_threads, **special_kwargs(special, enc))
            return _to_series(s.name, out)

        def _decode(s: "pl.Series", encoding, num_threads) -> "pl.Series":
            out = _encoding(encoding).decode_arrow(s.to_arrow(), num_threads=num_threads)
            return _to_series(s.name, out)

        @pl.api.register_expr_namespace("tltok")
        class TltokExpr:
            """`pl.col("text").tltok.encode("o200k_base")` and friends."""

            def __init__(self, expr: "pl.Expr"):
                self._expr = expr

            def encode(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0, special: str | None = None) -> "pl.Expr":
                special_kwargs(special)
                return self._expr.map_batches(lambda s: _encode(s, encoding, num_threads, special),
                                              return_dtype=pl.List(pl.UInt32), is_elementwise=True)

            def count(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0, special: str | None = None) -> "pl.Expr":
                special_kwargs(special)
                return self._expr.map_batches(lambda s: _count(s, encoding, num_threads, special),
                                              return_dtype=pl.Int64, is_elementwise=True)

            def decode(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0) -> "pl.Expr":
                return self._expr.map_batches(lambda s: _decode(s, encoding, num_threads),
                                              return_dtype=pl.String, is_elementwise=True)

        @pl.api.register_series_namespace("tltok")
        class TltokSeries:
            """`series.tltok.encode("o200k_base")` and friends."""

            def __init__(self, s: "pl.Series"):
                self._s = s

            def encode(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0, special: str | None = None):
                return _encode(self._s, encoding, num_threads, special)

            def count(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0, special: str | None = None):
                return _count(self._s, encoding, num_threads, special)

            def decode(self, encoding=DEFAULT_ENCODING, *, num_threads: int = 0):
                return _decode(self._s, encoding, num_threads)

        _POLARS_DONE = True


# ------------------------------------------------------------------------------------------------
# DuckDB
# ------------------------------------------------------------------------------------------------

def _duck_types():
    import duckdb

    mod = getattr(duckdb, "sqltypes", None) or getattr(duckdb, "typing", None)
    if mod is None:  # pragma: no cover - very old duckdb
        raise RuntimeError("this duckdb has neither duckdb.sqltypes nor duckdb.typing")
    return duckdb, mod


def register_duckdb(con=None, encoding=DEFAULT_ENCODING, *, prefix: str = "tltok", num_threads: int = 0,
                    special: str | None = None):
    """Register `{prefix}_encode(VARCHAR) -> UINTEGER[]`, `{prefix}_count(VARCHAR) -> BIGINT` and
    `{prefix}_decode(UINTEGER[]) -> VARCHAR` as vectorized Arrow UDFs on `con` (default: duckdb's
    default connection). Returns the connection."""
    duckdb, T = _duck_types()

    con = con if con is not None else duckdb.default_connection() if callable(
        getattr(duckdb, "default_connection", None)) else duckdb.default_connection
    enc = _encoding(encoding)
    kw = special_kwargs(special, enc)

    def enc_fn(texts):
        return _single(enc.encode_arrow(texts, num_threads=num_threads, **kw))

    def count_fn(texts):
        return _single(enc.count_arrow(texts, num_threads=num_threads, **kw))

    def dec_fn(ids):
        return _single(enc.decode_arrow(ids, num_threads=num_threads)).cast(pa.string())

    ids_type = duckdb.list_type(T.UINTEGER)
    for name, fn, args, ret in ((f"{prefix}_encode", enc_fn, [T.VARCHAR], ids_type),
                                (f"{prefix}_count", count_fn, [T.VARCHAR], T.BIGINT),
                                (f"{prefix}_decode", dec_fn, [ids_type], T.VARCHAR)):
        try:
            con.remove_function(name)
        except Exception:  # noqa: BLE001 - not registered yet
            pass
        con.create_function(name, fn, args, ret, type="arrow", null_handling="special",
                            side_effects=False)
    return con


# ------------------------------------------------------------------------------------------------
# pyarrow.compute
# ------------------------------------------------------------------------------------------------

_PC_REGISTERED: dict[str, str] = {}


def register_pyarrow(encoding=DEFAULT_ENCODING, *, prefix: str = "tltok", num_threads: int = 0,
                     special: str | None = None) -> list[str]:
    """Register vectorized `pyarrow.compute` functions (process-wide registry; idempotent for the
    same encoding, an error if a name is taken by another encoding): `{prefix}_encode` and
    `{prefix}_count` on `string`, `{prefix}_encode_large` / `{prefix}_count_large` on `large_string`,
    `{prefix}_decode` on `list<uint32>`. Returns the names."""
    import pyarrow.compute as pc

    enc = _encoding(encoding)
    kw = special_kwargs(special, enc)
    special = special or ("text" if _is_encoding(enc) else "allow")
    key = f"{enc.name}/{special}/{num_threads}"

    def enc_fn(ctx, texts):
        return _single(enc.encode_arrow(texts, num_threads=num_threads, large_list=False, **kw))

    def enc_large_fn(ctx, texts):
        return _single(enc.encode_arrow(texts, num_threads=num_threads, large_list=True, **kw))

    def count_fn(ctx, texts):
        return _single(enc.count_arrow(texts, num_threads=num_threads, **kw))

    def dec_fn(ctx, ids):
        return _single(enc.decode_arrow(ids, num_threads=num_threads))

    specs = [
        (f"{prefix}_encode", enc_fn, pa.string(), pa.list_(pa.uint32()), "token ids of each string"),
        (f"{prefix}_count", count_fn, pa.string(), pa.int64(), "number of tokens of each string"),
        (f"{prefix}_encode_large", enc_large_fn, pa.large_string(), pa.large_list(pa.uint32()),
         "token ids of each large_string"),
        (f"{prefix}_count_large", count_fn, pa.large_string(), pa.int64(), "number of tokens of each large_string"),
        (f"{prefix}_decode", dec_fn, pa.list_(pa.uint32()), pa.large_string(), "text of each list of token ids"),
    ]
    names = []
    with _LOCK:
        for name, fn, in_type, out_type, summary in specs:
            names.append(name)
            have = _PC_REGISTERED.get(name)
            if have == key:
                continue
            if have is not None:
                raise ValueError(f"pyarrow.compute function {name!r} is already registered for {have}; "
                                 f"use another prefix for {key}")
            doc = {"summary": f"tltok: {summary} ({enc.name})",
                   "description": f"tltok_jit {enc.name} ({special} special tokens), exact tiktoken ids."}
            pc.register_scalar_function(fn, name, doc, {"values": in_type}, out_type)
            _PC_REGISTERED[name] = key
    return names
