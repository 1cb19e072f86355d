"""`tltok`: tokenize Parquet / Arrow IPC / JSONL columns from the command line.

    tltok encode INPUT -o OUTPUT [--column text] [--encoding o200k_base | --tokenizer FILE]
                 [--threads N] [--keep-columns a,b | --all-columns] [--output-column tokens]
                 [--count-only] [--special text|error|allow] [--batch-mb 8]
                 [--compression zstd|lz4|snappy|none] [--ids-encoding plain|dictionary|byte_stream_split]
                 [--overwrite] [--quiet]
    tltok encode INPUT -o train.bin --pack 2048 [--eos]      training shards (see below)
    tltok encode INPUT -o PREFIX --format megatron|bin [--eos]   per-document shards (see below)
    tltok encode INPUT -o OUTDIR --ray [ADDRESS] [--ray-workers N] [--shard-mb 256]   on Ray (tltok_jit.integrations.ray_job)
    tltok warmup [--encoding NAME | --tokenizer FILE]        compile / load every kernel it uses, print the time
    tltok bench [ARGS...]                                    runs `python bench/run.py ARGS` (repository checkout)
    tltok stream ...                                         streaming tokenization (tltok_jit.integrations.stream_cli)
    tltok train INPUT --vocab-size N -o tok.json ...         train a BPE vocabulary (tltok_jit.integrations.train_cli)

INPUT is a Parquet file, a directory of Parquet files (every `*.parquet` below it, sorted), an Arrow
IPC file or stream (`.arrow`, `.feather`, `.ipc`, `.arrows`) or JSON Lines (`.jsonl`, `.ndjson`,
`.json`). OUTPUT is Parquet: a file, or a directory mirroring an input directory. Record batches are
streamed (about `--batch-mb` MB of text at a time, default 8), so memory stays flat whatever the input size.

Output column: `list<uint32>` ids (`--output-column`, default `tokens`) or, with `--count-only`,
`int64` counts (default name `n_tokens`). Only that column is written unless `--keep-columns` /
`--all-columns` carry input columns along. Null texts stay null. `--compression` picks the Parquet
codec (zstd by default). `--ids-encoding` the ids column's encoding: `plain` (default: every reader
takes it), `dictionary`, or `byte_stream_split` (30-40% less write CPU and 3% smaller, but readable
only by readers of Parquet 2.11: pyarrow 16+, DuckDB from mid-2026).

`--special`: `text` (default; special-token text is encoded as ordinary text, like tiktoken's
`encode_ordinary`), `error` (tiktoken's `encode` default: a special token in a row is an error naming
the row), `allow` (special tokens become their ids). Invalid UTF-8 is encoded as
`bytes.decode("utf-8", "replace")` would give it.

Pack mode (`--pack SEQ_LEN [--eos]`): the ids of all documents, in input order, each followed by the
end-of-text token when `--eos` is given, are cut into consecutive sequences of SEQ_LEN ids; the last
incomplete sequence is dropped (its length is recorded). The shard `NAME.bin` is the flat array of
n_seqs * SEQ_LEN ids, little-endian `uint16` when the vocabulary has at most 65,536 ids, else
`uint32`, with no header; `NAME.json` beside it records format, dtype, seq_len, n_seqs, n_tokens,
encoding, n_vocab, eos / eos_id, documents, dropped_tail_tokens and source. Read it with

    idx = json.load(open("train.json"))
    seqs = np.memmap("train.bin", dtype=idx["dtype"], mode="r").reshape(idx["n_seqs"], idx["seq_len"])

Shard formats (`--format megatron|bin [--eos]`, default `parquet`): every document's ids, in input
order, each followed by the end-of-text id with `--eos` (no BOS). `megatron` writes PREFIX.bin +
PREFIX.idx, a Megatron-LM / NeMo indexed dataset (one sequence per document; uint16 ids below
65,500 ids of vocabulary, else int32, as Megatron's preprocessing chooses); `bin` writes PREFIX.bin,
the flat ids (uint16 when the vocabulary has at most 65,536 ids, else uint32, no header), + PREFIX.json
(dtype, n_tokens, n_documents, encoding, n_vocab, eos, eos_id). -o PREFIX.bin and -o PREFIX are the
same. A null or empty text is skipped (no ids, no EOS, no index entry), as Megatron's preprocessing
does; the summary counts them. See tltok_jit/integrations/shards.py for the layouts.

Every output is written under a temporary name in the destination directory and renamed when
complete: an interrupted run leaves no OUTPUT (SIGINT / SIGTERM also remove the temporary file).
An existing OUTPUT is only replaced with `--overwrite`; an OUTPUT that is, contains or lies inside
INPUT is refused. The temporary files of a killed run (`.NAME.tltok-tmp-PID`, PID no longer running)
are removed by the next run writing NAME. Errors print one line naming the problem and the option to
change and exit with status 2 (1 for an unexpected failure).

A progress line (rows, MB, MB/s, tokens/s) is drawn on stderr when it is a terminal and `--quiet` is
not given; a one-line summary (rows, tokens, seconds, MB/s) goes to stdout unless `--quiet`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .cli_common import SPECIAL_MODES, CliError, load_encoding  # noqa: F401  (load_encoding: tests import it here)
from .cli_common import special_kwargs as _special_kwargs
from .cli_common import special_mode
from .parquet_write import CODECS, IDS_ENCODINGS

PARQUET_EXT = (".parquet", ".parq", ".pq")
IPC_EXT = (".arrow", ".feather", ".ipc", ".arrows")
JSONL_EXT = (".jsonl", ".ndjson", ".json")


# ------------------------------------------------------------------------------------------------
# progress
# ------------------------------------------------------------------------------------------------

class Progress:
    def __init__(self, enabled: bool, total_rows: int | None):
        self.enabled = enabled
        self.total_rows = total_rows
        self.rows = 0
        self.bytes = 0
        self.tokens = 0
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._width = 0

    def update(self, rows: int, nbytes: int, tokens: int) -> None:
        self.rows += rows
        self.bytes += nbytes
        self.tokens += tokens
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.2:
            return
        self._last = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        dt = max(now - self.t0, 1e-9)
        pct = ""
        if self.total_rows:
            pct = f"{100.0 * self.rows / self.total_rows:5.1f}% "
        line = (f"{pct}{self.rows:,} rows | {self.bytes / 1e6:,.1f} MB | {self.bytes / 1e6 / dt:,.1f} MB/s | "
                f"{self.tokens / dt / 1e6:,.2f} M tok/s | {dt:,.0f} s")
        pad = max(self._width - len(line), 0)
        self._width = len(line)
        sys.stderr.write("\r" + line + " " * pad)
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            sys.stderr.write("\n")
            sys.stderr.flush()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------

def _kind(path: Path) -> str:
    name = path.name.lower()
    for suffix in (".gz", ".zst", ".bz2"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith(PARQUET_EXT):
        return "parquet"
    if name.endswith(IPC_EXT):
        return "ipc"
    if name.endswith(JSONL_EXT):
        return "jsonl"
    return "unknown"


def list_inputs(inp: Path) -> list[tuple[Path, Path]]:
    """(file, path relative to the input root) for a file or a directory of Parquet files."""
    if not inp.exists():
        raise CliError(f"input not found: {inp}")
    if inp.is_dir():
        files = sorted(p for p in inp.rglob("*") if p.is_file() and _kind(p) == "parquet"
                       and not p.name.startswith((".", "_")))
        if not files:
            raise CliError(f"no Parquet files (*.parquet) in directory {inp}")
        return [(p, p.relative_to(inp)) for p in files]
    if _kind(inp) == "unknown":
        raise CliError(f"cannot tell the format of {inp}: use .parquet, .arrow/.feather/.ipc or .jsonl")
    return [(inp, Path(inp.name))]


class Reader:
    """Record batches of one input file (only the needed columns), about `target_bytes` of text each."""

    def __init__(self, path: Path, target_bytes: int, column: str = "text"):
        self.path = path
        self.column = column
        self.kind = _kind(path)
        self.target = target_bytes
        self._pf = None
        self._ipc = None
        try:
            if self.kind == "parquet":
                import pyarrow.parquet as pq

                # pre_buffer=False: with read-ahead on, iter_batches keeps the buffered column chunks
                # of every row group read so far (memory grew with the file, not the batch)
                self._pf = pq.ParquetFile(str(path), pre_buffer=False)
                self.schema = self._pf.schema_arrow
                self.num_rows = self._pf.metadata.num_rows
            elif self.kind == "ipc":
                self._open_ipc()
            else:
                self.num_rows = None
                names = self._json_first_keys()
                self._json_reader = self._open_json()
                self.schema = self._json_reader.schema if hasattr(self._json_reader, "schema") else None
                if names is not None and self.schema is not None and column not in names:
                    import pyarrow as pa

                    # the explicit text field is always in the reader's schema: report the file's own keys
                    self.schema = pa.schema([f for f in self.schema if f.name in names])
        except CliError:
            raise
        except Exception as e:  # noqa: BLE001 - any reader failure is "unreadable file"
            raise CliError(f"cannot read {path}: {type(e).__name__}: {e}") from None

    def _open_ipc(self):
        import pyarrow as pa

        src = pa.memory_map(str(self.path), "r")
        try:
            self._ipc = pa.ipc.open_file(src)
            self.schema = self._ipc.schema
            self.num_rows = sum(self._ipc.get_batch(i).num_rows for i in range(self._ipc.num_record_batches))
        except pa.ArrowInvalid:
            src = pa.memory_map(str(self.path), "r")
            self._ipc = pa.ipc.open_stream(src)
            self.schema = self._ipc.schema
            self.num_rows = None

    def _json_first_keys(self) -> list[str] | None:
        """The keys of the first JSON object of the file (to report a missing column by name)."""
        with open(self.path, "rb") as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    if not isinstance(obj, dict):
                        raise CliError(f"cannot read {self.path}: a JSON Lines file of objects is expected")
                    return list(obj)
        return None

    def _open_json(self):
        import pyarrow as pa
        import pyarrow.json as pj

        opts = pj.ReadOptions(block_size=max(1 << 20, min(self.target, 1 << 28)))
        # the text field is read as large_string whatever the first block holds (a first block of nulls
        # would otherwise fix its type to null); the other fields are inferred
        parse = pj.ParseOptions(explicit_schema=pa.schema([(self.column, pa.large_string())]),
                                unexpected_field_behavior="infer")
        if hasattr(pj, "open_json"):
            return pj.open_json(str(self.path), read_options=opts, parse_options=parse)
        table = pj.read_json(str(self.path), read_options=opts, parse_options=parse)
        return iter(table.to_batches())

    def _parquet_batch_rows(self, column: str) -> int:
        md = self._pf.metadata
        if md.num_rows == 0:
            return 1024
        size = 0
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            for c in range(rg.num_columns):
                col = rg.column(c)
                if col.path_in_schema == column or col.path_in_schema.split(".")[0] == column:
                    size += col.total_uncompressed_size
        per_row = max(size / md.num_rows, 1.0)
        return int(min(max(self.target / per_row, 16), 1_000_000))

    def batches(self, columns: list[str], text_column: str):
        import pyarrow as pa

        try:
            if self.kind == "parquet":
                it = self._pf.iter_batches(batch_size=self._parquet_batch_rows(text_column), columns=columns)
            elif self.kind == "ipc":
                if isinstance(self._ipc, pa.ipc.RecordBatchFileReader):
                    it = (self._ipc.get_batch(i) for i in range(self._ipc.num_record_batches))
                else:
                    it = iter(self._ipc)
            else:
                it = self._json_reader
            for batch in it:
                batch = batch.select(columns) if batch.schema.names != columns else batch
                yield from _split_batch(batch, text_column, self.target)
        except CliError:
            raise
        except (OSError, pa.ArrowException) as e:
            raise CliError(f"cannot read {self.path}: {type(e).__name__}: {e}") from None


def _split_batch(batch, column: str, target: int):
    """Slices (zero-copy) of a record batch holding about `target` bytes of text each."""
    n = batch.num_rows
    col = batch.column(batch.schema.get_field_index(column))
    size = col.nbytes
    if size <= 2 * target or n <= 1:
        yield batch
        return
    parts = min(n, -(-size // target))
    step = -(-n // parts)
    for a in range(0, n, step):
        yield batch.slice(a, min(step, n - a))


# ------------------------------------------------------------------------------------------------
# encoding resolution
# ------------------------------------------------------------------------------------------------

_NOTICE_AFTER = 1.0  # seconds: loading cached kernels takes less; compiling them takes minutes


# Input file bytes above which a job waits for the kernels rather than running on the Python
# encoder: about what that encoder (~2 MB/s of text; Parquet holds ~2 bytes of text per byte) does
# in the time a compile takes on two cores (~2 minutes).
WAIT_FOR_KERNELS_BYTES = 100_000_000


def prepare_kernels(enc, *, quiet: bool = False, job_bytes: int = 0) -> str:
    """Before the first batch: make the kernels ready, and return which path the job runs on
    ("compiled kernels" or "Python encoder"). Says once on stderr when kernels compile for the first
    time (so no rate is ever computed over compile time). When they compile in the background, a job
    of more than WAIT_FOR_KERNELS_BYTES waits for them (a line per stage); a smaller one runs on the
    exact Python encoder meanwhile, and says so."""
    import threading

    from ..compile import background as warm
    from ..compile.background import background_enabled

    if enc.compile_state == "interim" and job_bytes > WAIT_FOR_KERNELS_BYTES:
        if not quiet:
            print(f"tltok: compiling the kernels for first use on this machine (one-time; the job, "
                  f"{job_bytes / 1e6:,.0f} MB of files, runs once they are ready)...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        for stage in warm.stages_as_ready(enc.compile_stages):
            if not quiet:
                print(f"tltok: {stage} kernels ready ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    if enc.compile_state == "interim":
        if not quiet:
            print("tltok: kernels compiling in the background for first use on this machine (one-time, a "
                  "few minutes on two cores); until they are ready, the exact Python encoder answers, more "
                  "slowly", file=sys.stderr)
        return "Python encoder"
    t0 = time.perf_counter()
    said = threading.Event()

    def notice():
        said.set()
        if not quiet:
            print("tltok: compiling the kernels for first use on this machine (one-time, about a minute on "
                  "two cores; `tltok warmup` does it ahead of time)...", file=sys.stderr, flush=True)

    timer = threading.Timer(_NOTICE_AFTER, notice)
    timer.daemon = True
    timer.start()
    try:
        import pyarrow as pa

        sample = pa.array(["Kernels compile once.", None, "日本語"])
        enc.encode_arrow(sample, num_threads=1)
        enc.count_arrow(sample, num_threads=1)
    finally:
        timer.cancel()
    if said.is_set() and not quiet:
        how = "" if background_enabled() else " (no writable kernel cache: every process compiles)"
        print(f"tltok: kernels ready in {time.perf_counter() - t0:.1f} s{how}", file=sys.stderr)
    return "compiled kernels" if enc.compile_state == "compiled" else "Python encoder"


# ------------------------------------------------------------------------------------------------
# atomic outputs
# ------------------------------------------------------------------------------------------------

TMP_TAG = ".tltok-tmp-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # someone else's process (or an unusable number): leave its file alone
    return True


def remove_stale_temps(dest: Path) -> None:
    """Remove `.NAME.tltok-tmp-PID` left beside `dest` by a run that was killed (its PID is gone)."""
    prefix = f".{dest.name}{TMP_TAG}"
    try:
        entries = list(dest.parent.iterdir())
    except OSError:
        return
    for p in entries:
        if not p.name.startswith(prefix) or not p.name[len(prefix):].isdigit():
            continue
        pid = int(p.name[len(prefix):])
        if pid == os.getpid() or _pid_alive(pid):
            continue
        try:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        except OSError:
            pass


def _overlap(a: Path, b: Path) -> bool:
    """a is b, or one lies inside the other (after resolving symlinks and '..')."""
    a, b = a.resolve(), b.resolve()
    return a == b or a in b.parents or b in a.parents


def _check_writable_parent(dest: Path) -> None:
    for parent in (dest.parent, *dest.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise CliError(f"cannot write {dest}: {parent} is a file, not a directory (change -o/--output)")
            return


class Atomic:
    """Temporary paths next to their destinations, renamed into place by commit(), removed by abort().
    A destination that is, contains or lies inside one of `inputs` is refused."""

    def __init__(self, overwrite: bool, inputs: tuple[Path, ...] = ()):
        self.overwrite = overwrite
        self.inputs = inputs
        self.pairs: list[tuple[Path, Path]] = []

    def check(self, dest: Path) -> None:
        for inp in self.inputs:
            if _overlap(dest, inp):
                how = "is" if dest.resolve() == inp.resolve() else \
                    "lies inside" if inp.resolve() in dest.resolve().parents else "contains"
                raise CliError(f"output {dest} {how} the input {inp}: choose another -o/--output")
        if dest.exists() and not self.overwrite:
            raise CliError(f"output exists: {dest} (pass --overwrite to replace it)")

    def temp(self, dest: Path, is_dir: bool = False) -> Path:
        self.check(dest)
        _check_writable_parent(dest)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CliError(f"cannot create the output directory {dest.parent}: {e.strerror or e} "
                           "(change -o/--output)") from None
        remove_stale_temps(dest)
        tmp = dest.parent / f".{dest.name}{TMP_TAG}{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp) if tmp.is_dir() else tmp.unlink()
        if is_dir:
            tmp.mkdir()
        self.pairs.append((tmp, dest))
        return tmp

    def commit(self) -> None:
        for tmp, dest in self.pairs:
            if dest.exists():
                if dest.is_dir() and not dest.is_symlink():
                    old = dest.parent / f".{dest.name}.tltok-old-{os.getpid()}"
                    os.replace(dest, old)
                    os.replace(tmp, dest)
                    shutil.rmtree(old, ignore_errors=True)
                    continue
            os.replace(tmp, dest)
        self.pairs = []

    def abort(self) -> None:
        for tmp, _dest in self.pairs:
            try:
                if tmp.is_dir():
                    shutil.rmtree(tmp, ignore_errors=True)
                elif tmp.exists():
                    tmp.unlink()
            except OSError:
                pass
        self.pairs = []


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


# ------------------------------------------------------------------------------------------------
# encode
# ------------------------------------------------------------------------------------------------

def _check_columns(reader: Reader, column: str, keep: list[str]) -> None:
    import pyarrow as pa

    from ..columns.arrow import is_text_type

    if reader.schema is None:
        return
    names = reader.schema.names
    missing = [c for c in [column] + keep if c not in names]
    if missing:
        raise CliError(f"column {missing[0]!r} not found in {reader.path}; columns: {', '.join(names) or '(none)'}")
    t = reader.schema.field(column).type
    if not is_text_type(t) or pa.types.is_null(t):
        raise CliError(f"column {column!r} of {reader.path} has type {t}, not a string column")


_SPECIAL_HINT = " (--special text encodes special-token text as ordinary text)"


def _run_job(inputs, step, sink) -> None:
    """The pipeline of encode_job; its errors become CLI errors."""
    from . import encode_job

    try:
        encode_job.run(inputs, step, sink, passthrough=(CliError,))
    except encode_job.JobError as e:
        raise CliError(str(e)) from None


def _encode_files(readers: list[Reader], dests: list[Path], args, enc, keeps: list[list[str]],
                  progress: Progress) -> None:
    """Each reader's batches -> its Parquet file in `dests`, reading, encoding and writing overlapped."""
    from functools import partial

    from . import encode_job

    empty = [[r.schema.field(c) for c in k] if r.schema is not None else [] for r, k in zip(readers, keeps)]
    pad = None if args.pad_to is None else encode_job.PadTo(args.pad_to, args.pad_id, args.padding_side)
    sink = encode_job.ParquetSink(dests, keeps, empty, args.output_column, args.count_only, progress.update,
                                  pad_width=args.pad_to, compression=args.compression, ids_encoding=args.ids_encoding)
    step = encode_job.encode_step(enc, args.column, threads=args.threads, special=_special_kwargs(args.special),
                                  count_only=args.count_only, large_list=False, hint=_SPECIAL_HINT,
                                  max_length=args.max_length, truncation_side=args.truncation_side, pad=pad)
    inputs = [(r.path, partial(r.batches, list(dict.fromkeys(k + [args.column])), args.column))
              for r, k in zip(readers, keeps)]
    try:
        _run_job(inputs, step, sink)
    except BaseException:
        sink.abort()
        raise


