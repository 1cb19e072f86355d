"""`tltok stream`: token ids of stdin, written as they settle (works on an endless pipe).

    tltok stream --encoding o200k_base [--format text|u32] [--special text|error|allow]
                 [--allowed-special all|LIST] [--disallowed-special all|none|LIST]
                 [--chunk-size N] [--errors replace|strict]

stdin is read as bytes with `os.read` (returns as soon as some input is available, so a slow
producer is not waited for) and fed to `Encoding.stream_encoder().feed_bytes`; every batch of
final ids is written and flushed at once. `text` writes one decimal id per line; `u32` writes
little-endian uint32. Special tokens are plain text by default (`--allowed-special` makes them
ids; `--disallowed-special all` makes their appearance an error, exit status 1, as `encode` does).

Wiring into `tltok_jit/cli.py`: either hand the raw arguments over (cli.py already routes
`tltok stream ...` to `cmd_stream(None, argv[1:])`):

    def cmd_stream(_args, argv):
        from .stream_cli import main as stream_cli_main
        return stream_cli_main(argv)

or as a regular sub-command:

    from .stream_cli import add_stream_arguments, stream_main
    add_stream_arguments(sub.add_parser("stream", help="encode stdin incrementally, ids out as they settle"))
    ...
    if args.command == "stream":
        return stream_main(args)

`python -m tltok_jit.stream_cli ...` runs it on its own.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def add_stream_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--encoding", "-e", default="o200k_base", help="encoding name (default o200k_base)")
    p.add_argument("--format", "-f", choices=("text", "u32"), default="text",
                   help="text: one decimal id per line; u32: little-endian uint32 (default text)")
    p.add_argument("--special", choices=("text", "error", "allow"), default=None,
                   help="as in `tltok encode`: special-token text is plain text (default), an error, or ids; "
                        "overrides the two options below")
    p.add_argument("--allowed-special", default="",
                   help="'all' or a comma-separated list of special tokens to encode as their ids")
    p.add_argument("--disallowed-special", default="none",
                   help="'none' (default: other special tokens are plain text), 'all' (error if one "
                        "appears, like encode), or a comma-separated list")
    p.add_argument("--chunk-size", type=int, default=1 << 16, help="largest read from stdin, in bytes")
    p.add_argument("--errors", choices=("replace", "strict"), default="replace",
                   help="invalid UTF-8 in the input: U+FFFD (default) or an error")
    return p


def _specials(value: str, *, none_word: str | None = None):
    v = value.strip()
    if v == "all":
        return "all"
    if none_word is not None and v == none_word:
        return ()
    return {s for s in v.split(",") if s}


def stream_main(args) -> int:
    """Run `tltok stream` with parsed `args`; returns the exit status."""
    from . import get_encoding

    enc = get_encoding(args.encoding)
    allowed = _specials(args.allowed_special)
    disallowed = _specials(args.disallowed_special, none_word="none")
    special = getattr(args, "special", None)
    if special is not None:
        allowed, disallowed = {"text": (set(), ()), "error": (set(), "all"), "allow": ("all", ())}[special]
    from .stream_encode import StreamEncoder

    se = StreamEncoder(enc, allowed_special=allowed, disallowed_special=disallowed, errors=args.errors)
    out = sys.stdout.buffer
    text_format = args.format == "text"
    fd = sys.stdin.fileno()
    size = max(1, int(args.chunk_size))

    def write(ids: np.ndarray) -> None:
        if not len(ids):
            return
        if text_format:
            out.write(("\n".join(map(str, ids.tolist())) + "\n").encode("ascii"))
        else:
            out.write(ids.astype("<u4", copy=False).tobytes())
        out.flush()

    try:
        while True:
            data = os.read(fd, size)
            if not data:
                break
            write(se.feed_bytes(data))
        write(se.finish())
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, without a second error at exit
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except OSError:
            pass
        return 0
    except (ValueError, UnicodeDecodeError) as e:
        print(f"tltok stream: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    p = add_stream_arguments(argparse.ArgumentParser(prog="tltok stream", description=__doc__.split("\n")[0]))
    return stream_main(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
