"""A tokenizer.json decoder chain run over token ids: whole (`DecoderChain.decode`) or one id at a time (`ChainStream`).

The chain is the `pipeline.decoders` stages `loaders.hf_json` reads from the file's `decoder` (Mistral-7B:
Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)), applied to the token strings as
`tokenizers` applies them. Every decoder path of such a model goes through this module:
`Encoding.decode`, and `stream.StreamDecoder` / `MultiStreamDecoder` / `decode_incremental` /
`token_pieces`, so their text is `decode`'s by construction.

`ChainStream` re-renders a bounded window: a primer of the last `PRIMER_LEN` ids, whose text is
subtracted, plus the ids that came after it (up to `WINDOW_LEN` in all while everything is settled).
What the next ids can still change is held back, and only that:

* a trailing run of byte-fallback ids (`<0xNN>`) while its bytes are well-formed UTF-8 so far (an
  unfinished last character included): ByteFallback renders a whole run as one U+FFFD per byte as
  soon as any byte of it is ill-formed, so a later byte can still turn all of it into U+FFFD. Once
  one is ill-formed, nothing of the run can change: its text is emitted, and every later byte of it
  adds the text of one more U+FFFD (checked on the chain when the run turns ill-formed; a chain
  that renders those U+FFFD otherwise holds the run until it ends);
* the U+FFFD a ByteLevel step ends with while its last bytes are an unfinished character (a
  ByteLevel step after another joining step: every trailing U+FFFD).

Each id costs O(1) amortized at any run length: a byte id that extends the open run is recorded and
its run's state kept from the at most 3 bytes of its unfinished character; the window is rendered
once when the run turns ill-formed and once when a non-byte id ends it.

The window restarts (shrinks to the primer) once all of it is settled and the primer carries what
the rules after it depend on: it does not end inside a byte run, and, under a whole-text Strip, its
own text is not empty (so both strips act inside it as on the whole text; a primer of `PRIMER_LEN`
ids with no text is lengthened once). A chain whose text after a join can be rewritten across
token boundaries (a Replace of several characters, or of "", after Fuse / ByteFallback / ByteLevel /
the null decoder's join) never restarts: exact, but each step re-renders everything (no supported
file has one).
"""

from __future__ import annotations

from codecs import utf_8_decode as _utf8_decode
from collections.abc import Sequence

from ..model.pipeline.decoders import BYTE_TOKEN_RE, Decoder
from ..engine.text import common_prefix_len

__all__ = ["ChainStream", "DecoderChain", "PRIMER_LEN", "WINDOW_LEN"]

FFFD = "\ufffd"
PRIMER_LEN = 4
WINDOW_LEN = 12  # a settled window restarts once it holds this many ids (not at every id: decode(primer) costs a render)

# what a trailing U+FFFD of the text may be (DecoderChain.fffd_rule)
FFFD_FINAL = 0       # never anything but itself (no ByteLevel step: an open byte run is held on its own)
FFFD_UNFINISHED = 1  # a ByteLevel step's unfinished character when its bytes end in one
FFFD_ANY = 2         # any of them: a ByteLevel step after another joining step


def _unfinished(data: bytes) -> bytes | None:
    """The unfinished last character of `data` when `data` is well-formed UTF-8 so far, else None."""
    try:
        used = _utf8_decode(data, "strict", False)[1]
    except UnicodeDecodeError:
        return None
    return data[used:]


class DecoderChain:
    """The decoder steps of one tokenizer.json and its token strings (id -> str, None where unassigned)."""

    __slots__ = ("steps", "token_strings", "byte_ids", "windowed", "strip_needs_primer_text", "fffd_rule",
                 "_byte_of", "_first_byte_of", "_byte_level", "_pre_byte_level")

    def __init__(self, steps: Sequence[Decoder], token_strings: Sequence[str | None]):
        self.steps = tuple(steps)
        self.token_strings = list(token_strings)
        joined = False
        windowed = True
        needs_text = False
        byte_step = False
        self._byte_level = None
        self._pre_byte_level: tuple = ()
        self.fffd_rule = FFFD_FINAL
        for k, step in enumerate(self.steps):
            if step.is_byte_level and self._byte_level is None:
                self._byte_level = step
                self._pre_byte_level = self.steps[:k]
                self.fffd_rule = FFFD_ANY if joined else FFFD_UNFINISHED
            if not joined:
                byte_step = byte_step or step.is_byte_fallback
            else:
                windowed = windowed and step.windowed_after_join
                needs_text = needs_text or step.needs_primer_text
            if step.joins:
                joined = True
        self.windowed = windowed
        self.strip_needs_primer_text = needs_text
        # ids whose string the ByteFallback step sees as a byte token after the per-token steps before
        # it: anywhere but first in the text (_byte_of), and first (_first_byte_of)
        byte_of: dict[int, int] = {}
        first_byte_of: dict[int, int] = {}
        if byte_step:
            pre = []
            for step in self.steps:
                if step.is_byte_fallback:
                    break
                pre.append(step)
            for i, s in enumerate(self.token_strings):
                if s is None:
                    continue
                for first, into in ((False, byte_of), (True, first_byte_of)):
                    form = self._per_token(pre, s, first)
                    if len(form) == 6 and BYTE_TOKEN_RE.fullmatch(form) is not None:
                        into[i] = int(form[3:5], 16)
        self._byte_of = byte_of
        self._first_byte_of = first_byte_of
        self.byte_ids = frozenset(byte_of) | frozenset(first_byte_of)

    @staticmethod
    def _per_token(steps, s: str, first: bool) -> str:
        for step in steps:
            s = step.per_token(s, first)
        return s

    def decode(self, ids: Sequence[int]) -> str:
        """The chain over the ids' token strings, as `tokenizers` runs it (ids already validated)."""
        strings = self.token_strings
        tokens = [strings[i] for i in ids]
        for step in self.steps:
            tokens = step.decode_chain(tokens)
        return "".join(tokens)

    def run_bytes(self, ids: Sequence[int]) -> bytes | None:
        """The bytes of `ids` when every one is a byte token after the text's first token, else None."""
        byte_of = self._byte_of
        try:
            return bytes([byte_of[i] for i in ids])
        except KeyError:
            return None

    def trailing_bytes(self, ids: Sequence[int], start: int = 0) -> bytes:
        """The bytes of the byte-fallback run `ids` ends with, one per id, taking no id before
        `start` (b"" if it ends with another id)."""
        byte_of = self._byte_of
        j = len(ids)
        run = []
        while j > start:
            b = (byte_of if j > 1 else self._first_byte_of).get(ids[j - 1])
            if b is None:
                break
            run.append(b)
            j -= 1
        run.reverse()
        return bytes(run)

    def ends_unfinished(self, ids: Sequence[int]) -> bool:
        """Whether the bytes the ByteLevel step gets from `ids` end inside a character more bytes may finish."""
        step = self._byte_level
        strings = self.token_strings
        tail = b""
        j = len(ids)
        while j and len(tail) < 3:
            j -= 1
            tail = step.token_bytes(self._per_token(self._pre_byte_level, strings[ids[j]], j == 0)) + tail
        return _utf8_decode(tail[-3:], "replace", False)[1] < len(tail[-3:])


