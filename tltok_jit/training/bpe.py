"""`train_bpe`: a byte-level BPE vocabulary whose merges and ids equal Hugging Face `tokenizers`'
`BpeTrainer` trained with the same split pattern (kernels.train_bpe says how)."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..encoding import Encoding
from ..kernels import train_bpe as K
from ..loaders.known_encodings import list_encoding_names, registry_defaults
from ..model.byte_alphabet import BYTE_TO_CHAR, beta_decode
from ..model.description import AddedToken, ModelDescription
from ..model.patterns import kind_of_pattern
from .counts import PieceCounts, count_pieces
from .source import iter_batches

# progress(stage, done, total): stage "count" (bytes read; total 0 = unknown) or "merge" (merges done)
Progress = Callable[[str, int, int], None]

_NAME = re.compile(r"[A-Za-z0-9_]+")


class TrainedEncoding(Encoding):
    """The `Encoding` `train_bpe` returns, with what it was trained to and the two writers.

    merges:  the merges as Hugging Face lists them (left bytes, right bytes), rank = index.
    ranks:   token bytes -> id of every ordinary token (what `save_tiktoken` writes).
    specials: special token -> id.
    merge_ids: every merge in order as ((left id, right id), new id), a pair repeated where Hugging
              Face's trainer merged it again (its tokenizer.json keeps the last).
    """

    merges: list[tuple[bytes, bytes]]
    ranks: dict[bytes, int]
    specials: dict[str, int]
    pattern: str
    merge_ids: list[tuple[tuple[int, int], int]]

    def save_tokenizer_json(self, path: str | os.PathLike) -> None:
        """Write a Hugging Face tokenizer.json (`tokenizers` and `tltok_jit.from_file` load it)."""
        from .save import save_tokenizer_json

        save_tokenizer_json(self, path)

    def save_tiktoken(self, path: str | os.PathLike) -> None:
        """Write a `.tiktoken` rank file (ordinary tokens; special tokens are not part of the format)."""
        from .save import save_tiktoken

        save_tiktoken(self, path)


@dataclass
class TrainedVocab:
    """What training learned, before it becomes an Encoding (the writers read these attributes)."""

    merges: list[tuple[bytes, bytes]]
    ranks: dict[bytes, int]
    specials: dict[str, int]
    pattern: str
    merge_ids: list[tuple[tuple[int, int], int]]


def resolve_pattern(pattern: str) -> str:
    """The split regex of `pattern`: a known encoding's name ("o200k_base", "cl100k_base", "gpt2", ...)
    or a regex. A bare word that names no encoding is refused (as a regex it would be a literal)."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"pattern: expected an encoding name or a regex, got {pattern!r}")
    if pattern in list_encoding_names():
        return registry_defaults(pattern)[0]
    if _NAME.fullmatch(pattern):
        raise ValueError(f"pattern: unknown pattern name {pattern!r}; known: {', '.join(list_encoding_names())}, "
                         f"or pass a regex")
    return pattern


