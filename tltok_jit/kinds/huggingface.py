"""`huggingface`: a tokenizer.json (+ optional tokenizer_config.json), through `tltok_jit.from_file`'s loader.

`files`: {"tokenizer": "tokenizer.json", "config": "tokenizer_config.json"} (config optional: its
`added_tokens_decoder` entries missing from tokenizer.json are added, as transformers does).
`options`: {"add_special_tokens": False} (True adds the post-processor's template in `encode`).

`special_ids` are the added tokens marked special; `decode` drops them, as
`tokenizers.Tokenizer.decode(ids, skip_special_tokens=True)`. `encode` matches every added token in
the text, as `tokenizers`' `encode(text, add_special_tokens=...)`.
"""

from __future__ import annotations

from ..encoding import Encoding
from ..loaders.hf_json import read_hf_json
from ..model import TokenizerFileError
from ..tokenizer import TokenizerAssetError, TokenizerSpec
from .encoding_backed import EncodingTokenizer

__all__ = ["HuggingFaceTokenizer", "build"]


class HuggingFaceTokenizer(EncodingTokenizer):
    """tokenizer.json behind the contract; streaming is the Encoding's (`tltok_jit.stream`), which runs
    a decoder chain such as Mistral-7B's over a bounded window of recent ids."""

    def __init__(self, enc: Encoding, special_ids, *, add_special_tokens: bool):
        super().__init__(enc, special_ids, kind="huggingface", allowed_special="all")
        self._add_special_tokens = add_special_tokens

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(text, allowed_special="all", add_special_tokens=self._add_special_tokens)


def build(spec: TokenizerSpec) -> HuggingFaceTokenizer:
    unknown = set(spec.options) - {"add_special_tokens"}
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'huggingface': unknown options {sorted(unknown)}")
    path = spec.asset("tokenizer")
    config = spec.asset("config", required=False)
    try:
        desc = read_hf_json(path, config)
        enc = Encoding(desc)
    except TokenizerFileError as e:
        assets = f"asset 'tokenizer' ({path})" + (f" with asset 'config' ({config})" if config else "")
        raise TokenizerAssetError(f"tokenizer kind 'huggingface': {assets}: {e}") from None
    special = frozenset(t.id for t in desc.added_tokens if t.special)
    return HuggingFaceTokenizer(enc, special, add_special_tokens=bool(spec.options.get("add_special_tokens", False)))
