"""The Parquet writer settings of `tltok encode`'s output: the codec (`--compression`) and the encoding
of the ids column (`--ids-encoding`)."""

from __future__ import annotations

CODECS = ("zstd", "lz4", "snappy", "none")
IDS_ENCODINGS = ("plain", "dictionary", "byte_stream_split")


def leaf_paths(field) -> list[str]:
    """The Parquet column paths of an Arrow field (the names ParquetWriter's per-column options take)."""
    import pyarrow as pa

    t = field.type
    if pa.types.is_struct(t):
        return [f"{field.name}.{q}" for i in range(t.num_fields) for q in leaf_paths(t.field(i))]
    if pa.types.is_map(t):
        return [f"{field.name}.key_value.{q}" for f in (t.key_field, t.item_field) for q in leaf_paths(f)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [f"{field.name}.list.{q}" for q in leaf_paths(t.value_field.with_name("element"))]
    return [field.name]


def writer_options(schema, written: set[str] | frozenset[str] = frozenset(), compression: str = "zstd",
                   ids_encoding: str = "plain") -> dict:
    """`pyarrow.parquet.ParquetWriter` keywords for `schema` with the codec `compression`.

    The columns named in `written` (made by the encoder) get no dictionary, except a `list<uint32>`
    one (token ids) with ids_encoding="dictionary"; with "byte_stream_split" that one is written as
    BYTE_STREAM_SPLIT. The other columns (copied from the input) keep Parquet's defaults.
    """
    import pyarrow as pa

    # PLAIN is the default because every Parquet reader takes it. BYTE_STREAM_SPLIT writes the ids
    # with 30-40% less CPU at 3% less size (the codec meets four byte streams, the high ones nearly
    # constant), but integer columns in it are Parquet 2.11 (2024): older readers refuse the file
    # (pyarrow < 16, DuckDB before mid-2026). A dictionary saves 5% of the size at about PLAIN's
    # write CPU (bench/results/e2e.md).
    def is_ids(f) -> bool:
        return f.name in written and pa.types.is_list(f.type) and pa.types.is_uint32(f.type.value_type)

    ids = [p for f in schema if is_ids(f) for p in leaf_paths(f)]
    dictionary = [p for f in schema if f.name not in written for p in leaf_paths(f)]
    if ids_encoding == "dictionary":
        dictionary += ids
    options = {"compression": compression, "use_dictionary": dictionary}
    if ids_encoding == "byte_stream_split" and ids:
        options["use_byte_stream_split"] = ids
    return options