def train_bpe(source, vocab_size: int, *, pattern: str = "o200k_base", special_tokens: Sequence[str] = (),
              min_frequency: int = 0, max_token_length: int | None = None, num_threads: int | None = None,
              progress: Progress | None = None) -> TrainedEncoding:
    """Train a byte-level BPE vocabulary on `source`: the same merges, vocabulary and ids as Hugging
    Face `tokenizers`' `BpeTrainer(vocab_size, min_frequency, special_tokens, max_token_length,
    initial_alphabet=ByteLevel.alphabet())` trained after `Split(pattern, "isolated")` and
    `ByteLevel(add_prefix_space=False, use_regex=False)`. Ids: the special tokens, the 256 bytes (in
    the order of their byte-level characters), then one per new merged string.

    `source`: an iterable of str, a pyarrow string array / chunked array / table (column `text`), or
    a path, folder, glob or list of paths (Parquet column `text`; other files: UTF-8 lines). It is
    read in batches; memory grows with the distinct pieces, not the text. Counts are 64-bit (HF sums
    pair counts in 32 bits: a pair seen over 2**31 times can order differently there). `num_threads`
    splits the counting (never changes the result). `progress(stage, done, total)` is called from
    the calling thread.

    >>> enc = train_bpe(["low lower lowest"] * 50, 260, pattern="gpt2")
    >>> enc.merges
    [(b'l', b'o'), (b'lo', b'w'), (b' ', b'low'), (b' low', b'e')]
    >>> enc.encode(" lower"), enc.decode([259, 81])
    ([259, 81], ' lower')
    """
    specials = _check_args(vocab_size, special_tokens, min_frequency, max_token_length)
    regex = resolve_pattern(pattern)
    read = [0]

    def on_batch(n: int) -> None:
        read[0] += n
        if progress is not None:
            progress("count", read[0], 0)

    pieces = count_pieces(iter_batches(source), regex, num_threads=num_threads, on_batch=on_batch)
    if len(pieces) == 0:
        raise ValueError("source: the corpus is empty (no text to train on)")
    return train_from_counts(pieces, vocab_size, pattern=regex, special_tokens=specials,
                             min_frequency=min_frequency, max_token_length=max_token_length, progress=progress)


