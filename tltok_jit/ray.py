"""Ray Data integration: tokenize a text column of a `ray.data.Dataset` on a pool of actors.

    import ray, tltok_jit.ray as tray
    ds = ray.data.read_parquet("data/")
    ds = tray.tokenize_dataset(ds, encoding="o200k_base", column="text", concurrency=4)
    ds.write_parquet("tokens/")

`TokenizeBatch` is the callable class behind it, usable directly with
`ds.map_batches(TokenizeBatch, fn_constructor_kwargs={...}, batch_format="pyarrow", concurrency=N)`.
Each actor builds its tokenizer once, from an encoding name (`get_encoding`), a tokenizer file path
(`.tiktoken` rank file or a Hugging Face `tokenizer.json`), or an `Encoding` (which pickles by
recipe: the actor rebuilds it). A batch comes back with every input column and one more: the ids
as `list<uint32>`, or with `count_only` the `int64` counts; a null text gives a null. Special-token
text is encoded as ordinary text unless `allowed_special` / `disallowed_special` say otherwise
(as `encode_arrow`'s keywords). Ids are those of `Encoding.encode_arrow`, row for row.

Ray is not a dependency of tltok-jit: install it (`pip install "ray[data]"`) to use this module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa


def resolve_encoding(encoding: Any):
    """An `Encoding` from an encoding name, a tokenizer file path, or an `Encoding` itself (for a
    WordPiece or Unigram tokenizer.json: its registry-kind tokenizer)."""
    import tltok_jit

    if isinstance(encoding, tltok_jit.Encoding):
        return encoding
    if isinstance(encoding, (str, os.PathLike)):
        p = Path(encoding)
        if p.suffix in (".tiktoken", ".json"):
            if not p.is_file():
                raise FileNotFoundError(f"tokenizer file not found: {p}")
            if p.suffix == ".tiktoken":
                return tltok_jit.Encoding.from_tiktoken_file(p, name=p.stem)
            cfg = p.with_name("tokenizer_config.json")
            return tltok_jit.from_file(p, cfg if cfg.is_file() else None)
        return tltok_jit.get_encoding(str(encoding))
    raise TypeError(f"encoding must be an encoding name, a tokenizer file path or an Encoding, "
                    f"not {type(encoding).__name__}")


class TokenizeBatch:
    """`map_batches` callable (batch_format="pyarrow"): the batch table plus an ids / counts column."""

    def __init__(self, encoding: Any = "o200k_base", column: str = "text", output_column: str | None = None,
                 count_only: bool = False, num_threads: int = 1, **encode_kwargs):
        self.enc = resolve_encoding(encoding)
        self.column = column
        self.output_column = output_column or ("n_tokens" if count_only else "tokens")
        self.count_only = count_only
        self.num_threads = num_threads
        import tltok_jit

        if isinstance(self.enc, tltok_jit.Encoding):
            encode_kwargs.setdefault("disallowed_special", ())  # special-token text is text
        elif encode_kwargs:  # WordPiece / Unigram: added tokens are matched, as tokenizers does
            raise TypeError(f"{type(self.enc).__name__} takes no encode options ({', '.join(sorted(encode_kwargs))}): "
                            "it matches its added tokens in the text, as tokenizers does")
        self.encode_kwargs = encode_kwargs

    def __call__(self, batch: pa.Table) -> pa.Table:
        if not isinstance(batch, pa.Table):
            raise TypeError(f"TokenizeBatch needs batch_format='pyarrow', got a {type(batch).__name__}")
        if self.column not in batch.column_names:
            raise KeyError(f"column {self.column!r} not in the batch; columns: {', '.join(batch.column_names)}")
        if self.output_column in batch.column_names:
            raise ValueError(f"output column {self.output_column!r} already exists; pick another output_column")
        col = batch.column(self.column)
        if self.count_only:
            out = self.enc.count_arrow(col, num_threads=self.num_threads, **self.encode_kwargs)
        else:
            out = self.enc.encode_arrow(col, num_threads=self.num_threads, large_list=False, **self.encode_kwargs)
        if isinstance(out, pa.Array):
            out = pa.chunked_array([out])
        return batch.append_column(self.output_column, out)


def tokenize_dataset(ds, encoding: Any = "o200k_base", column: str = "text", output_column: str | None = None,
                     count_only: bool = False, concurrency: int | tuple[int, int] | None = None,
                     batch_size: int | str | None = "default", num_threads: int = 1, **encode_kwargs):
    """`ds` with an ids column (`list<uint32>`, default name `tokens`) or, with `count_only`, an `int64`
    count column (`n_tokens`) computed by `concurrency` actors (Ray's default pool when None), each
    holding one tokenizer. `batch_size` "default" keeps Ray's block-sized batches."""
    import ray.data

    if concurrency is None:
        compute = None
    elif isinstance(concurrency, tuple):
        compute = ray.data.ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    else:
        compute = ray.data.ActorPoolStrategy(size=int(concurrency))
    kwargs = dict(
        fn_constructor_kwargs=dict(encoding=encoding, column=column, output_column=output_column,
                                   count_only=count_only, num_threads=num_threads, **encode_kwargs),
        batch_format="pyarrow",
        compute=compute,
        num_cpus=num_threads if num_threads > 0 else None,
    )
    if batch_size != "default":
        kwargs["batch_size"] = batch_size
    return ds.map_batches(TokenizeBatch, **kwargs)
