"""`KernelPipeline`: the pipeline of a rank-file Encoding (the kernels alone), and the base of the
tokenizer.json one (pipeline_runtime.HFRuntime)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .special_policy import SpecialPolicy

if TYPE_CHECKING:  # annotations only: a rank-file Encoding never loads the tokenizer.json modules
    from ..hf.decoder_chain import DecoderChain
    from ..loaders.hf_json import HFPipeline


class KernelPipeline:
    """The pipeline of a rank-file model: no normalizer, the kernels' pretokenizer, no template, the
    byte-gather decoder. Each method is the Encoding's kernel path for one kind of call."""

    kernels_only = True  # the kernels alone run it: the Encoding's short-call fast paths apply
    pipe: HFPipeline | None = None
    chain: DecoderChain | None = None  # the decoder chain `decode` runs; None: the token bytes joined
    prefix_ids: tuple[int, ...] = ()  # what add_special_tokens=True puts around a sequence
    suffix_ids: tuple[int, ...] = ()
    template = None    # a tokenizer.json's single and pair templates; its truncation and padding
    truncation = None
    padding = None

    def __init__(self, enc, engine):
        self.enc = enc  # the Encoding (its public calls, for pipelines that run rows one by one)
        self.engine = engine  # its kernel side (engine.core.Engine)

    def encode(self, text: str, policy: SpecialPolicy, allowed_special, add_special_tokens: bool,
               num_threads: int | None) -> np.ndarray:
        """`encode_to_numpy` under the call's special-token policy."""
        return self.engine.encode(text, policy, allowed_special, num_threads)

    def encode_rows(self, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, amask, any_allowed: bool,
                    num_threads: int, texts: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`Encoding.encode_rows` of checked offsets (`texts`: the str of each row, when the rows were
        made from them)."""
        return self.engine.encode_rows(data, offsets, valid, amask, any_allowed, num_threads)

    def add_template(self, ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows with the post-processor's prefix / suffix ids around each (none here)."""
        return ids, offsets

    def encode_arrow(self, array, *, num_threads, allowed_special, disallowed_special, errors, large_list,
                     counting: bool):
        """`encode_arrow` (counting: `count_arrow`) of an Arrow column."""
        return self.engine.encode_arrow(array, num_threads=num_threads, allowed_special=allowed_special,
                                        disallowed_special=disallowed_special, errors=errors, large_list=large_list,
                                        counting=counting)

    def decode_bytes(self, ids: np.ndarray) -> bytes:
        """The bytes of valid ids."""
        return self.engine.gather_bytes(ids)

    def decode(self, ids: np.ndarray, errors: str) -> str:
        """The text of valid ids."""
        return self.engine.gather_bytes(ids).decode("utf-8", errors=errors)

    def decode_arrow(self, list_array, errors: str, num_threads: int):
        """`decode_arrow` of a list column."""
        from ..columns.arrow import decode_arrow

        return decode_arrow(self.engine, list_array, errors=errors, num_threads=num_threads)
