"""The plain model description every loader produces and `tables.compile_model` consumes.

Data flows one way: file -> ModelDescription -> CompiledTables -> kernels. A description holds
only Python values (bytes, ints, strings); it is validated again when compiled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import TokenizerFileError  # noqa: F401  (re-exported: loaders raise it from here)


@dataclass(frozen=True)
class AddedToken:
    """A token matched in raw text before pretokenization (tiktoken's special tokens, HF's added tokens).

    Flags follow Hugging Face `tokenizers`: `special` (skipped by decode(skip_special_tokens=True)),
    `single_word`, `lstrip`, `rstrip`, `normalized`. tiktoken special tokens are `special=True` with
    every other flag False.
    """

    content: str
    id: int
    special: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False


@dataclass
class ModelDescription:
    """A byte-level BPE model, independent of the file format it came from.

    vocab:          ordinary token bytes -> id (every one of the 256 single bytes must be present
                    for byte-level models).
    merges:         None for tiktoken-style rank merging (the rank of a pair is the id of the
                    concatenated bytes, and a whole piece found in `vocab` is one token); otherwise
                    the ordered merge list as (left bytes, right bytes) pairs, rank = list index.
    pattern:        the split regex, exactly as the original file states it.
    pattern_kind:   which hand-written scanner implements `pattern` ("gpt2", "cl100k", "o200k", ...),
                    or None when only the slow `regex` path can (chosen by `tables`).
    added_tokens:   tokens matched before pretokenization.
    ignore_merges:  look a whole piece up in `vocab` before merging (tiktoken always does).
    digest:         a hash of the source's bytes and of the loader's parameters, when the loader
                    has one: the table cache keys on it instead of hashing `vocab`.
    vocab_loader:   with `vocab=None`, parses and validates `vocab` on first access (a rank file
                    whose tables are cached never needs its 200,000 tokens as Python objects).
    """

    name: str
    vocab: dict[bytes, int]
    merges: list[tuple[bytes, bytes]] | None
    pattern: str
    added_tokens: list[AddedToken] = field(default_factory=list)
    ignore_merges: bool = True
    pattern_kind: str | None = None
    source: str = ""  # the file(s) it was read from, for error messages
    explicit_n_vocab: int | None = None
    # Hugging Face tokenizer.json extras (the defaults are tiktoken's behaviour):
    # allow_missing_bytes: byte-level BPE whose vocabulary lacks some single bytes (HF drops them
    #                      from the piece; the Encoding sends texts containing them to its slow path).
    # char_level:          SentencePiece-style BPE (Mistral-7B): the initial symbols are characters
    #                      looked up in `vocab` (UTF-8 keys), unknown ones fall back to <0xNN> tokens.
    # added_bytes:         decode bytes of added tokens whose decoded form is not their UTF-8.
    # hf:                  `loaders.hf_json.HFPipeline` (normalizer, python pretokenizer, post-processor,
    #                      decoder) that the Encoding runs around the kernels; None for tiktoken files.
    allow_missing_bytes: bool = False
    char_level: bool = False
    added_bytes: dict[int, bytes] | None = None
    hf: object | None = None
    digest: str | None = None
    vocab_loader: Callable[[], dict[bytes, int]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.vocab is None:
            if self.vocab_loader is None:
                raise TypeError(f"ModelDescription {self.name!r}: vocab=None needs a vocab_loader")
            del self.vocab  # read on first access (__getattr__)

    def __getattr__(self, attr: str):
        # only called for attributes not set: `vocab` before its first access
        if attr == "vocab":
            loader = self.__dict__.get("vocab_loader")
            if loader is not None:
                vocab = loader()
                self.__dict__["vocab"] = vocab
                return vocab
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def __getstate__(self) -> dict:
        # a pickled description carries its vocabulary: the loader may read a file the other
        # process (another node) does not have
        state = dict(self.__dict__)
        state["vocab"] = self.vocab
        state["vocab_loader"] = None
        return state

    @property
    def special_tokens(self) -> dict[str, int]:
        return {t.content: t.id for t in self.added_tokens}
