"""`tiktoken`: a tiktoken encoding, by name (`options["encoding"]`) or from a `.tiktoken` rank file.

`files`: {"ranks": path} (optional); `options`:
  encoding             a known name ("o200k_base", ...): with no ranks file, `tltok_jit.get_encoding`;
                       with one, the name whose split pattern and special tokens the file gets
                       (default: the file's stem)
  skip_special_tokens  decode drops the special tokens (default False: tiktoken renders them)
  allowed_special      what `encode` matches as special tokens: "all" or a list of names
                       (default none, and text spelling one raises, as tiktoken's encode)
"""

from __future__ import annotations

from .. import get_encoding
from ..encoding import Encoding
from ..model.description import TokenizerFileError
from ..tokenizer import TokenizerAssetError, TokenizerSpec
from .encoding_backed import EncodingTokenizer

__all__ = ["build"]

_OPTIONS = {"encoding", "skip_special_tokens", "allowed_special"}


def build(spec: TokenizerSpec) -> EncodingTokenizer:
    unknown = set(spec.options) - _OPTIONS
    if unknown:
        raise TokenizerAssetError(f"tokenizer kind 'tiktoken': unknown options {sorted(unknown)}")
    name = spec.options.get("encoding")
    path = spec.asset("ranks", required=name is None)
    try:
        enc = get_encoding(name) if path is None else Encoding.from_tiktoken_file(path, name=name)
    except TokenizerFileError as e:
        raise TokenizerAssetError(f"tokenizer kind 'tiktoken': asset 'ranks' ({path}): {e}") from None
    except (KeyError, ValueError) as e:
        raise TokenizerAssetError(f"tokenizer kind 'tiktoken': {e}") from None
    skip = bool(spec.options.get("skip_special_tokens", False))
    special = {enc.encode_single_token(s) for s in enc.special_tokens_set} if skip else ()
    allowed = spec.options.get("allowed_special", frozenset())
    if allowed != "all":
        allowed = frozenset(allowed)
    return EncodingTokenizer(enc, special, kind="tiktoken", allowed_special=allowed)
