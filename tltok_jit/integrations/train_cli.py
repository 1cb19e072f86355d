"""`tltok train`: train a byte-level BPE vocabulary (`tltok_jit.train_bpe`) and write it.

    tltok train INPUT... --vocab-size 32000 [--pattern o200k_base|cl100k_base|gpt2|REGEX] -o mytok.json
                [--special '<|endoftext|>' ...] [--min-frequency N] [--max-token-length N]
                [--threads N] [--overwrite] [--quiet]

INPUT: files, folders (every file below them) or globs; `.parquet` files give their `text` column,
other files are UTF-8 text read line by line. OUTPUT: a Hugging Face tokenizer.json, or a tiktoken
rank file when it ends in `.tiktoken` (special tokens are not part of that format: they are listed
in the summary). The merges and ids equal `tokenizers`' BpeTrainer's (see `tltok_jit.training`).

A progress line (MB read, then merges done) is drawn on stderr when it is a terminal and `--quiet` is
not given. The output is written under a temporary name and renamed when complete; an existing one is
only replaced with `--overwrite`. Errors print one line naming the option to change, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .cli_common import CliError

# train_bpe's argument names -> the options that set them
_FLAGS = {"vocab_size": "--vocab-size", "min_frequency": "--min-frequency", "special_tokens": "--special",
          "pattern": "--pattern", "max_token_length": "--max-token-length", "source": "INPUT",
          "num_threads": "--threads"}


class TrainProgress:
    """The progress line: MB read while counting, then a bar of merges."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._width = 0
        self._stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if stage == self._stage and now - self._last < 0.2:
            return
        if stage != self._stage and self._stage:
            sys.stderr.write("\n")
            self._width = 0
        self._stage = stage
        self._last = now
        dt = max(now - self.t0, 1e-9)
        if stage == "count":
            line = f"counting pieces: {done / 1e6:,.1f} MB | {done / 1e6 / dt:,.1f} MB/s | {dt:,.0f} s"
        else:
            total = max(total, 1)
            width = 30
            filled = min(width, width * done // total)
            line = f"merging: [{'#' * filled}{' ' * (width - filled)}] {done:,}/{total:,} | {dt:,.0f} s"
        pad = max(self._width - len(line), 0)
        self._width = len(line)
        sys.stderr.write("\r" + line + " " * pad)
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self._stage:
            sys.stderr.write("\n")
            sys.stderr.flush()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tltok train", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", metavar="INPUT", help="text / Parquet files, folders or globs")
    ap.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="tokenizer.json, or NAME.tiktoken")
    ap.add_argument("--vocab-size", type=int, required=True, metavar="N", help="tokens in the vocabulary")
    ap.add_argument("--pattern", default="o200k_base",
                    help="split pattern: an encoding name (o200k_base, cl100k_base, gpt2, ...) or a regex")
    ap.add_argument("--special", action="append", default=[], metavar="TOKEN",
                    help="a special token (repeatable); they take the first ids")
    ap.add_argument("--min-frequency", type=int, default=0, metavar="N", help="stop at a pair seen fewer times")
    ap.add_argument("--max-token-length", type=int, default=None, metavar="N", help="as BpeTrainer's")
    ap.add_argument("--threads", type=int, default=0, help="counting threads (default 0: all cores)")
    ap.add_argument("--overwrite", action="store_true", help="replace an existing OUTPUT")
    ap.add_argument("--quiet", action="store_true", help="no progress line and no summary")
    return ap


def _source(inputs: list[str]):
    import glob

    for s in inputs:
        if not os.path.exists(s) and not glob.glob(s, recursive=True):
            raise CliError(f"input not found: {s} (INPUT)")
    if len(inputs) == 1:
        return inputs[0]
    from pathlib import Path

    paths = []
    for s in inputs:
        paths.extend(Path(p) for p in (sorted(glob.glob(s, recursive=True)) if not os.path.exists(s) else [s]))
    return paths


def run(args) -> int:
    from ..training import train_bpe

    out = args.output
    if os.path.exists(out) and not args.overwrite:
        raise CliError(f"output exists: {out} (pass --overwrite to replace it)")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise CliError(f"cannot write {out}: the folder {parent} does not exist (change -o/--output)")
    if args.threads < 0:
        raise CliError("--threads must be >= 0")
    progress = TrainProgress(not args.quiet and sys.stderr.isatty())
    t0 = time.perf_counter()
    try:
        enc = train_bpe(_source(args.inputs), args.vocab_size, pattern=args.pattern, special_tokens=args.special,
                        min_frequency=args.min_frequency, max_token_length=args.max_token_length,
                        num_threads=args.threads, progress=progress)
    except ValueError as e:
        raise CliError(_flagged(str(e))) from None
    finally:
        progress.finish()
    tmp = os.path.join(parent, f".{os.path.basename(out)}.tltok-tmp-{os.getpid()}")
    try:
        if out.endswith(".tiktoken"):
            enc.save_tiktoken(tmp)
        else:
            enc.save_tokenizer_json(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    if not args.quiet:
        n = len(enc.ranks) + sum(1 for t in enc.specials.values() if t not in set(enc.ranks.values()))
        extra = f"; special tokens {enc.specials}" if enc.specials else ""
        print(f"{out}: {n:,} tokens, {len(enc.merges):,} merges, {time.perf_counter() - t0:,.1f} s{extra}")
    return 0


def _flagged(message: str) -> str:
    """train_bpe's message with its argument name replaced by the option that sets it."""
    name, sep, rest = message.partition(":")
    if sep and name in _FLAGS:
        return f"{_FLAGS[name]}: {rest.strip()}"
    return message


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    try:
        return run(ap.parse_args(argv))
    except CliError as e:
        print(f"tltok: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tltok: interrupted; no output written", file=sys.stderr)
        return 130
    except OSError as e:
        print(f"tltok: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
