"""A tokenizer.json decoder chain run over token ids: whole (`DecoderChain.decode`) or one id at a time (`ChainStream`).

The chain is the `pipeline.decoders` stages `loaders.hf_json` reads from the file's `decoder` (Mistral-7B:
Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)), applied to the token strings as
`tokenizers` applies them. Every decoder path of such a model goes through this module:
`Encoding.decode`, and `stream.StreamDecoder` / `MultiStreamDecoder` / `decode_incremental` /
`token_pieces`, so their text is `decode`'s by construction.

`ChainStream` re-renders a bounded window: a primer of the last `PRIMER_LEN` ids, whose text is
subtracted, plus the ids that came after it (up to `WINDOW_LEN` in all while everything is settled). What the next ids can still change is held back:

* a trailing run of byte-fallback ids (`<0xNN>`): ByteFallback renders a whole run as one U+FFFD
  per byte as soon as any byte of it is ill-formed, so a later byte can revise the run's text;
* a trailing U+FFFD (a ByteLevel step's incomplete character, or a run in progress);
* trailing strip characters when a whole-text Strip removes some from the end (`stop > 0`).

The window restarts (shrinks to the primer) once all of it is settled and the primer carries what
the rules after it depend on: it does not end inside a byte run, and, under a whole-text Strip
from the start, its own text is not empty (so the strip stopped inside it). A chain whose text
after a join can be rewritten across token boundaries (a Replace of several characters, or of
"", after Fuse / ByteFallback / ByteLevel / the null decoder's join) never restarts: exact, but
each step re-renders everything (no supported file has one).
"""

from __future__ import annotations

from collections.abc import Sequence

from .pipeline.decoders import BYTE_TOKEN_RE, Decoder
from .text import common_prefix_len

__all__ = ["ChainStream", "DecoderChain", "PRIMER_LEN", "WINDOW_LEN"]

FFFD = "\ufffd"
PRIMER_LEN = 4
WINDOW_LEN = 12  # a settled window restarts once it holds this many ids (not at every id: decode(primer) costs a render)


class DecoderChain:
    """The decoder steps of one tokenizer.json and its token strings (id -> str, None where unassigned)."""

    __slots__ = ("steps", "token_strings", "byte_ids", "windowed", "strip_needs_primer_text", "end_strip",
                 "_byte_of")

    def __init__(self, steps: Sequence[Decoder], token_strings: Sequence[str | None]):
        self.steps = tuple(steps)
        self.token_strings = list(token_strings)
        joined = False
        windowed = True
        needs_text = False
        end_strip: str | None = None
        byte_step = False
        for step in self.steps:
            if not joined:
                byte_step = byte_step or step.is_byte_fallback
            else:
                windowed = windowed and step.windowed_after_join
                needs_text = needs_text or step.needs_primer_text
                if step.end_strip is not None:
                    end_strip = step.end_strip
            if step.joins:
                joined = True
        self.windowed = windowed
        self.strip_needs_primer_text = needs_text
        self.end_strip = end_strip
        # ids whose string the ByteFallback step sees as a byte token, as written or after the per-token
        # steps before it (over-inclusive is safe: it only holds more back)
        byte_of: dict[int, int] = {}
        if byte_step:
            pre = []
            for step in self.steps:
                if step.is_byte_fallback:
                    break
                pre.append(step)
            for i, s in enumerate(self.token_strings):
                if s is None:
                    continue
                for form in {s, self._per_token(pre, s, first=False), self._per_token(pre, s, first=True)}:
                    if len(form) == 6 and BYTE_TOKEN_RE.fullmatch(form) is not None:
                        byte_of[i] = int(form[3:5], 16)
                        break
        self._byte_of = byte_of
        self.byte_ids = frozenset(byte_of)

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

    def trailing_bytes(self, ids: Sequence[int]) -> bytes:
        """The bytes of the byte-fallback run `ids` ends with (b"" if it ends with another id)."""
        byte_of = self._byte_of
        n = len(ids)
        k = n
        while k > 0 and ids[k - 1] in byte_of:
            k -= 1
        return bytes(byte_of[i] for i in ids[k:])


class ChainStream:
    """One stream of ids through a DecoderChain: `push(ids)` returns (settled delta, unsettled rest).

    The deltas concatenate to a prefix of `decode(all ids)` that later ids never change; delta +
    rest of the last call is what the window adds, so emitted + rest == decode(all ids so far).
    `push([], final=True)` settles everything."""

    __slots__ = ("chain", "_win", "_read", "_primer_text", "_shown")

    def __init__(self, chain: DecoderChain):
        self.chain = chain
        self.reset()

    def reset(self) -> None:
        self._win: list[int] = []
        self._read = 0           # the first _read ids of the window are the primer
        self._primer_text = ""   # decode(primer)
        self._shown = 0          # how much of the window's text after the primer was emitted

    @property
    def pending(self) -> bytes:
        """The bytes of the byte-fallback run still open at the end (held back with its text)."""
        return self.chain.trailing_bytes(self._win[self._read:])

    def push(self, ids: Sequence[int], final: bool = False) -> tuple[str, str]:
        chain = self.chain
        win = self._win
        win += ids
        read = self._read
        skip = len(self._primer_text)
        text = chain.decode(win)[skip:]
        if final:
            settled = len(text)
        else:
            k = 0
            byte_ids = chain.byte_ids
            if byte_ids:
                n = len(win)
                while n - k > read and win[n - k - 1] in byte_ids:
                    k += 1
            if k:
                settled = common_prefix_len(chain.decode(win[:len(win) - k])[skip:], text)
            else:
                settled = len(text)
            while settled and text[settled - 1] == FFFD:
                settled -= 1
            if chain.end_strip is not None:
                while settled and text[settled - 1] == chain.end_strip:
                    settled -= 1
            if settled < self._shown:  # only the strip rules above can get here, and they never hold less
                raise AssertionError(f"decoder chain: settled text {text[:settled]!r} revises emitted text")
        delta = text[self._shown:settled]
        rest = text[settled:]
        self._shown = settled
        if settled == len(text) and chain.windowed and len(win) >= WINDOW_LEN:
            primer = win[-PRIMER_LEN:]
            if not chain.trailing_bytes(primer):
                primer_text = chain.decode(primer)
                if primer_text or not chain.strip_needs_primer_text:
                    self._win = primer
                    self._read = PRIMER_LEN
                    self._primer_text = primer_text
                    self._shown = 0
        return delta, rest
