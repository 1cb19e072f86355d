"""`tltok encode INPUT -o OUTPUT --ray [ADDRESS]`: the encode job as Ray tasks, one output shard each.

The plan is fixed by the input alone: every Parquet file is cut into runs of consecutive row
groups holding about `shard_mb` MB of text column (from the file metadata), one task per run, in
file order; task i of n writes `OUTPUT/part-{i:05d}-of-{n:05d}.parquet` (or `.bin` + `.idx` /
`.json` for `--format megatron|bin`). Ray core actors (one CPU each, the tokenizer built once per
actor) read their row groups straight from the file system and write their shard themselves: only
per-shard counts travel back to the driver, so INPUT and OUTPUT must be paths every node sees.

Resuming: a shard is written under `.NAME.tltok-tmp-...` and renamed when complete (the index /
sidecar last for the binary formats). `OUTPUT/_manifest.json` records the plan and the options;
a rerun with the same input and options skips every shard whose files are complete (Parquet: the
footer's row count equals the plan's; megatron / bin: the index or sidecar agrees with the `.bin`
size), removes leftover temporary files and redoes the rest. Other input or options are refused
unless `--overwrite` starts over. A lock file keeps two runs out of one OUTPUT.

The binary formats give a shard list, not one merged file: `OUTPUT/shards.txt` names the shard
prefixes in input order (one a line); the documents of the shards, in that order, are the
documents of the single-process `--format` output (Megatron-LM takes the list as `--data-path`).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import TltokError

MANIFEST = "_manifest.json"
SHARD_LIST = "shards.txt"
LOCK = ".tltok-ray.lock"
TMP_TAG = ".tltok-tmp-"
MANIFEST_VERSION = 1
NO_RAY = "--ray needs Ray: pip install 'ray[data]'"


class RayJobError(TltokError):
    """A user-facing error of the Ray job: one line."""


@dataclass(frozen=True)
class ShardTask:
    """One output shard: row groups [rg_start, rg_end) of one input file."""

    index: int
    total: int
    file: str
    rg_start: int
    rg_end: int
    rows: int
    text_bytes: int

    @property
    def name(self) -> str:
        return f"part-{self.index:05d}-of-{self.total:05d}"


@dataclass(frozen=True)
class JobOptions:
    """What decides the content of a shard (recorded in the manifest)."""

    format: str
    column: str
    output_column: str
    count_only: bool
    keep_columns: tuple[str, ...]
    all_columns: bool
    special: str
    eos: bool
    encoding: str
    n_vocab: int
    max_length: int | None = None  # --max-length: each row's first (truncation_side "left": last) ids
    truncation_side: str = "right"
    pad_to: int | None = None      # --pad-to: fixed_size_list<int32>[pad_to] ids and attention_mask
    pad_id: int = 0
    padding_side: str = "right"


def import_ray():
    """The `ray` module, or the one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayJobError(NO_RAY) from None
    return ray


# ------------------------------------------------------------------------------------------------
# plan
# ------------------------------------------------------------------------------------------------

def _text_size(md, rg: int, column: str) -> int:
    g = md.row_group(rg)
    return sum(g.column(c).total_uncompressed_size for c in range(g.num_columns)
               if g.column(c).path_in_schema.split(".")[0] == column)


def plan_shards(files: list[Path], column: str, shard_mb: float) -> list[ShardTask]:
    """Consecutive row groups of each file, about `shard_mb` MB of text each; at least one task per file."""
    import pyarrow.parquet as pq

    target = max(1, int(shard_mb * 1e6))
    runs: list[tuple[str, int, int, int, int]] = []
    for f in files:
        try:
            md = pq.ParquetFile(str(f)).metadata
        except Exception as e:  # noqa: BLE001 - any footer failure is "unreadable file"
            raise RayJobError(f"cannot read {f}: {type(e).__name__}: {e}") from None
        start, rows, size = 0, 0, 0
        for rg in range(md.num_row_groups):
            if rg > start and size + _text_size(md, rg, column) > target:
                runs.append((str(f), start, rg, rows, size))
                start, rows, size = rg, 0, 0
            rows += md.row_group(rg).num_rows
            size += _text_size(md, rg, column)
        runs.append((str(f), start, md.num_row_groups, rows, size))
    n = len(runs)
    return [ShardTask(i, n, *r) for i, r in enumerate(runs)]


