"""`huggingface`: a tokenizer.json (+ optional tokenizer_config.json), through `tltok_jit.from_file`'s loader.

`files`: {"tokenizer": "tokenizer.json", "config": "tokenizer_config.json"} (config optional: its
`added_tokens_decoder` entries missing from tokenizer.json are added, as transformers does).
`options`: {"add_special_tokens": False} (True adds the post-processor's template in `encode`).

`special_ids` are the added tokens marked special; `decode` drops them, as
`tokenizers.Tokenizer.decode(ids, skip_special_tokens=True)`. `encode` matches every added token in
the text, as `tokenizers`' `encode(text, add_special_tokens=...)`.
"""

from __future__ import annotations

import numpy as np

from ..encoding import Encoding
from ..loaders.hf_json import read_hf_json
from ..model.description import TokenizerFileError
from ..columns.pandas_io import is_pandas_series
from ..tokenizer import TokenizerAssetError, TokenizerSpec
from .encoding_backed import EncodingTokenizer

__all__ = ["HuggingFaceTokenizer", "build"]


class HuggingFaceTokenizer(EncodingTokenizer):
    """tokenizer.json behind the contract; streaming is the Encoding's (`tltok_jit.streaming.decode`), which runs
    a decoder chain such as Mistral-7B's over a bounded window of recent ids."""

    def __init__(self, enc: Encoding, special_ids, *, add_special_tokens: bool):
        super().__init__(enc, special_ids, kind="huggingface", allowed_special="all")
        self._add_special_tokens = add_special_tokens

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(text, allowed_special="all", add_special_tokens=self._add_special_tokens)

    def _template(self) -> tuple[np.ndarray, np.ndarray]:
        """(prefix, suffix): the ids the post-processor puts around one sequence."""
        t = getattr(self, "_template_ids", None)
        if t is None:
            enc = self.encoding
            both = enc.encode("", allowed_special="all", add_special_tokens=True)
            plain = enc.encode("a", allowed_special="all")
            full = enc.encode("a", allowed_special="all", add_special_tokens=True)
            k = next(k for k in range(len(full) - len(plain) + 1)
                     if full[k:k + len(plain)] == plain and full[:k] + full[k + len(plain):] == both)
            t = self._template_ids = (np.array(full[:k], np.uint32), np.array(full[k + len(plain):], np.uint32))
        return t

    def encode_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace",
                     large_list: bool | None = None):
        """`encode` of every row; with add_special_tokens the template goes around every non-null row."""
        result = super().encode_arrow(column, num_threads=num_threads, errors=errors, large_list=large_list)
        if not self._add_special_tokens or is_pandas_series(column):
            if self._add_special_tokens:  # a Series of lists
                prefix, suffix = (a.tolist() for a in self._template())
                return result.map(lambda ids: None if ids is None else prefix + ids + suffix)
            return result
        prefix, suffix = self._template()
        if not (len(prefix) or len(suffix)):
            return result
        from .columns import with_template

        return with_template(result, prefix, suffix, large_list)

    def encode_batch_padded(self, texts, pairs=None, *, add_special_tokens: bool | None = None, **options):
        """`Encoding.encode_batch_padded` with every added token matched (as `encode`): pairs, the
        template (`add_special_tokens`, default the kind's option) and the file's own truncation /
        padding as HF's `encode_batch` applies them."""
        if add_special_tokens is None:
            add_special_tokens = self._add_special_tokens
        return self.encoding.encode_batch_padded(texts, pairs, add_special_tokens=add_special_tokens,
                                                 allowed_special="all", **options)

    def count_arrow(self, column, *, num_threads: int | None = None, errors: str = "replace"):
        """The number of ids of every row, the template's included with add_special_tokens."""
        result = super().count_arrow(column, num_threads=num_threads, errors=errors)
        if not self._add_special_tokens:
            return result
        prefix, suffix = self._template()
        extra = len(prefix) + len(suffix)
        if is_pandas_series(column):
            return result + extra
        import pyarrow.compute as pc

        return pc.add(result, extra)


def build(spec: TokenizerSpec) -> HuggingFaceTokenizer:
    unknown = set(spec.options) - {"add_special_tokens"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'huggingface': unknown options {sorted(unknown)}")
    path = spec.asset("tokenizer")
    config = spec.asset("config", required=False)
    from ..loaders.hf_wordpiece import is_wordpiece_file

    from ..loaders.hf_unigram import is_unigram_file

    if is_wordpiece_file(path) or is_unigram_file(path):
        return _wordpiece(spec, path, config)
    try:
        desc = read_hf_json(path, config)
        enc = Encoding(desc)
    except TokenizerFileError as e:
        assets = f"asset 'tokenizer' ({path})" + (f" with asset 'config' ({config})" if config else "")
        raise TokenizerAssetError(f"tokenizer kind 'huggingface': {assets}: {e}") from None
    special = frozenset(t.id for t in desc.added_tokens if t.special)
    return HuggingFaceTokenizer(enc, special, add_special_tokens=bool(spec.options.get("add_special_tokens", False)))


def _wordpiece(spec: TokenizerSpec, path: str, config: str | None):
    """A WordPiece (the BERT family) or Unigram (T5, XLM-R) tokenizer.json behind the contract: its own
    tokenizer object."""
    from ..loaders.hf_unigram import is_unigram_file
    from .unigram import UnigramTokenizer
    from .wordpiece import WordPieceTokenizer

    cls = UnigramTokenizer if is_unigram_file(path) else WordPieceTokenizer
    if spec.options.get("add_special_tokens"):
        raise TokenizerAssetError("tokenizer kind 'huggingface': option 'add_special_tokens' is not supported for "
                                  f"the {cls.__name__[:-9]} file {path}: call encode(text, add_special_tokens=True) "
                                  "on it")
    try:
        return cls.from_file(path, config)
    except TokenizerFileError as e:
        raise TokenizerAssetError(f"tokenizer kind 'huggingface': asset 'tokenizer' ({path}): {e}") from None