def _id_batches(readers: list[Reader], args, enc):
    """(inputs, encode step) of the id-only outputs (--pack, --format megatron|bin)."""
    from functools import partial

    from . import encode_job

    step = encode_job.encode_step(enc, args.column, threads=args.threads, special=_special_kwargs(args.special),
                                  large_list=True, hint=_SPECIAL_HINT, max_length=args.max_length,
                                  truncation_side=args.truncation_side)
    return [(r.path, partial(r.batches, [args.column], args.column)) for r in readers], step


def _eos_id(args, enc) -> int | None:
    """The id --eos puts after every document (None without --eos)."""
    if not args.eos:
        return None
    try:
        return enc.eot_token
    except KeyError:
        raise CliError(f"encoding {enc.name!r} has no <|endoftext|> token for --eos") from None


def _pack(readers: list[Reader], args, enc, atomic: Atomic, progress: Progress) -> dict:
    import numpy as np

    from . import encode_job

    out = Path(args.output)
    if args.strategy is not None:
        return _pack_parquet(readers, args, enc, atomic, progress)
    if out.suffix != ".bin":
        raise CliError(f"--pack writes a .bin shard and a .json index: give -o NAME.bin (got {out})")
    index_path = out.with_suffix(".json")
    seq = int(args.pack)
    if seq <= 0:
        raise CliError("--pack needs a positive sequence length")
    eot = _eos_id(args, enc)
    dtype = np.uint16 if enc.n_vocab <= 65536 else np.uint32
    tmp_bin = atomic.temp(out)
    tmp_idx = atomic.temp(index_path)
    inputs, step = _id_batches(readers, args, enc)
    with open(tmp_bin, "wb") as f:
        sink = encode_job.PackSink(f, seq, dtype, eot, progress.update)
        _run_job(inputs, step, sink)
    n_seqs, docs, carry = sink.n_seqs, sink.docs, sink.carry
    index = {
        "format": "tltok-packed-v1",
        "dtype": np.dtype(dtype).name,
        "byte_order": "little",
        "seq_len": seq,
        "n_seqs": n_seqs,
        "n_tokens": n_seqs * seq,
        "encoding": enc.name,
        "n_vocab": enc.n_vocab,
        "eos": eot is not None,
        "eos_id": eot,
        "eos_placement": "after each document" if eot is not None else None,
        "documents": docs,
        "dropped_tail_tokens": int(len(carry)),
        "column": args.column,
        "source": [str(r.path) for r in readers],
        "shard": out.name,
    }
    with open(tmp_idx, "w", encoding="utf-8") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
    return index


