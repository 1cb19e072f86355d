"""tiktoken's `encode_with_unstable`, step for step (its Rust `_encode_unstable_native`), on top of the
Encoding's exact encode: the stable prefix of the ids, and every id sequence a continuation of the
text could start with in place of the unstable tail."""

from __future__ import annotations

import bisect

from collections.abc import Callable

import numpy as np

# Rust's char::is_whitespace (the Unicode White_Space property), which tiktoken uses; str.isspace differs.
_WHITE_SPACE = frozenset(map(chr, [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                   0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))


def byte_pair_encode(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """tiktoken's byte_pair_encode: merge the lowest-ranked pair (leftmost on ties) until none is a
    token; no whole-piece lookup first, unlike encoding a piece of text."""
    if len(piece) == 1:
        return [ranks[piece]]
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best):
                best, at = r, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return [ranks[p] for p in parts]


def _last_char(data: bytes) -> tuple[str | None, int]:
    """(last character, its UTF-8 length), or (None, 1) when `data` does not end in a whole one."""
    for k in range(1, min(4, len(data)) + 1):
        try:
            s = data[-k:].decode("utf-8")
        except UnicodeDecodeError:
            continue
        if len(s) == 1:
            return s, k
        break
    return None, 1


def _with_prefix(sorted_tokens: list[bytes], prefix: bytes) -> list[bytes]:
    lo = bisect.bisect_left(sorted_tokens, prefix)
    hi = lo
    while hi < len(sorted_tokens) and sorted_tokens[hi].startswith(prefix):
        hi += 1
    return sorted_tokens[lo:hi]


def encode_with_unstable(enc, text: str, allowed: set[str], piece_ends: Callable[[np.ndarray], np.ndarray],
                         sorted_tokens: list[bytes]) -> tuple[list[int], list[list[int]]]:
    """(stable ids, completions) as tiktoken computes them. `allowed` is the resolved allowed set (the
    caller has done the disallowed check), `piece_ends(utf8)` the end of each regex piece of a text,
    `sorted_tokens` the ordinary tokens' bytes, sorted."""
    tokens = enc.encode(text, allowed_special=allowed, disallowed_special=())
    special_ids = {enc._special_tokens[s] for s in enc.special_tokens_set}
    ranks = enc._mergeable_ranks
    # the ids of the text after the last special token; its last regex piece gives the unstable tail
    tail = len(tokens)
    while tail and tokens[tail - 1] not in special_ids:
        tail -= 1
    if tail == len(tokens):
        return tokens, []  # ends with a special token (or is empty): nothing unstable
    seg = np.frombuffer(enc.decode_bytes(tokens[tail:]), dtype=np.uint8)
    ends = piece_ends(seg)
    last_len = len(seg) - (int(ends[-2]) if len(ends) > 1 else 0)
    token_bytes = enc.decode_tokens_bytes(tokens)
    n_last, acc = 0, 0
    while acc < last_len:
        n_last += 1
        acc += len(token_bytes[-n_last])

    # tiktoken's fix for unstable splits of whitespace runs (cl100k's \s*[\r\n]+)
    def all_space(i: int) -> bool:
        return tokens[i] not in special_ids and all(b in b" \n\t" for b in token_bytes[i])

    if all_space(len(tokens) - n_last):
        while n_last < len(tokens) and all_space(len(tokens) - n_last - 1):
            n_last += 1
    unstable = b"".join(token_bytes[len(tokens) - n_last:])
    stable = tokens[:len(tokens) - n_last]

    completions: set[tuple[int, ...]] = {(ranks[t],) for t in _with_prefix(sorted_tokens, unstable)}
    offsets = enc.token_byte_table()[1]
    texts = []
    for i in range(1, len(unstable)):
        prefix, suffix = unstable[:i], unstable[i:]
        for t in _with_prefix(sorted_tokens, suffix):
            possibility = prefix + t
            try:
                texts.append(possibility.decode("utf-8"))
            except UnicodeDecodeError:
                completions.add(_cut(byte_pair_encode(possibility, ranks), offsets, len(unstable)))
    if texts:
        for ids in enc.encode_ordinary_batch(texts, num_threads=1):
            completions.add(_cut(ids, offsets, len(unstable)))
    if len(unstable) > 1:
        ch, k = _last_char(unstable)
        if len(unstable) - k > 0 and ch is not None and ch in _WHITE_SPACE:
            completions.add(tuple(byte_pair_encode(unstable[:-k], ranks) + byte_pair_encode(unstable[-k:], ranks)))
    return stable, [list(c) for c in completions]


def _cut(ids: list[int], offsets: np.ndarray, need: int) -> tuple[int, ...]:
    """The shortest prefix of `ids` covering at least `need` bytes (all of them if they cover fewer)."""
    out, n = [], 0
    for t in ids:
        out.append(t)
        n += int(offsets[t + 1] - offsets[t])
        if n >= need:
            break
    return tuple(out)