def shard_files(task: ShardTask, fmt: str) -> list[str]:
    """The file names of one shard; the last one is written last."""
    ext = {"parquet": (".parquet",), "megatron": (".bin", ".idx"), "bin": (".bin", ".json")}[fmt]
    return [task.name + e for e in ext]


# ------------------------------------------------------------------------------------------------
# completeness of a shard on disk
# ------------------------------------------------------------------------------------------------

def shard_complete(out: Path, task: ShardTask, opts: JobOptions) -> bool:
    """True when the shard's files are all there and agree with the plan (never raises)."""
    try:
        if opts.format == "parquet":
            import pyarrow.parquet as pq

            md = pq.ParquetFile(str(out / shard_files(task, "parquet")[0])).metadata
            names = md.schema.to_arrow_schema().names
            return md.num_rows == task.rows and bool(names) and names[-1] == opts.output_column
        bin_path, index_path = (out / n for n in shard_files(task, opts.format))
        if not (bin_path.is_file() and index_path.is_file()):
            return False
        from .shards import flat_dtype, megatron_dtype

        if opts.format == "bin":
            meta = json.loads(index_path.read_text(encoding="utf-8"))
            itemsize = flat_dtype(opts.n_vocab).itemsize
            return meta.get("rows") == task.rows and bin_path.stat().st_size == meta["n_tokens"] * itemsize
        raw = index_path.read_bytes()
        (n_seq,) = struct.unpack_from("<Q", raw, 18)
        lengths = memoryview(raw)[34:34 + 4 * n_seq].cast("i")
        itemsize = megatron_dtype(opts.n_vocab).itemsize
        return len(raw) == 34 + 12 * n_seq + 8 * (n_seq + 1) and \
            bin_path.stat().st_size == sum(lengths) * itemsize
    except Exception:  # noqa: BLE001 - missing, truncated or foreign: not complete
        return False


def remove_temps(out: Path) -> int:
    """Remove the temporary shard files a killed run left in `out`; how many."""
    n = 0
    for p in out.iterdir():
        if p.name.startswith(".part-") and TMP_TAG in p.name:
            try:
                p.unlink()
                n += 1
            except OSError:
                pass
    return n


def _text_bytes(col) -> int:
    """Bytes of text in a string / binary column (null rows count 0)."""
    import pyarrow.compute as pc

    return int(pc.sum(pc.binary_length(col)).as_py() or 0) if len(col) else 0


# ------------------------------------------------------------------------------------------------
# the worker: one actor per CPU
# ------------------------------------------------------------------------------------------------