def _pack_parquet(readers: list[Reader], args, enc, atomic: Atomic, progress: Progress) -> dict:
    """--pack N --strategy S: packed rows that keep document boundaries, as Parquet."""
    from . import encode_job

    out = Path(args.output)
    if out.suffix != ".parquet":
        raise CliError(f"--pack with --strategy writes packed rows as Parquet: give -o NAME.parquet (got {out})")
    seq = int(args.pack)
    if seq < 2:
        raise CliError(f"--pack needs a sequence length of at least 2 (got {seq})")
    eot = _eos_id(args, enc)
    options = {"strategy": args.strategy, "eos_id": eot, "long_documents": args.long_documents}
    inputs, step = _id_batches(readers, args, enc)
    sink = encode_job.PackedParquetSink(atomic.temp(out), seq, options, progress.update, args.compression)
    try:
        _run_job(inputs, step, sink)
    finally:
        sink.close()
    fill = sink.tokens / (sink.rows * seq) if sink.rows else 1.0
    return {"n_seqs": sink.rows, "seq_len": seq, "strategy": args.strategy, "documents": sink.documents,
            "skipped": sink.skipped, "split": sink.split, "dropped": sink.dropped, "fill": fill}


SHARD_FORMATS = ("parquet", "megatron", "bin")


