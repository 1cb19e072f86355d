"""`PythonServing`: which calls of one Encoding the exact Python encoder answers while a background
process compiles the kernels (`compile.background`).

While the kernels are not in the cache, a tiktoken rank file or a byte-level tokenizer.json model is
served by an exact Python encoder (`python_encoder`, `python_encoder_hf`) and a background process
compiles them; each call asks `serve(stage)` whether the kernels of its stage are ready yet. The
engine (`engine.core.Engine`) holds this object and reads `encoder` (None: the kernels answer).
"""

from __future__ import annotations

import time

from . import background as warm
from . import python_encoder as interim
from ..model.description import ModelDescription


class PythonServing:
    """The Python encoder of one model (`encoder`, None once the kernels answer) and the stages of the
    compile worker its calls need."""

    def __init__(self, model: ModelDescription, tables_given: bool):
        self.encoder = None
        self._checked = 0.0
        self._worker_restarted = False
        interim_hf = None
        if getattr(model, "hf", None) is not None:  # a tokenizer.json pipeline (rank files never load it)
            from . import python_encoder_hf as interim_hf
        # the worker's stages every call of this model also needs
        self.stages: tuple[str, ...] = (("hf",) if interim_hf is not None and interim_hf.needs_hf_kernels(model)
                                        else ())
        # the compile worker's stages this model's calls use (a rank file never needs "hf")
        self.compile_stages: tuple[str, ...] = warm.BASE_STAGES + self.stages
        self.pattern_kind: str | None = model.pattern_kind
        if not tables_given and warm.background_enabled() and not warm.all_ready(self.compile_stages):
            if interim.supports(model):
                self.encoder = interim.InterimEncoder(model)
            elif interim_hf is not None and interim_hf.supports(model):
                self.encoder = interim_hf.HFInterimEncoder(model)
        if self.encoder is not None:
            warm.start_background(self.pattern_kind, self.compile_stages)

    def stage_ready(self, stage: str) -> bool:
        return warm.stage_ready(stage) and all(warm.stage_ready(s) for s in self.stages)

    def serve(self, stage: str) -> bool:
        """True: answer this call with the Python encoder (the kernels of `stage` are not ready)."""
        if self.encoder is None:
            return False
        if self.stage_ready(stage):
            if warm.all_ready(self.compile_stages):
                self.encoder = None
            return False
        now = time.monotonic()
        if now - self._checked > 1.0:
            self._checked = now
            if not warm.worker_running() and not self.stage_ready(stage):
                # the worker that ran was started for another model's stages: start one for ours, once
                if not self._worker_restarted:
                    self._worker_restarted = True
                    if warm.start_background(self.pattern_kind, self.compile_stages):
                        return True
                self.encoder = None  # no worker left: compile in this process
                return False
        return True

    def wait_for_tables(self) -> None:
        """Before the tables are built: while the Python encoder serves, the worker's compile of the
        single-text stage (it returns at once when the worker died: then they compile here)."""
        if self.encoder is not None:
            warm.wait_for("single")

    @staticmethod
    def text_kernels_ready() -> bool:
        """The str -> UTF-8 kernels are in the cache (else the tables' builder loads them now)."""
        return warm.stage_ready("single")