class ChainStream:
    """One stream of ids through a DecoderChain: `push(ids)` returns the text that is now settled.

    The deltas concatenate to a prefix of `decode(all ids)` that later ids never change, and
    emitted + `held` == decode(all ids so far). `push([], final=True)` settles everything."""

    __slots__ = ("chain", "_win", "_read", "_primer_text", "_shown", "_run", "_run_tail", "_run_unit")

    def __init__(self, chain: DecoderChain):
        self.chain = chain
        self.reset()

    def reset(self) -> None:
        self._win: list[int] = []
        self._read = 0           # the first _read ids of the window are the primer
        self._primer_text = ""   # decode(primer)
        self._shown = 0          # how much of the window's text after the primer was emitted
        self._run = bytearray()  # the bytes of the byte-fallback run the window ends with
        self._run_tail: bytes | None = b""  # its unfinished last character; None once it is ill-formed
        self._run_unit: str | None = None   # then, when the chain's text of it is checked: what a byte adds

    @property
    def pending(self) -> bytes:
        """The bytes of the byte-fallback run still open at the end (any length)."""
        return bytes(self._run)

    @property
    def held(self) -> str:
        """The text of the ids so far that is not emitted yet (rendered on demand)."""
        return self.chain.decode(self._win)[len(self._primer_text) + self._shown:]

    def push(self, ids: Sequence[int], final: bool = False) -> str:
        """Feed ids; returns the text they settle (with `final`, all that is held)."""
        new = self.chain.run_bytes(ids) if self._run and not final else None
        self._win += ids
        if new is not None:  # the open run goes on
            self._run += new
            unit = self._run_unit
            if unit is not None:
                delta = unit * len(new)
                self._shown += len(delta)
                return delta
            if self._run_tail is None:
                return ""
            tail = _unfinished(self._run_tail + new)
            if tail is not None:
                self._run_tail = tail
                return ""
        return self._render(final)

    def _render(self, final: bool) -> str:
        chain = self.chain
        win = self._win
        skip = len(self._primer_text)
        text = chain.decode(win)[skip:]
        n = len(win)
        run = chain.trailing_bytes(win, self._read)
        k = len(run)
        self._run = bytearray(run)
        self._run_tail = b""
        self._run_unit = None
        settled = len(text)
        if final:
            self._run_tail = None  # an ended stream: a later byte of its run is not rendered with it
        else:
            if k:
                tail = _unfinished(run)
                unit = None if tail is not None else self._ill_formed_unit(text, skip)
                self._run_tail, self._run_unit = tail, unit
                if unit is None:
                    settled = common_prefix_len(chain.decode(win[:n - k])[skip:], text)
            if chain.fffd_rule == FFFD_UNFINISHED:
                if settled == len(text) and text.endswith(FFFD) and chain.ends_unfinished(win):
                    settled -= 1
            elif chain.fffd_rule == FFFD_ANY:
                while settled and text[settled - 1] == FFFD:
                    settled -= 1
            if settled < self._shown:  # the holds above never hold less than what was emitted
                raise AssertionError(f"decoder chain: settled text {text[:settled]!r} revises emitted text")
        delta = text[self._shown:settled]
        self._shown = settled
        if settled == len(text) and chain.windowed and n >= WINDOW_LEN:
            self._restart()
        return delta

    def _ill_formed_unit(self, text: str, skip: int) -> str | None:
        """What one more byte adds to the window's text, its run being ill-formed: the same for two
        bytes in a row, else None (the run is then held until it ends)."""
        chain = self.chain
        if chain.fffd_rule != FFFD_FINAL or not chain._byte_of:
            return None
        b = next(iter(chain._byte_of))
        win = self._win
        one = chain.decode(win + [b])[skip:]
        unit = one[len(text):]
        if one.startswith(text) and chain.decode(win + [b, b])[skip:] == one + unit:
            return unit
        return None

    def _restart(self) -> None:
        chain = self.chain
        win = self._win
        for p in (PRIMER_LEN, 2 * PRIMER_LEN):
            primer = win[-p:]
            if chain.trailing_bytes(primer):
                return
            primer_text = chain.decode(primer)
            if primer_text or not chain.strip_needs_primer_text:
                self._win = primer
                self._read = p
                self._primer_text = primer_text
                self._shown = 0
                return