def _shards(readers: list[Reader], args, enc, atomic: Atomic, progress: Progress) -> dict:
    from . import encode_job, shards

    writer_cls = {"megatron": shards.MegatronWriter, "bin": shards.FlatBinWriter}[args.format]
    prefix = shards.shard_prefix(args.output)
    if prefix.name in ("", ".", ".."):
        raise CliError(f"--format {args.format} needs -o PREFIX naming the shard files (got {args.output})")
    for dest in shards.shard_paths(prefix, args.format):
        atomic.check(dest)
        _check_writable_parent(dest)
        remove_stale_temps(dest)
    eot = _eos_id(args, enc)
    try:
        writer = writer_cls(prefix, n_vocab=enc.n_vocab, eos_id=eot, encoding=enc.name)
    except OSError as e:
        raise CliError(f"cannot write {prefix}.bin: {e.strerror or e} (change -o/--output)") from None
    try:
        inputs, step = _id_batches(readers, args, enc)
        _run_job(inputs, step, encode_job.ShardSink(writer, progress.update))
        writer.finalize()
    except BaseException:
        writer.abort()
        raise
    return {"n_documents": writer.n_documents, "skipped_empty": writer.skipped_empty,
            "files": [str(p) for p in shards.shard_paths(prefix, args.format)]}