def _check_args(vocab_size, special_tokens, min_frequency, max_token_length) -> list[str]:
    if isinstance(special_tokens, str):
        raise ValueError("special_tokens: expected a sequence of str, got a single str")
    specials = list(special_tokens)
    for t in specials:
        if not isinstance(t, str) or not t:
            raise ValueError(f"special_tokens: expected non-empty str, got {t!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)):
        raise ValueError(f"vocab_size: expected an int, got {vocab_size!r}")
    n_initial = 256 + len(dict.fromkeys(specials))
    if vocab_size < n_initial:
        raise ValueError(f"vocab_size: {vocab_size} is below 256 + {n_initial - 256} special tokens = {n_initial}")
    if isinstance(min_frequency, bool) or not isinstance(min_frequency, (int, np.integer)) or min_frequency < 0:
        raise ValueError(f"min_frequency: expected an int >= 0, got {min_frequency!r}")
    if max_token_length is not None and (isinstance(max_token_length, bool)
                                         or not isinstance(max_token_length, (int, np.integer))
                                         or max_token_length < 1):
        raise ValueError(f"max_token_length: expected None or an int >= 1, got {max_token_length!r}")
    return specials


def initial_vocabulary(special_tokens: Sequence[str]) -> dict[str, int]:
    """Hugging Face's ids before merging: the special tokens (first of repeats), then the byte-level
    alphabet sorted by code point (a character already there, as a special token, keeps that id)."""
    w2id: dict[str, int] = {}
    for t in special_tokens:
        w2id.setdefault(t, len(w2id))
    for c in sorted(BYTE_TO_CHAR.values()):
        w2id.setdefault(c, len(w2id))
    return w2id


def train_from_counts(pieces: PieceCounts, vocab_size: int, *, pattern: str, special_tokens: Sequence[str] = (),
                      min_frequency: int = 0, max_token_length: int | None = None,
                      progress: Progress | None = None) -> TrainedEncoding:
    """The merge step of `train_bpe` on counted pieces."""
    return encoding_of(learn(pieces, vocab_size, pattern=pattern, special_tokens=special_tokens,
                             min_frequency=min_frequency, max_token_length=max_token_length, progress=progress))


def learn(pieces: PieceCounts, vocab_size: int, *, pattern: str, special_tokens: Sequence[str] = (),
          min_frequency: int = 0, max_token_length: int | None = None,
          progress: Progress | None = None) -> TrainedVocab:
    """The merges and ids of counted pieces (no Encoding built)."""
    specials = list(dict.fromkeys(special_tokens))
    w2id = initial_vocabulary(specials)
    n_ids = len(w2id)
    byte_ids = np.array([w2id[BYTE_TO_CHAR[b]] for b in range(256)], np.int32)
    tok_bytes: list[bytes] = [b""] * n_ids
    known = np.zeros(n_ids, np.bool_)
    for s, i in w2id.items():
        b = beta_decode(s)
        if b is not None and not tok_bytes[i]:
            tok_bytes[i] = b
            known[i] = True
    tok_len = np.fromiter(map(len, tok_bytes), np.int64, n_ids)
    tok_start = np.zeros(n_ids, np.int64)
    np.cumsum(tok_len[:-1], out=tok_start[1:])
    tok_pool = np.frombuffer(b"".join(tok_bytes), np.uint8).copy()

    sym = byte_ids[pieces.data] if len(pieces.data) else np.zeros(0, np.int32)
    w_start = pieces.offsets[:-1].astype(np.int64)
    w_len = np.diff(pieces.offsets).astype(np.int64)
    w_count = pieces.counts.astype(np.int64)
    done = np.zeros(4, np.int64)
    args = (sym, w_start, w_len, w_count, tok_pool, tok_start, tok_len, known, n_ids, len(w2id), int(vocab_size),
            int(min_frequency), int(max_token_length or 0), done)
    if progress is None:
        out = K.train(*args)
    else:
        out = _run_with_progress(args, done, vocab_size - len(w2id), progress)
    m_left, m_right, m_new, pool, starts, lens = out
    return _vocab(pattern, specials, w2id, m_left, m_right, m_new, pool, starts, lens)


def _run_with_progress(args, done, total, progress):
    result: list = []
    error: list = []

    def run():
        try:
            result.append(K.train(*args))
        except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
            error.append(e)

    t = threading.Thread(target=run)
    t.start()
    while t.is_alive():
        t.join(0.1)
        progress("merge", int(done[0]), total)
    if error:
        raise error[0]
    progress("merge", int(done[0]), total)
    return result[0]


def _vocab(pattern, specials, w2id, m_left, m_right, m_new, pool, starts, lens) -> TrainedVocab:
    n_tok = len(starts)
    raw = pool.tobytes()
    tok = [raw[starts[i]:starts[i] + lens[i]] for i in range(n_tok)]
    special_ids = {t: w2id[t] for t in specials}
    is_special = set(special_ids.values())
    ranks: dict[bytes, int] = {}
    merged = set(m_new.tolist())
    for i in range(n_tok):
        # a special token whose string is also a byte's character, or a merge's result, is that
        # ordinary token too (HF's vocabulary has one entry for both)
        if i not in is_special or (tok[i] and (len(tok[i]) == 1 or i in merged)):
            ranks.setdefault(tok[i], i)
    # HF keeps merges in a map: a repeated pair keeps its last place
    last: dict[tuple[int, int], int] = {}
    for r, (a, b) in enumerate(zip(m_left.tolist(), m_right.tolist())):
        last[(a, b)] = r
    merges = [(tok[a], tok[b]) for (a, b), _ in sorted(last.items(), key=lambda kv: kv[1])]
    merge_ids = [((a, b), n) for a, b, n in zip(m_left.tolist(), m_right.tolist(), m_new.tolist())]
    return TrainedVocab(merges, ranks, special_ids, pattern, merge_ids)


def encoding_of(v: TrainedVocab) -> TrainedEncoding:
    """The Encoding of a trained vocabulary: HF's merge list, `ignore_merges=False`, the pattern's
    scanner (or, for a regex without one, the tokenizer.json loader's regex pre-tokenizer)."""
    name = "trained_bpe"
    kind = kind_of_pattern(v.pattern)
    if kind is not None:
        desc = ModelDescription(name=name, vocab=v.ranks, merges=v.merges, pattern=v.pattern,
                                added_tokens=[AddedToken(t, i) for t, i in v.specials.items()], ignore_merges=False,
                                pattern_kind=kind, source="train_bpe")
    else:
        import tempfile

        from ..loaders.hf_json import read_hf_json
        from .save import save_tokenizer_json

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tokenizer.json")
            save_tokenizer_json(v, path)
            desc = read_hf_json(path, name=name)
    enc = TrainedEncoding(desc)
    enc.merges = v.merges
    enc.ranks = v.ranks
    enc.specials = v.specials
    enc.pattern = v.pattern
    enc.merge_ids = v.merge_ids
    return enc