class ShardWorker:
    """Builds the tokenizer once; `run(task)` writes one shard and returns its counts."""

    def __init__(self, encoding: Any, opts: JobOptions, out: str, special: dict, threads: int = 1,
                 batch_mb: float = 8.0):
        from ..ray import resolve_encoding
        from .kind_job import KindJob

        self.enc = encoding if isinstance(encoding, KindJob) else resolve_encoding(encoding)
        self.opts = opts
        self.out = Path(out)
        self.threads = threads
        self.special = dict(special)
        self.batch_bytes = max(1, int(batch_mb * 1e6))
        self.eos_id = self.enc.eot_token if opts.eos else None

    def ready(self) -> str:
        """Load (or compile) the kernels before the first task; the compile state."""
        import pyarrow as pa

        self.enc.encode_arrow(pa.array(["warm up", None]), num_threads=1)
        self.enc.count_arrow(pa.array(["warm up", None]), num_threads=1)
        return self.enc.compile_state

    def _batches(self, task: ShardTask, columns: list[str]):
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(task.file, pre_buffer=False)
        if task.rg_end > task.rg_start:
            per_row = max(task.text_bytes / max(task.rows, 1), 1.0)
            batch_rows = int(min(max(self.batch_bytes / per_row, 16), 1_000_000))
            self.first_row = sum(pf.metadata.row_group(g).num_rows for g in range(task.rg_start))
            for batch in pf.iter_batches(batch_size=batch_rows, columns=columns,
                                         row_groups=range(task.rg_start, task.rg_end)):
                yield batch
                self.first_row += batch.num_rows

    def _encode(self, task: ShardTask, col):
        """The ids (or counts) of one batch's column: a list<uint32> column, an int64 column, or with
        --pad-to the [ids, attention_mask] pair of fixed-size columns."""
        import pyarrow.compute as pc

        from ..columns.arrow import ArrowRowError
        from .encode_job import PadTo, padded_columns

        o = self.opts
        try:
            if o.count_only:
                res = self.enc.count_arrow(col, num_threads=self.threads, **self.special)
                return res if o.max_length is None else pc.min_element_wise(res, o.max_length, skip_nulls=False)
            if o.pad_to is not None:
                ids = self.enc.encode_arrow(col, num_threads=self.threads, **self.special)
                return padded_columns(ids, PadTo(o.pad_to, o.pad_id, o.padding_side), o.truncation_side,
                                      self.threads, self.enc.n_vocab)
            if o.max_length is not None:
                return self.enc.encode_arrow(col, num_threads=self.threads, large_list=False, max_length=o.max_length,
                                             truncation_side=o.truncation_side, **self.special)
            return self.enc.encode_arrow(col, num_threads=self.threads, large_list=False, **self.special)
        except (ArrowRowError, ValueError) as e:
            msg = str(e).splitlines()[0]
            row = getattr(e, "row", None)
            if row is not None and msg.startswith(f"row {row}"):  # the batch's row -> the file's row
                msg = f"row {self.first_row + row}" + msg[len(f"row {row}"):]
            raise RayJobError(f"{task.file}: {msg} (--special text encodes special-token text as "
                              "ordinary text)") from None

    def run(self, task: ShardTask) -> dict:
        t0 = time.perf_counter()
        tag = f"{TMP_TAG}{os.uname().nodename}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        stats = {"index": task.index, "rows": 0, "tokens": 0, "text_bytes": 0, "documents": 0,
                 "skipped_empty": 0}
        if self.opts.format == "parquet":
            self._run_parquet(task, tag, stats)
        else:
            self._run_shard(task, stats)
        stats["seconds"] = time.perf_counter() - t0
        return stats

    def _keep(self, schema) -> list[str]:
        if self.opts.all_columns:
            return list(schema.names)
        return list(self.opts.keep_columns)

    def _run_parquet(self, task: ShardTask, tag: str, stats: dict) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        dest = self.out / shard_files(task, "parquet")[0]
        tmp = self.out / f".{dest.name}{tag}"
        schema = pq.ParquetFile(task.file).schema_arrow
        keep = self._keep(schema)
        columns = list(dict.fromkeys(keep + [self.opts.column]))
        if self.opts.pad_to is not None:
            fixed = pa.list_(pa.int32(), self.opts.pad_to)
            out_fields = [pa.field(self.opts.output_column, fixed), pa.field("attention_mask", fixed)]
        else:
            out_fields = [pa.field(self.opts.output_column,
                                   pa.int64() if self.opts.count_only else pa.list_(pa.uint32()))]
        fields = [schema.field(c) for c in keep] + out_fields
        out_schema = pa.schema(fields)
        try:
            # no dictionary for the ids (as `tltok encode`: ~30% of the write's CPU for ~5% of its size)
            with pq.ParquetWriter(str(tmp), out_schema, compression="zstd", use_dictionary=list(keep)) as writer:
                for batch in self._batches(task, columns):
                    col = batch.column(batch.schema.get_field_index(self.opts.column))
                    res = self._encode(task, col)
                    if self.opts.count_only:
                        stats["tokens"] += int(pc.sum(res).as_py() or 0)
                    elif self.opts.pad_to is not None:  # the real ids: the mask's ones
                        stats["tokens"] += int(pc.sum(res[1].flatten()).as_py() or 0)
                    else:
                        stats["tokens"] += int(res.offsets[-1].as_py() - res.offsets[0].as_py()) if len(res) else 0
                    stats["rows"] += batch.num_rows
                    stats["text_bytes"] += _text_bytes(col)
                    res = res if self.opts.pad_to is not None else [res]
                    arrays = [batch.column(batch.schema.get_field_index(c)) for c in keep] + res
                    writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=out_schema))
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _run_shard(self, task: ShardTask, stats: dict) -> None:
        from . import shards

        prefix = self.out / task.name
        if self.opts.format == "megatron":
            writer = shards.MegatronWriter(prefix, n_vocab=self.enc.n_vocab, eos_id=self.eos_id,
                                           encoding=self.enc.name)
        else:
            writer = shards.FlatBinWriter(prefix, n_vocab=self.enc.n_vocab, eos_id=self.eos_id,
                                          encoding=self.enc.name, extra={"rows": task.rows})
        with writer:
            for batch in self._batches(task, [self.opts.column]):
                col = batch.column(0)
                before = writer.n_tokens
                writer.add(self._encode(task, col))
                stats["tokens"] += writer.n_tokens - before
                stats["rows"] += batch.num_rows
                stats["text_bytes"] += _text_bytes(col)
        stats["documents"] = writer.n_documents
        stats["skipped_empty"] = writer.skipped_empty