def cmd_encode(args) -> int:
    inp = Path(args.input)
    files = list_inputs(inp)
    if args.keep_columns and args.all_columns:
        raise CliError("--keep-columns and --all-columns exclude each other")
    if args.pack is not None and args.count_only:
        raise CliError("--pack and --count-only exclude each other")
    shard = args.format != "parquet"
    if shard and args.pack is not None:
        raise CliError(f"--format {args.format} and --pack exclude each other (--pack writes its own .bin)")
    if shard and args.count_only:
        raise CliError(f"--format {args.format} and --count-only exclude each other")
    if shard and (args.keep_columns or args.all_columns or args.output_column):
        flag = "--keep-columns" if args.keep_columns else "--all-columns" if args.all_columns else "--output-column"
        raise CliError(f"{flag} only applies to --format parquet (shards hold ids only)")
    if args.eos and args.pack is None and not shard:
        raise CliError("--eos only applies to --pack or --format megatron|bin")
    _check_lengths(args, shard)
    _check_compression(args, shard)
    if args.strategy is not None and args.pack is None:
        raise CliError("--strategy only applies with --pack N")
    if args.long_documents != "split" and args.strategy is None:
        raise CliError("--long-documents only applies with --pack N --strategy")
    if args.output_column is None:
        args.output_column = "n_tokens" if args.count_only else "tokens"
    if args.threads is not None and args.threads < 0:
        raise CliError("--threads must be >= 0")
    args.threads = args.threads or 0
    enc = load_encoding(args.encoding, args.tokenizer)
    args.special = special_mode(args.special, enc)
    if args.pad_to is not None and not 0 <= args.pad_id < enc.n_vocab:
        raise CliError(f"--pad-id {args.pad_id} is not a token id of this encoding (0 to {enc.n_vocab - 1})")
    path = prepare_kernels(enc, quiet=args.quiet, job_bytes=sum(_file_size(p) for p, _rel in files))
    target = max(1, int(args.batch_mb * 1e6))
    readers = [Reader(p, target, args.column) for p, _rel in files]
    keep: list[str] = []
    if args.keep_columns:
        keep = [c.strip() for c in args.keep_columns.split(",") if c.strip()]
    def keep_for(r: Reader) -> list[str]:
        if args.all_columns:
            return list(r.schema.names) if r.schema is not None else [args.column]
        return keep

    for r in readers:
        k = keep_for(r)
        _check_columns(r, args.column, k if args.pack is None and not shard else [])
        if args.all_columns and args.output_column in (r.schema.names if r.schema is not None else []):
            raise CliError(f"output column {args.output_column!r} already exists in {r.path}; "
                           "pick another with --output-column")
    total_rows = None
    if all(r.num_rows is not None for r in readers):
        total_rows = sum(r.num_rows for r in readers)
    progress = Progress(sys.stderr.isatty() and not args.quiet, total_rows)
    atomic = Atomic(args.overwrite, inputs=(inp,))
    out = Path(args.output)
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        shard_info = None
        if args.pack is not None:
            index = _pack(readers, args, enc, atomic, progress)
        elif shard:
            index = None
            shard_info = _shards(readers, args, enc, atomic, progress)
        else:
            index = None
            if inp.is_dir():
                tmp_dir = atomic.temp(out, is_dir=True)
                dests = [tmp_dir / rel for _p, rel in files]
            else:
                if out.is_dir():
                    out = out / (inp.name.split(".")[0] + ".parquet")
                dests = [atomic.temp(out)]
            _encode_files(readers, dests, args, enc, [keep_for(r) for r in readers], progress)
        progress.finish()
        atomic.commit()
    except BaseException:
        progress.finish() if progress.enabled else None
        atomic.abort()
        raise
    finally:
        signal.signal(signal.SIGTERM, old)
    secs = progress.seconds
    if not args.quiet:
        what = f"{index['n_seqs']:,} sequences of {index['seq_len']}, " if index else ""
        if index and "fill" in index:
            what += (f"{index['documents']:,} documents ({index['skipped']:,} null/empty skipped, "
                     f"{index['split']:,} split, {index['dropped']:,} dropped), fill {index['fill']:.1%}, ")
        if shard_info:
            what = (f"{shard_info['n_documents']:,} documents ({shard_info['skipped_empty']:,} null/empty "
                    f"skipped), ")
        dest = " + ".join(shard_info["files"]) if shard_info else args.output
        if path != "compiled kernels" and enc.compile_state == "compiled":
            path = "Python encoder, then compiled kernels"
        print(f"tltok: {progress.rows:,} rows, {progress.tokens:,} tokens, {what}{secs:.2f} s, "
              f"{progress.bytes / 1e6 / max(secs, 1e-9):.1f} MB/s ({path}) -> {dest}")
    return 0


