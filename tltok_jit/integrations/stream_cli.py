"""`tltok stream`: token ids of stdin, written as they settle (works on an endless pipe).

    tltok stream --encoding o200k_base [--format text|u32] [--special text|error|allow]
                 [--allowed-special all|LIST] [--disallowed-special all|none|LIST]
                 [--chunk-size N] [--errors replace|strict]

stdin is read as bytes with `os.read` (returns as soon as some input is available, so a slow
producer is not waited for) and fed to `Encoding.stream_encoder().feed_bytes`; every batch of
final ids is written and flushed at once. `text` writes one decimal id per line; `u32` writes
little-endian uint32. Special tokens are plain text by default (`--allowed-special` makes them
ids; `--disallowed-special all` or `--special error` makes their appearance an error, as `encode`
does). Errors print one line naming the problem and the option to change, exit status 2; Ctrl-C
stops with status 130, the ids written so far standing.

Wiring into `tltok_jit/integrations/cli.py`: either hand the raw arguments over (cli.py already routes
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

`python -m tltok_jit.integrations.stream_cli ...` runs it on its own.
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
    """Run `tltok stream` with parsed `args`; returns the exit status (CliError for a bad option)."""
    from .cli_common import CliError, load_encoding, special_kwargs
    from ..errors import DisallowedSpecialTokenError

    enc = load_encoding(args.encoding, None)
    allowed = _specials(args.allowed_special)
    disallowed = _specials(args.disallowed_special, none_word="none")
    special = getattr(args, "special", None)
    refusing = "--disallowed-special"
    if special is not None:
        kw = special_kwargs(special)
        allowed, disallowed = kw["allowed_special"], kw["disallowed_special"]
        refusing = "--special error"
    from ..streaming.encode import StreamEncoder

    se = StreamEncoder(enc, allowed_special=allowed, disallowed_special=disallowed, errors=args.errors)
    out = sys.stdout.buffer
    text_format = args.format == "text"
    fd = sys.stdin.fileno()
    size = max(1, int(args.chunk_size))

    written = 0

    def write(ids: np.ndarray) -> None:
        nonlocal written
        if not len(ids):
            return
        if text_format:
            out.write(("\n".join(map(str, ids.tolist())) + "\n").encode("ascii"))
        else:
            out.write(ids.astype("<u4", copy=False).tobytes())
        out.flush()
        written += len(ids)

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
    except KeyboardInterrupt:
        print(f"tltok stream: interrupted after writing {written:,} ids; input after them was not encoded",
              file=sys.stderr)
        return 130
    except DisallowedSpecialTokenError as e:
        raise CliError(f"the input contains the disallowed special token {e.token!r} ({refusing} refuses it; "
                       f"--special allow encodes it as its id, --special text as text), after {written:,} ids"
                       ) from None
    except UnicodeDecodeError as e:
        raise CliError(f"the input is not valid UTF-8 ({e.reason} at byte {e.start} of a read), after "
                       f"{written:,} ids; --errors replace encodes it as U+FFFD") from None
    return 0


def main(argv=None) -> int:
    from .cli_common import CliError

    p = add_stream_arguments(argparse.ArgumentParser(prog="tltok stream", description=__doc__.split("\n")[0]))
    try:
        return stream_main(p.parse_args(argv))
    except CliError as e:
        print(f"tltok stream: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
