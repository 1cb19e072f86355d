"""`funasr_char`: Paraformer's `tokens.json` (a JSON array of token strings, the index is the id).

`files`: {"tokens": "tokens.json"}; `options`: {"special_ids": [...]} (default: the ids of `<blank>`,
`<s>`, `</s>`, the ids Paraformer's model.py drops before post-processing).

Decode drops `special_ids` and runs FunASR's `sentence_postprocess` on the remaining tokens, which
itself drops `<s>`, `</s>`, `<unk>` and `<OOV>` by name, so their ids are in `special_ids` too.

Encode (FunASR's own inverse needs a seg_dict lexicon; this is the plain rule): the text is split at
whitespace; in each chunk every character in U+4E00..U+9FFF is its own token, and each run of other
characters is cut greedily into the longest vocabulary pieces, every piece but the run's last
spelled with the "@@" continuation mark ("hel@@", "lo"). A character no piece covers is `<unk>`
(one per character); with no `<unk>` in the vocabulary it raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ..tokenizer import TokenIdError, Tokenizer, TokenizerAssetError, TokenizerError, TokenizerSpec
from .funasr_postprocess import (
    PostprocessStream,
    is_all_alpha,
    is_all_chinese,
    mode_stable,
    sentence_postprocess,
    token_class,
)
from .row_columns import RowColumns

__all__ = ["FunASRCharTokenizer", "build", "read_tokens_json"]

_DEFAULT_SPECIAL = ("<blank>", "<s>", "</s>")
_WASHED = ("<s>", "</s>", "<unk>", "<OOV>")


def read_tokens_json(path: str) -> list[str]:
    """The token list of a tokens.json: a non-empty JSON array of distinct strings."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TokenizerAssetError(f"asset 'tokens' ({path}) is not readable JSON: {e}") from None
    if not isinstance(data, list):
        raise TokenizerAssetError(f"asset 'tokens' ({path}): expected a JSON array of strings, got {type(data).__name__}")
    if not data:
        raise TokenizerAssetError(f"asset 'tokens' ({path}) holds no tokens")
    seen: dict[str, int] = {}
    for i, t in enumerate(data):
        if not isinstance(t, str):
            raise TokenizerAssetError(f"asset 'tokens' ({path}): entry {i} is {type(t).__name__}, not a string")
        if t in seen:
            raise TokenizerAssetError(f"asset 'tokens' ({path}): entry {i} duplicates token {t!r} (entry {seen[t]})")
        seen[t] = i
    return data


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff"


class FunASRCharTokenizer(RowColumns, Tokenizer):
    """tokens.json behind the contract; see the module docstring for both directions.

    Streaming runs `sentence_postprocess` one token at a time (`funasr_postprocess.PostprocessStream`):
    held back is only what a later token may still change (a "@@" word in progress, the last entry
    after an English word, which a Chinese token pops, an abbreviation's last letter and space,
    trailing whitespace), at O(1) per id."""

    kind = "funasr_char"

    def __init__(self, tokens: list[str], special_ids: Iterable[int] | None = None, *, source: str = ""):
        self.tokens = list(tokens)
        self.vocab_size = len(self.tokens)
        self._index = {t: i for i, t in enumerate(self.tokens)}
        if special_ids is None:
            chosen = {self._index[t] for t in _DEFAULT_SPECIAL if t in self._index}
        else:
            chosen = set(special_ids)
            bad = sorted(i for i in chosen if type(i) is not int or not 0 <= i < self.vocab_size)
            if bad:
                raise TokenIdError(f"special_ids {bad} are not ids of {source or 'the token list'}")
        self.special_ids = frozenset(chosen | {self._index[t] for t in _WASHED if t in self._index})
        self.unk_id = self._index.get("<unk>")
        self._max_len = max(len(t) for t in self.tokens)
        self._classes = [token_class(t) for t in self.tokens]
        self._modes = [(is_all_chinese([t]), is_all_alpha([t])) for t in self.tokens]
        # sentence_postprocess picks its mode (all Chinese / all alphabetic / mixed) from the whole
        # list; a token that renders differently per mode (a space or a washed name inside it, which
        # the mode test deletes, or a mixed-mode reading unlike its mode's) makes a stream hold
        # everything until the mode is known. Paraformer vocabularies hold no such token.
        self._mode_stable = all(mode_stable(t) for i, t in enumerate(self.tokens) if i not in self.special_ids)

    # ------------------------------------------------------------------ decode
    def _words(self, ids) -> list[str]:
        return [self.tokens[i] for i in self.check_ids(ids) if i not in self.special_ids]

    def decode(self, ids: Sequence[int]) -> str:
        return sentence_postprocess(self._words(ids))

    def decode_incremental(self, new_ids: Sequence[int], state: dict, *, final: bool = False) -> str:
        """O(new ids) at any length (see the class docstring); the state is never changed in place."""
        stream = state.get("_post")
        stream = PostprocessStream(self._mode_stable) if stream is None else stream.copy()
        tokens, classes, modes, special = self.tokens, self._classes, self._modes, self.special_ids
        for i in self.check_ids(new_ids):
            if i not in special:
                stream.feed(tokens[i], classes[i], *modes[i])
        delta = stream.take(final)
        state["_post"] = stream
        text = state.pop("text", "")  # the emitted text: with no other reference left, `+=` extends it in place
        text += delta
        state["text"] = text
        return delta

    # ------------------------------------------------------------------ encode
    def _unk(self, text: str) -> int:
        if self.unk_id is None:
            raise TokenizerError(f"funasr_char: no token covers {text!r} and the vocabulary has no <unk>")
        return self.unk_id

    def _encode_run(self, run: str, out: list[int]) -> None:
        pos = 0
        while pos < len(run):
            for end in range(min(len(run), pos + self._max_len), pos, -1):
                piece = run[pos:end] if end == len(run) else run[pos:end] + "@@"
                i = self._index.get(piece)
                if i is not None and i not in self.special_ids:
                    out.append(i)
                    pos = end
                    break
            else:
                out.append(self._unk(run[pos]))
                pos += 1

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for chunk in text.split():
            run_start = 0
            for k, ch in enumerate(chunk):
                if _is_cjk(ch):
                    self._encode_run(chunk[run_start:k], out)
                    i = self._index.get(ch)
                    out.append(i if i is not None and i not in self.special_ids else self._unk(ch))
                    run_start = k + 1
            self._encode_run(chunk[run_start:], out)
        return out


def build(spec: TokenizerSpec) -> FunASRCharTokenizer:
    unknown = set(spec.options) - {"special_ids"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'funasr_char': unknown options {sorted(unknown)}")
    path = spec.asset("tokens")
    return FunASRCharTokenizer(read_tokens_json(path), spec.options.get("special_ids"), source=path)