def _check_compression(args, shard: bool) -> None:
    """--compression and --ids-encoding: known values, each only where it applies."""
    if args.compression is not None:
        if args.compression not in CODECS:
            raise CliError(f"unknown --compression {args.compression!r}; use one of {', '.join(CODECS)}")
        if shard or (args.pack is not None and args.strategy is None):
            what = f"--format {args.format}" if shard else "--pack without --strategy"
            raise CliError(f"--compression only applies to Parquet output ({what} writes .bin shards)")
    if args.ids_encoding is not None:
        if args.ids_encoding not in IDS_ENCODINGS:
            raise CliError(f"unknown --ids-encoding {args.ids_encoding!r}; use one of {', '.join(IDS_ENCODINGS)}")
        if shard or args.pack is not None or args.count_only or args.pad_to is not None:
            raise CliError("--ids-encoding only applies to the list<uint32> ids column of Parquet output "
                           "(not --format megatron|bin, --pack, --count-only or --pad-to)")
    args.compression = args.compression or "zstd"
    args.ids_encoding = args.ids_encoding or "plain"


def _check_lengths(args, shard: bool) -> None:
    """--max-length / --pad-to and their side flags: each flag where it applies, each length >= 1."""
    for flag, value in (("--max-length", args.max_length), ("--pad-to", args.pad_to)):
        if value is not None and value < 1:
            raise CliError(f"{flag} must be at least 1 (got {value})")
    if args.pad_to is not None:
        for flag, on in (("--count-only", args.count_only), ("--pack", args.pack is not None),
                         (f"--format {args.format}", shard)):
            if on:
                raise CliError(f"--pad-to and {flag} exclude each other (--pad-to writes fixed-size Parquet rows)")
        if args.max_length is not None and args.max_length > args.pad_to:
            raise CliError(f"--max-length {args.max_length} is longer than --pad-to {args.pad_to} "
                           "(--pad-to alone cuts rows to its width)")
    elif args.pad_id != 0 or args.padding_side != "right":
        raise CliError(f"{'--pad-id' if args.pad_id != 0 else '--padding-side'} only applies with --pad-to")
    if args.truncation_side != "right" and args.max_length is None and args.pad_to is None:
        raise CliError("--truncation-side only applies with --max-length or --pad-to")


def _file_size(p) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0