# ------------------------------------------------------------------------------------------------
# the driver
# ------------------------------------------------------------------------------------------------

class ShardProgress:
    """`shards done/total | rows | MB | MB/s` on stderr: redrawn on a terminal, a line every 5 s otherwise."""

    def __init__(self, enabled: bool, total: int, skipped: int):
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.total = total
        self.done = skipped
        self.rows = 0
        self.bytes = 0
        self.tokens = 0
        self.t0 = time.perf_counter()
        self._last = 0.0

    def update(self, stats: dict) -> None:
        self.done += 1
        self.rows += stats["rows"]
        self.bytes += stats["text_bytes"]
        self.tokens += stats["tokens"]
        now = time.perf_counter()
        if self.enabled and (now - self._last >= (0.2 if self.tty else 5.0) or self.done == self.total):
            self._last = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        dt = max((now or time.perf_counter()) - self.t0, 1e-9)
        return (f"{self.done:,}/{self.total:,} shards | {self.rows:,} rows | {self.bytes / 1e6:,.1f} MB | "
                f"{self.bytes / 1e6 / dt:,.1f} MB/s | {dt:,.0f} s")

    def _draw(self, now: float) -> None:
        end = "" if self.tty else "\n"
        sys.stderr.write(("\r" if self.tty else "") + "tltok: " + self.line(now) + end)
        sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _overlap(a: Path, b: Path) -> bool:
    a, b = a.resolve(), b.resolve()
    return a == b or a in b.parents or b in a.parents


