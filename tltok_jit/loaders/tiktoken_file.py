"""Reader for tiktoken's `.tiktoken` rank files: one `<base64 token> <rank>` per line.

The fast path checks the whole file's layout, parses the ranks and decodes the base64 of every token with
a few vectorised numpy passes over the raw bytes (o200k_base: ~65 ms against ~110 ms for
`tiktoken.load.load_tiktoken_bpe`; most of what is left is creating 200k bytes objects and the dict).
Only when one of its checks fails does the slow path walk the file line by line to find the first
offending line and say exactly what is wrong with it. The fast path never accepts what the slow path
refuses, and both give the same dict; every error names the file and the 1-based line number.

Rules (all satisfied by the published OpenAI files):

* every non-blank line is `<base64> <rank>`: one ASCII space, standard base64 with `=` padding (length a
  multiple of 4), a rank of ASCII digits. A trailing `\\r` (CRLF files) and blank lines are tolerated,
  as tiktoken tolerates them;
* tokens are non-empty and distinct, ranks are distinct;
* the ranks are exactly 0..n-1, except that ids listed in `reserved_ids` may be missing (p50k_base leaves
  50256 free for `<|endoftext|>`; `read_tiktoken_model` passes the special-token ids).

Whisper's `multilingual.tiktoken` ends with the line `= 50256`, an empty token that tiktoken's lenient
decoder maps to `b""`. That is rejected unless `allow_empty_token=True`, which keeps it (as `b"" -> 50256`,
exactly what `tiktoken.load.load_tiktoken_bpe` returns).
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterable

import numpy as np

from ..model.description import AddedToken, ModelDescription, TokenizerFileError
from ..model.patterns import kind_of_pattern

__all__ = ["load_tiktoken_ranks", "read_tiktoken_model"]

_NL, _SP = 10, 32
_DIGITS = b"0123456789"
_B64_TOKEN_RE = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
_HAS_STRICT = sys.version_info >= (3, 11)


def _fail(path, line: int | None, msg: str) -> TokenizerFileError:
    where = f"{os.fspath(path)}:{line}" if line is not None else os.fspath(path)
    return TokenizerFileError(f"{where}: {msg}")


def _b64_strict(tok: bytes) -> bytes:
    """Decode canonical-layout base64 or raise binascii.Error."""
    if len(tok) & 3:
        raise binascii.Error(f"length {len(tok)} is not a multiple of 4")
    if _HAS_STRICT:
        return binascii.a2b_base64(tok, strict_mode=True)
    if _B64_TOKEN_RE.fullmatch(tok) is None:
        raise binascii.Error("not standard base64")
    return binascii.a2b_base64(tok)


def _b64_table() -> np.ndarray:
    lut = np.full(256, 255, dtype=np.uint8)
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    lut[np.frombuffer(alphabet, dtype=np.uint8)] = np.arange(64, dtype=np.uint8)
    lut[ord("=")] = 64
    return lut


_B64_LUT = _b64_table()


def _fast(data: bytes, reserved: frozenset[int], allow_empty: bool) -> dict[bytes, int] | None:
    """Parse a well-formed file with vectorised passes; return None if anything is off.

    It never returns a wrong answer: whatever it accepts, `_slow` accepts with the same result (tested);
    whatever it refuses goes to `_slow`, which finds the line and raises (or accepts a tolerated oddity
    such as blank lines or an allowed empty token).
    """
    if not data.endswith(b"\n"):
        data += b"\n"  # a last line without newline is fine; a truncated one fails the layout check
    arr = np.frombuffer(data, dtype=np.uint8)
    seps = np.flatnonzero((arr == _NL) | (arr == _SP))
    n = len(seps) // 2
    if n == 0 or len(seps) & 1:
        return None
    kinds = arr[seps]
    if (kinds[0::2] != _SP).any() or (kinds[1::2] != _NL).any():
        return None  # a line without exactly one space, a blank line, or a stray space
    sp, nl = seps[0::2], seps[1::2]
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = nl[:-1] + 1
    tok_len = sp - starts
    rank_len = nl - sp - 1
    if rank_len.min() <= 0 or rank_len.max() > 18:
        return None
    bad_len = (tok_len & 3) != 0
    if bad_len.any():
        # the only token whose length is not a multiple of 4 that we keep: whisper's '=' (empty token)
        if not allow_empty:
            return None
        eq = np.uint8(ord("="))
        empty = (tok_len <= 2) & (arr[starts] == eq) & ((tok_len == 1) | (arr[starts + 1] == eq))
        if (bad_len & ~empty).any():
            return None
    if tok_len.min() <= 0:
        return None

    # ranks: ASCII digits, parsed column by column
    ranks = np.zeros(n, dtype=np.int64)
    last = len(arr) - 1
    for k in range(int(rank_len.max())):
        has = rank_len > k
        digit = arr[np.minimum(sp + 1 + k, last)] - np.uint8(48)
        if (digit[has] > 9).any():
            return None  # a sign, a letter, a '\r' ...
        ranks = np.where(has, ranks * 10 + digit, ranks)

    # tokens: every token is whole base64 quads; gather the four columns of all quads and decode at once
    n_quads = tok_len >> 2
    q_end = np.cumsum(n_quads)
    off = np.arange(int(q_end[-1]), dtype=np.int64) * 4
    off += np.repeat(starts - 4 * (q_end - n_quads), n_quads)
    c0, c1, c2, c3 = (_B64_LUT[arr[off + i]] for i in range(4))
    if (c0 > 63).any() or (c1 > 63).any() or (c2 == 255).any() or (c3 == 255).any():
        return None  # not a base64 character, or '=' in the first half of a quad
    pad2, pad3 = c2 == 64, c3 == 64
    last_quad = q_end - 1
    if pad3.any():
        if (pad2 & ~pad3).any() or pad3.sum() != pad3[last_quad].sum():
            return None  # 'xx=x', or padding before a token's last quad
        n_pad = pad2[last_quad].astype(np.int64) + pad3[last_quad]
        c2 = np.where(pad2, np.uint8(0), c2)
        c3 = np.where(pad3, np.uint8(0), c3)
    elif pad2.any():
        return None
    else:
        n_pad = 0
    out = np.empty((len(off), 3), dtype=np.uint8)
    out[:, 0] = (c0 << 2) | (c1 >> 4)
    out[:, 1] = (c1 << 4) | (c2 >> 2)
    out[:, 2] = (c2 << 6) | c3
    buf = out.tobytes()
    hi = (3 * q_end - n_pad).tolist()
    lo = (3 * (q_end - n_quads)).tolist()
    tokens = [buf[i:j] for i, j in zip(lo, hi)]

    if np.array_equal(ranks, np.arange(n)):  # the published files: sorted 0..n-1
        result = dict(zip(tokens, range(n)))
    else:
        srt = np.sort(ranks)
        top = int(srt[-1])
        if (srt[1:] == srt[:-1]).any() or top + 1 - n > len(reserved):
            return None  # duplicate rank, or more holes than reserved ids
        if top + 1 != n:
            holes = np.setdiff1d(np.arange(top + 1), srt, assume_unique=True)
            if not reserved.issuperset(holes.tolist()):
                return None  # a hole that no special token fills
        result = dict(zip(tokens, ranks.tolist()))
    if len(result) != n:
        return None  # duplicate token bytes
    return result


def _slow(path, data: bytes, reserved: frozenset[int], allow_empty: bool) -> dict[bytes, int]:
    """Line-by-line parse that raises on the first problem, naming the line. Accepts what `_fast` accepts."""
    out: dict[bytes, int] = {}
    token_line: dict[bytes, int] = {}
    rank_line: dict[int, int] = {}
    lines = data.split(b"\n")
    last = len(lines)
    if lines and lines[-1] == b"":
        last -= 1
    for lineno, line in enumerate(lines[:last], 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            continue  # blank lines are tolerated (tiktoken skips them)
        fields = line.split(b" ")
        if len(fields) == 1:
            trunc = " (truncated last line?)" if lineno == last else ""
            raise _fail(path, lineno, f"missing rank after the token {line[:40]!r}{trunc}")
        if len(fields) != 2:
            raise _fail(path, lineno, f"expected '<base64 token> <rank>' separated by one space, got {line[:80]!r}")
        tok, rk = fields
        if not tok:
            raise _fail(path, lineno, "empty token (the line starts with a space)")
        if not rk:
            raise _fail(path, lineno, "missing rank after the space")
        if rk.startswith(b"-") and len(rk) > 1 and not rk[1:].translate(None, _DIGITS):
            raise _fail(path, lineno, f"negative rank {rk.decode()}")
        if rk.translate(None, _DIGITS):
            raise _fail(path, lineno, f"rank is not a non-negative decimal integer: {rk[:40]!r}")
        rank = int(rk)
        if tok.strip(b"=") == b"" and len(tok) <= 2:
            if not allow_empty:
                raise _fail(path, lineno, f"empty token ({tok.decode()!r} decodes to b''); "
                                          f"pass allow_empty_token=True to keep it as tiktoken does")
            b = b""
        else:
            try:
                b = _b64_strict(tok)
            except (binascii.Error, ValueError) as e:
                raise _fail(path, lineno, f"invalid base64 token {tok[:60]!r}: {e}") from None
            if not b:
                raise _fail(path, lineno, "empty token")
        if b in token_line:
            raise _fail(path, lineno, f"duplicate token {b!r} (already on line {token_line[b]})")
        if rank in rank_line:
            raise _fail(path, lineno, f"duplicate rank {rank} (already on line {rank_line[rank]})")
        token_line[b] = lineno
        rank_line[rank] = lineno
        out[b] = rank
    if not out:
        raise _fail(path, None, "no tokens in the file")
    expected = 0
    for r in sorted(rank_line):
        while expected < r:
            if expected not in reserved:
                # blame the first line (in file order) whose rank lies beyond the hole: in a sorted file
                # that is where the ranks jump, in a file with one stray rank it is the stray line
                line, rank = min((ln, rk) for rk, ln in rank_line.items() if rk > expected)
                raise _fail(path, line,
                            f"ranks must be exactly 0..n-1: rank {expected} is missing, "
                            f"and this line already has rank {rank}")
            expected += 1
        expected = r + 1
    return out


def load_tiktoken_ranks(
    path: str | os.PathLike,
    *,
    reserved_ids: Iterable[int] = (),
    allow_empty_token: bool = False,
    data: bytes | None = None,
) -> dict[bytes, int]:
    """Parse a `.tiktoken` file into {token bytes: rank}, exactly like `tiktoken.load.load_tiktoken_bpe`.

    `reserved_ids`: ranks that may be absent from the file because special tokens occupy them.
    `data`: the file's contents if already in memory (then `path` only names it in messages).
    Raises `TokenizerFileError` naming the file and line on malformed input, OSError if unreadable.
    """
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    reserved = frozenset(reserved_ids)
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    out = _fast(data, reserved, allow_empty_token) if data else None
    if out is None:
        out = _slow(path, data, reserved, allow_empty_token)  # raises with the line, or accepts
    return out


def read_tiktoken_model(
    path: str | os.PathLike,
    *,
    name: str,
    pattern: str,
    special_tokens: dict[str, int],
    pattern_kind: str | None = None,
    explicit_n_vocab: int | None = None,
    allow_empty_token: bool = False,
    allow_shared_special_ids: bool = False,
    data: bytes | None = None,
    lazy: bool = False,
    sha256: str | None = None,
    read: Callable[[], bytes] | None = None,
) -> ModelDescription:
    """Read a `.tiktoken` rank file and the code-defined parts of an encoding into a ModelDescription.

    Special-token ids must not be ranks of the file; ids the file leaves free below its largest rank are
    allowed only if a special token takes them (p50k_base's 50256). `explicit_n_vocab`, if given, must be
    the largest id + 1 and the number of distinct ids. Two special tokens may share an id only with
    `allow_shared_special_ids=True`: tiktoken's o200k_harmony maps both '<|endofprompt|>' and
    '<|reserved_200018|>' to 200018 (tiktoken decodes 200018 as '<|endofprompt|>').
    `data`: the file's contents if already in memory (then `path` only names it, also as `source`).
    `lazy`: parse and check the ranks when the description's `vocab` is first read (it carries a
    `digest` of the file and of these arguments for the table cache, which then never needs them).
    `sha256` and `read` (with `lazy`): the file's published hash, which the digest is made from, and
    a function returning the contents checked against it (the caller's check), called only when `vocab`
    is first read: a process whose tables are cached never reads the file.
    """
    src = os.fspath(path)
    ids: dict[int, str] = {}
    for content, tid in special_tokens.items():
        if not isinstance(content, str) or not content:
            raise TokenizerFileError(f"{src}: special token {content!r} of {name!r} must be a non-empty str")
        if isinstance(tid, bool) or not isinstance(tid, int) or tid < 0:
            raise TokenizerFileError(f"{src}: special token {content!r} of {name!r} has invalid id {tid!r}")
        if tid in ids:
            if allow_shared_special_ids:
                continue
            raise TokenizerFileError(
                f"{src}: special tokens {ids[tid]!r} and {content!r} of {name!r} share id {tid}")
        ids[tid] = content
    added = [AddedToken(content, tid, special=True) for content, tid in special_tokens.items()]
    common = dict(name=name, merges=None, pattern=pattern, added_tokens=added, ignore_merges=True,
                  pattern_kind=pattern_kind, source=src, explicit_n_vocab=explicit_n_vocab)
    check = (src, name, ids, explicit_n_vocab, allow_empty_token)
    if not lazy:
        return ModelDescription(vocab=_checked_ranks(*check, data), **common)
    if sha256 is None:
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        sha256 = hashlib.sha256(data).hexdigest()
        loader = functools.partial(_checked_ranks, *check, data)
    else:
        if read is None:
            raise TypeError("read_tiktoken_model: `sha256` needs `read`, the reader that checks it")
        loader = functools.partial(_ranks_of_read, check, read)
    h = hashlib.sha256(sha256.encode())
    h.update(repr((name, sorted(ids.items()), explicit_n_vocab, allow_empty_token)).encode())
    return ModelDescription(vocab=None, vocab_loader=loader, digest="tiktoken:" + h.hexdigest(), **common)


def _ranks_of_read(check: tuple, read: Callable[[], bytes]) -> dict[bytes, int]:
    return _checked_ranks(*check, read())


def _checked_ranks(src: str, name: str, ids: dict[int, str], explicit_n_vocab: int | None,
                   allow_empty_token: bool, data: bytes | None) -> dict[bytes, int]:
    """The ranks of the file `src` (or of `data`), checked against the special ids `ids`."""
    vocab = load_tiktoken_ranks(src, reserved_ids=ids, allow_empty_token=allow_empty_token, data=data)
    n_ranks = len(vocab)
    max_rank = max(vocab.values())
    # the ranks are 0..max_rank except at reserved (special) ids, so only a special id <= max_rank can
    # collide, and it does exactly when the file uses it as a rank
    low = [tid for tid in sorted(ids) if tid <= max_rank]
    if low:
        by_rank = {r: t for t, r in vocab.items()}
        for tid in low:
            if tid in by_rank:
                raise TokenizerFileError(
                    f"{src}: special token {ids[tid]!r} of {name!r} has id {tid}, which is already the "
                    f"rank of the ordinary token {by_rank[tid]!r}")
    max_id = max([max_rank, *ids])
    if explicit_n_vocab is not None:
        if max_id + 1 != explicit_n_vocab:
            raise TokenizerFileError(
                f"{src}: explicit_n_vocab={explicit_n_vocab} for {name!r}, but the largest id is {max_id} "
                f"(largest rank {max_rank}, largest special id {max(ids) if ids else None}), "
                f"so n_vocab would be {max_id + 1}")
        if n_ranks + len(ids) != explicit_n_vocab:
            raise TokenizerFileError(
                f"{src}: explicit_n_vocab={explicit_n_vocab} for {name!r}, but the file has {n_ranks} ranks "
                f"and there are {len(ids)} special tokens ({n_ranks + len(ids)} ids in all)")
    return vocab


def description_from_ranks(name: str, *, pat_str: str, mergeable_ranks: dict[bytes, int],
                           special_tokens: dict[str, int], explicit_n_vocab: int | None = None,
                           pattern_kind: str | None = None) -> ModelDescription:
    """What `tiktoken.Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)` is given,
    as a ModelDescription (ranks are ids, as in a rank file). Types are checked here; ids and the
    pattern when the tables are compiled."""
    where = f"Encoding {name!r}"
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not isinstance(pat_str, str):
        raise TypeError(f"{where}: pat_str must be a str, not {type(pat_str).__name__}")
    if not isinstance(mergeable_ranks, dict) or not isinstance(special_tokens, dict):
        bad = "mergeable_ranks" if not isinstance(mergeable_ranks, dict) else "special_tokens"
        raise TypeError(f"{where}: {bad} must be a dict")
    for tok, rank in mergeable_ranks.items():
        if not isinstance(tok, bytes) or isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(f"{where}: mergeable_ranks maps bytes to int ranks; found {tok!r}: {rank!r}")
    for content, tid in special_tokens.items():
        if not isinstance(content, str) or not content or isinstance(tid, bool) or not isinstance(tid, int):
            raise TypeError(f"{where}: special_tokens maps non-empty str to int ids; found {content!r}: {tid!r}")
    if explicit_n_vocab is not None and len(mergeable_ranks) + len(special_tokens) != explicit_n_vocab:
        raise TokenizerFileError(f"{where}: explicit_n_vocab={explicit_n_vocab}, but there are "
                                 f"{len(mergeable_ranks)} ranks and {len(special_tokens)} special tokens")
    added = [AddedToken(content, tid, special=True) for content, tid in special_tokens.items()]
    return ModelDescription(name=name, vocab=mergeable_ranks, merges=None, pattern=pat_str, added_tokens=added,
                            ignore_merges=True, pattern_kind=pattern_kind or kind_of_pattern(pat_str),
                            source=where, explicit_n_vocab=explicit_n_vocab)