def cmd_encode_ray(args) -> int:
    """`encode --ray`: the flags it refuses, then the job in tltok_jit.integrations.ray_job."""
    from . import ray_job

    if args.pack is not None:
        raise CliError("--pack is not supported with --ray (use --format megatron|bin, or drop --ray)")
    if args.compression not in (None, "zstd") or args.ids_encoding not in (None, "plain"):
        flag = "--compression" if args.compression not in (None, "zstd") else "--ids-encoding"
        raise CliError(f"{flag} is not supported with --ray (its shards are zstd Parquet, ids PLAIN)")
    shard = args.format != "parquet"
    _check_lengths(args, shard)
    if shard and args.count_only:
        raise CliError(f"--format {args.format} and --count-only exclude each other")
    if shard and (args.keep_columns or args.all_columns or args.output_column):
        flag = "--keep-columns" if args.keep_columns else "--all-columns" if args.all_columns else "--output-column"
        raise CliError(f"{flag} only applies to --format parquet (shards hold ids only)")
    if args.eos and not shard:
        raise CliError("--eos only applies to --format megatron|bin with --ray (--pack is not supported)")
    if args.ray_workers is not None and args.ray_workers < 1:
        raise CliError("--ray-workers must be >= 1")
    if args.shard_mb is None:
        args.shard_mb = 256.0
    if not args.shard_mb > 0:
        raise CliError("--shard-mb must be > 0")
    if args.threads is not None and args.threads < 0:
        raise CliError("--threads must be >= 0")
    inp = Path(args.input)
    files = [p for p, _rel in list_inputs(inp)]
    bad = [p for p in files if _kind(p) != "parquet"]
    if bad:
        raise CliError(f"--ray reads Parquet only; {bad[0]} is not a Parquet file (convert it, or drop --ray)")
    try:
        ray_job.import_ray()
    except ray_job.RayJobError as e:
        raise CliError(str(e)) from None
    if args.output_column is None:
        args.output_column = "n_tokens" if args.count_only else "tokens"
    keep = tuple(c.strip() for c in (args.keep_columns or "").split(",") if c.strip())
    enc = load_encoding(args.encoding, args.tokenizer)
    args.special = special_mode(args.special, enc)
    if args.pad_to is not None and not 0 <= args.pad_id < enc.n_vocab:
        raise CliError(f"--pad-id {args.pad_id} is not a token id of this encoding (0 to {enc.n_vocab - 1})")
    eos_id = _eos_id(args, enc)
    for p in files:
        r = Reader(p, 1, args.column)
        _check_columns(r, args.column, list(keep) if not shard else [])
        if args.all_columns and args.output_column in r.schema.names:
            raise CliError(f"output column {args.output_column!r} already exists in {p}; "
                           "pick another with --output-column")
    opts = ray_job.JobOptions(format=args.format, column=args.column, output_column=args.output_column,
                              count_only=args.count_only, keep_columns=keep, all_columns=args.all_columns,
                              special=args.special, eos=eos_id is not None, encoding=enc.name,
                              n_vocab=enc.n_vocab, max_length=args.max_length,
                              truncation_side=args.truncation_side, pad_to=args.pad_to, pad_id=args.pad_id,
                              padding_side=args.padding_side)
    try:
        return ray_job.run(inp=inp, files=files, out=Path(args.output), enc=enc, opts=opts,
                           special=_special_kwargs(args.special), address=args.ray, workers=args.ray_workers,
                           threads=args.threads or 1, shard_mb=args.shard_mb, batch_mb=args.batch_mb,
                           overwrite=args.overwrite, quiet=args.quiet)
    except ray_job.RayJobError as e:
        raise CliError(str(e)) from None


# ------------------------------------------------------------------------------------------------
# other commands
# ------------------------------------------------------------------------------------------------

def cmd_warmup(args) -> int:
    from ..compile import background as warm
    from ..kernels.jit import USER_CACHE
    from ..compile.worker import compile_parts, warm_encoding

    t0 = time.perf_counter()
    enc = load_encoding(args.encoding, args.tokenizer)
    t1 = time.perf_counter()

    def say(stage: str, seconds: float) -> None:
        if not args.quiet:
            print(f"tltok warmup: {stage} kernels ready ({seconds:.0f} s)", file=sys.stderr, flush=True)

    if USER_CACHE and not warm.all_ready(enc.compile_stages):
        if not args.quiet:
            print("tltok warmup: compiling the kernels (one-time for this machine and version)...",
                  file=sys.stderr, flush=True)
        lock = warm.take_lock()
        if lock is not None:  # compile here, in processes side by side (warm_worker.compile_parts)
            try:
                compile_parts(say, enc.compile_stages, enc.pattern_kind)
            finally:
                lock.close()
        else:  # a background worker is compiling them: wait for its stages rather than compile twice
            for stage in warm.stages_as_ready(enc.compile_stages):
                say(stage, time.perf_counter() - t1)
    # load them here (what no worker delivered, or every kernel without a shared cache: compiled here)
    warm_encoding(enc)
    t2 = time.perf_counter()
    if not args.quiet:
        print(f"tltok warmup: {enc.name} loaded in {t1 - t0:.2f} s, kernels compiled/loaded in {t2 - t1:.2f} s "
              f"(total {t2 - t0:.2f} s)")
    return 0


def _repo_bench() -> Path | None:
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):  # the checkout holding tltok_jit/
        p = root / "bench" / "run.py"
        if p.is_file():
            return p
    return None


def cmd_bench(args, rest: list[str]) -> int:
    script = _repo_bench()
    if script is None:
        raise CliError("tltok bench is not available: bench/run.py is part of the source checkout, "
                       "not of the installed package")
    return subprocess.call([sys.executable, str(script), *rest])