def _manifest(tasks: list[ShardTask], opts: JobOptions, files: list[Path]) -> dict:
    inputs = []
    for f in files:
        st = f.stat()
        inputs.append({"file": str(f.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    return {"version": MANIFEST_VERSION, "options": asdict(opts), "inputs": inputs,
            "shards": [{"name": t.name, "file": str(Path(t.file).resolve()), "row_groups": [t.rg_start, t.rg_end],
                        "rows": t.rows} for t in tasks]}


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_name(f".{path.name}{TMP_TAG}{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _prepare_output(out: Path, inp: Path, manifest: dict, overwrite: bool):
    """Create / check OUTPUT and take its lock; the open lock file."""
    import fcntl

    if _overlap(out, inp):
        raise RayJobError(f"output {out} overlaps the input {inp}: choose another -o/--output")
    if out.exists() and not out.is_dir():
        raise RayJobError(f"--ray writes a directory of shards, but {out} is a file (change -o/--output)")
    out.mkdir(parents=True, exist_ok=True)
    lock = open(out / LOCK, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise RayJobError(f"another tltok --ray run is writing {out} (wait for it or change -o/--output)") from None
    entries = [p for p in out.iterdir() if p.name != LOCK]
    mpath = out / MANIFEST
    if entries and overwrite:
        for p in entries:
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    elif mpath.is_file():
        try:
            old = json.loads(mpath.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = {}
        for key in ("version", "options", "inputs", "shards"):
            if old.get(key) != manifest[key]:
                what = key
                if key == "options" and isinstance(old.get(key), dict):
                    what = next((f"option {k}" for k in manifest[key] if old[key].get(k) != manifest[key][k]), key)
                raise RayJobError(f"{out} holds a run with other {what} (pass --overwrite to start over)")
    elif entries:
        raise RayJobError(f"output exists: {out} (pass --overwrite to replace it)")
    _write_json(mpath, {**manifest, "complete": False})
    return lock


def _connect(ray, address: str, workers: int | None) -> None:
    kwargs = dict(log_to_driver=False, configure_logging=False, include_dashboard=False)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=workers or os.cpu_count() or 1, **kwargs)
    except Exception as e:  # noqa: BLE001 - refused connection, bad address, no local start
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        raise RayJobError(f"cannot start or reach {where}: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''} (check --ray ADDRESS)") from None


def _cause(err) -> BaseException:
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, BaseException) else err


def run(*, inp: Path, files: list[Path], out: Path, enc, opts: JobOptions, special: dict, address: str,
        workers: int | None, threads: int, shard_mb: float, batch_mb: float, overwrite: bool,
        quiet: bool) -> int:
    """Plan, connect, skip the complete shards, run the rest on `workers` actors; prints a summary."""
    ray = import_ray()
    t_job = time.perf_counter()
    tasks = plan_shards(files, opts.column, shard_mb)
    manifest = json.loads(json.dumps(_manifest(tasks, opts, files)))  # as it reads back
    lock = _prepare_output(out, inp, manifest, overwrite)
    try:
        removed = remove_temps(out)
        todo = [t for t in tasks if not shard_complete(out, t, opts)]
        for t in todo:  # a shard that is not complete is redone from nothing
            for name in shard_files(t, opts.format):
                (out / name).unlink(missing_ok=True)
        progress = ShardProgress(not quiet, len(tasks), len(tasks) - len(todo))
        if not quiet and (removed or len(todo) < len(tasks)):
            print(f"tltok: resuming {out}: {len(tasks) - len(todo)} of {len(tasks)} shards complete, "
                  f"{removed} temporary files removed", file=sys.stderr)
        t_first = None
        if todo:
            _connect(ray, address, workers)
            t_first = _run_tasks(ray, todo, enc, opts, out, dict(workers=workers, threads=threads, special=special,
                                                                batch_mb=batch_mb), progress) - t_job
        progress.finish()
        if opts.format != "parquet":
            (out / SHARD_LIST).write_text("".join(t.name + "\n" for t in tasks), encoding="utf-8")
        _write_json(out / MANIFEST, {**manifest, "complete": True})
    finally:
        lock.close()
    secs = time.perf_counter() - progress.t0
    if not quiet:
        first = f"; first shard {t_first:.1f} s after start" if t_first is not None else ""
        print(f"tltok: {len(todo):,} shards written, {len(tasks) - len(todo):,} already complete; "
              f"{progress.rows:,} rows, {progress.tokens:,} tokens, {secs:.2f} s on the workers, "
              f"{progress.bytes / 1e6 / max(secs, 1e-9):.1f} MB/s{first} -> {out}")
    return 0


def _run_tasks(ray, todo: list[ShardTask], enc, opts: JobOptions, out: Path, conf: dict,
               progress: ShardProgress) -> float:
    """Every task of `todo` on an actor pool, two in flight per actor; the clock when the first
    shard was done. The progress clock starts when every actor holds its tokenizer."""
    n_cpus = int(ray.cluster_resources().get("CPU", 1))
    per = max(1, conf["threads"])
    size = max(1, min(conf["workers"] or n_cpus // per, len(todo)))
    actor_cls = ray.remote(num_cpus=per)(ShardWorker)
    actors = [actor_cls.remote(enc, opts, str(out.resolve()), conf["special"], per, conf["batch_mb"])
              for _ in range(size)]
    try:
        ray.get([a.ready.remote() for a in actors])
    except Exception as e:  # noqa: BLE001
        raise RayJobError(f"the Ray workers could not load the tokenizer: {_cause(e)}") from None
    progress.t0 = time.perf_counter()
    pending: dict = {}
    queue = list(reversed(todo))
    t_first = None

    def submit(actor):
        if queue:
            pending[actor.run.remote(queue.pop())] = actor

    for a in actors:
        submit(a)
        submit(a)
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            actor = pending.pop(ready[0])
            try:
                stats = ray.get(ready[0])
            except Exception as e:  # noqa: BLE001
                c = _cause(e)
                if isinstance(c, RayJobError):
                    raise RayJobError(str(c)) from None
                raise RayJobError(f"a shard task failed: {type(c).__name__}: {str(c).splitlines()[0] if str(c) else ''}"
                                  ) from None
            if t_first is None:
                t_first = time.perf_counter()
            progress.update(stats)
            submit(actor)
    finally:
        if pending:  # a failed shard: stop the others now (their temporary files go on the next run)
            # the first failure is the one reported; Ray would print every other failed task's
            # traceback when its reference is dropped (read by Ray at that moment, so set here)
            os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
            for a in actors:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - already gone
                    pass
    return t_first
