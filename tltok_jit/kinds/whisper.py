"""`whisper`: OpenAI Whisper's tokenizer, built from its `.tiktoken` ranks as `whisper/tokenizer.py` does.

`files`: {"ranks": "multilingual.tiktoken"} (or GPT-2's ranks, `r50k_base.tiktoken`, for the English-only
models); `options`: {"num_languages": 99} (100 for large-v3).

The special tokens follow the ranks in Whisper's order: <|endoftext|>, <|startoftranscript|>, one
<|lang|> per language of `LANGUAGES[:num_languages]`, <|translate|>, <|transcribe|>, <|startoflm|>,
<|startofprev|>, <|nospeech|>, <|notimestamps|>, then the 1501 timestamps <|0.00|> .. <|30.00|>.
`special_ids` is that whole control block, end-of-text to the vocabulary's end: `decode` drops it
(what Whisper's transcribe and HF's `skip_special_tokens=True` show), whereas openai's own
`Tokenizer.decode` drops only the timestamps. `decode_with_timestamps` renders every id, as openai's.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..encoding import Encoding
from ..loaders.tiktoken_file import load_tiktoken_ranks, read_tiktoken_model
from ..model.description import TokenizerFileError
from ..model.patterns import GPT2_ORIGINAL_PATTERN, kind_of_pattern
from ..tokenizer import TokenizerAssetError, TokenizerSpec
from .encoding_backed import EncodingTokenizer

__all__ = ["LANGUAGES", "WhisperTokenizer", "build", "whisper_special_tokens"]

# whisper/tokenizer.py LANGUAGES, in its dict order (the order gives the language token ids).
LANGUAGES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt "
    "la mi ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc "
    "ka be tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()

_CONTROL = ("<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
            "<|notimestamps|>")
N_TIMESTAMPS = 1501


def whisper_special_tokens(n_ranks: int, num_languages: int) -> dict[str, int]:
    """Whisper's special tokens and their ids, consecutive from `n_ranks`."""
    names = ["<|endoftext|>", "<|startoftranscript|>", *(f"<|{lang}|>" for lang in LANGUAGES[:num_languages]),
             *_CONTROL, *(f"<|{i * 0.02:.2f}|>" for i in range(N_TIMESTAMPS))]
    return {name: n_ranks + k for k, name in enumerate(names)}


class WhisperTokenizer(EncodingTokenizer):
    """Whisper's byte-level BPE plus its control block; see the module docstring."""

    def __init__(self, enc: Encoding, specials: dict[str, int], num_languages: int, empty_ids: frozenset[int]):
        self.eot = specials["<|endoftext|>"]
        super().__init__(enc, range(self.eot, enc.n_vocab), kind="whisper", empty_ids=empty_ids)
        self.num_languages = num_languages
        self.special_tokens = dict(specials)
        self.sot = specials["<|startoftranscript|>"]
        self.timestamp_begin = specials["<|0.00|>"]
        self.no_timestamps = specials["<|notimestamps|>"]
        self.languages = tuple(LANGUAGES[:num_languages])

    def sot_sequence(self, language: str | None = None, task: str | None = None) -> tuple[int, ...]:
        """<|startoftranscript|>, then the language's token and the task's, as openai's `sot_sequence`."""
        seq = [self.sot]
        if language is not None:
            if language not in self.languages:
                raise ValueError(f"unknown Whisper language {language!r} (num_languages={self.num_languages})")
            seq.append(self.sot + 1 + self.languages.index(language))
        if task is not None:
            if task not in ("transcribe", "translate"):
                raise ValueError(f"Whisper task must be 'transcribe' or 'translate', got {task!r}")
            seq.append(self.special_tokens[f"<|{task}|>"])
        return tuple(seq)

    def decode_with_timestamps(self, ids: Sequence[int]) -> str:
        """Every id rendered, control tokens and timestamps as their text (openai's `decode_with_timestamps`)."""
        return self._call(self.encoding.decode, self._kept(ids, self._empty_ids))


def build(spec: TokenizerSpec) -> WhisperTokenizer:
    unknown = set(spec.options) - {"num_languages"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'whisper': unknown options {sorted(unknown)}")
    num_languages = spec.options.get("num_languages", 99)
    if type(num_languages) is not int or not 1 <= num_languages <= len(LANGUAGES):
        raise TokenizerAssetError(f"tokenizer kind 'whisper': num_languages must be 1..{len(LANGUAGES)}, "
                                  f"got {num_languages!r}")
    path = spec.asset("ranks")
    try:
        n_ranks = len(load_tiktoken_ranks(path, allow_empty_token=True))
        specials = whisper_special_tokens(n_ranks, num_languages)
        model = read_tiktoken_model(path, name="whisper", pattern=GPT2_ORIGINAL_PATTERN, special_tokens=specials,
                                    pattern_kind=kind_of_pattern(GPT2_ORIGINAL_PATTERN),
                                    explicit_n_vocab=n_ranks + len(specials), allow_empty_token=True)
        # multilingual.tiktoken's rank 50256 is b"": BPE never produces it and it decodes to "",
        # so it stays out of the compiled tables (which hold non-empty tokens only).
        empty = model.vocab.pop(b"", None)
        enc = Encoding(model)
    except TokenizerFileError as e:
        raise TokenizerAssetError(f"tokenizer kind 'whisper': asset 'ranks' ({path}): {e}") from None
    return WhisperTokenizer(enc, specials, num_languages, frozenset(() if empty is None else (empty,)))