def cmd_stream(args, rest: list[str]) -> int:
    from .stream_cli import main as stream_cli_main

    return stream_cli_main(rest)


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tltok", description="Exact tiktoken-compatible tokenization of columnar data.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    e = sub.add_parser("encode", help="tokenize a text column of Parquet / Arrow IPC / JSONL into Parquet",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("input", metavar="INPUT", help="Parquet file or directory, Arrow IPC/Feather file, or JSONL")
    e.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                   help="Parquet file (or directory for a directory input); NAME.bin with --pack")
    e.add_argument("--column", default="text", help="the text column (default: text)")
    e.add_argument("--encoding", default=None, help="encoding name (default: o200k_base)")
    e.add_argument("--tokenizer", default=None, metavar="FILE", help="a .tiktoken rank file or a Hugging Face tokenizer.json instead of --encoding")
    e.add_argument("--threads", type=int, default=0, help="worker threads (default 0: all cores)")
    g = e.add_mutually_exclusive_group()
    g.add_argument("--keep-columns", default=None, metavar="A,B", help="input columns to copy to the output")
    g.add_argument("--all-columns", action="store_true", help="copy every input column to the output")
    e.add_argument("--output-column", default=None, help="name of the ids column (default tokens / n_tokens)")
    e.add_argument("--count-only", action="store_true", help="write int64 token counts instead of ids")
    e.add_argument("--special", choices=("text", "error", "allow"), default=None,
                   help="special-token text: encode as text (default), error, or allow as special ids "
                        "(WordPiece / Unigram tokenizer.json files: always allow, as tokenizers)")
    e.add_argument("--max-length", type=int, default=None, metavar="N",
                   help="keep at most N ids of each row (its first N; see --truncation-side)")
    e.add_argument("--truncation-side", choices=("right", "left"), default="right",
                   help="with --max-length or --pad-to: cut the end of a row (right, default) or its start")
    e.add_argument("--pad-to", type=int, default=None, metavar="N",
                   help="fixed-size rows: ids as fixed_size_list<int32>[N] (cut, then padded) plus attention_mask")
    e.add_argument("--pad-id", type=int, default=0, metavar="ID", help="with --pad-to: the padding id (default 0)")
    e.add_argument("--padding-side", choices=("right", "left"), default="right",
                   help="with --pad-to: pad after the ids (right, default) or before them")
    e.add_argument("--pack", type=int, default=None, metavar="SEQ_LEN",
                   help="write fixed-length training sequences to NAME.bin + NAME.json")
    e.add_argument("--strategy", choices=("bfd", "concat", "pad"), default=None,
                   help="with --pack: packed rows that keep document boundaries, as Parquet (input_ids, labels, "
                        "position_ids, seq_lens): bfd best-fit decreasing, concat cut every N ids, pad one per row")
    e.add_argument("--long-documents", choices=("split", "drop"), default="split",
                   help="with --strategy: a document longer than --pack is cut into windows (default) or dropped")
    e.add_argument("--format", default="parquet", choices=SHARD_FORMATS,
                   help="parquet (default); megatron: PREFIX.bin + PREFIX.idx; bin: PREFIX.bin + PREFIX.json")
    e.add_argument("--eos", action="store_true",
                   help="with --pack or --format megatron|bin: end every document with <|endoftext|>")
    e.add_argument("--compression", default=None, metavar="CODEC",
                   help=f"Parquet output: {', '.join(CODECS)} "
                        "(default zstd; lz4: ~15%% less write CPU, 36%% larger)")
    e.add_argument("--ids-encoding", default=None, metavar="ENCODING",
                   help=f"Parquet encoding of the ids column: {', '.join(IDS_ENCODINGS)} (default plain)")
    e.add_argument("--batch-mb", type=float, default=8.0, help="text per record batch, MB (default 8)")
    e.add_argument("--overwrite", action="store_true", help="replace an existing OUTPUT")
    e.add_argument("--quiet", action="store_true", help="no progress line and no summary")
    e.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on a Ray cluster (a local one without ADDRESS); OUTPUT is a directory of shards")
    e.add_argument("--ray-workers", type=int, default=None, metavar="N",
                   help="with --ray: actors, one CPU each (default: every CPU of the cluster)")
    e.add_argument("--shard-mb", type=float, default=None, metavar="MB",
                   help="with --ray: text per output shard, in whole row groups (default 256)")

    w = sub.add_parser("warmup", help="compile / load all kernels ahead of use and print the time")
    w.add_argument("--encoding", default=None, help="encoding name (default: o200k_base)")
    w.add_argument("--tokenizer", default=None, metavar="FILE",
                   help="a .tiktoken rank file or a Hugging Face tokenizer.json instead of --encoding")
    w.add_argument("--quiet", action="store_true")

    sub.add_parser("bench", help="run the benchmark suite (bench/run.py of a source checkout)", add_help=False)
    sub.add_parser("stream", help="streaming tokenization (tltok stream --help)", add_help=False)
    sub.add_parser("train", help="train a BPE vocabulary equal to HF's BpeTrainer (tltok train --help)",
                   add_help=False)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    try:
        if argv and argv[0] == "train":
            from .train_cli import main as train_main

            return train_main(argv[1:])
        if argv and argv[0] in ("bench", "stream"):
            cmd = argv[0]
            return cmd_bench(None, argv[1:]) if cmd == "bench" else cmd_stream(None, argv[1:])
        args = ap.parse_args(argv)
        if args.command == "encode":
            if args.ray is None and (args.ray_workers is not None or args.shard_mb is not None):
                raise CliError(f"{'--ray-workers' if args.ray_workers is not None else '--shard-mb'} needs --ray")
            return cmd_encode_ray(args) if args.ray is not None else cmd_encode(args)
        if args.command == "warmup":
            return cmd_warmup(args)
        ap.error(f"unknown command {args.command}")
    except CliError as e:
        print(f"tltok: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tltok: interrupted; no output written", file=sys.stderr)
        return 130
    except OSError as e:  # a file system refusal not foreseen above: still one line
        print(f"tltok: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
