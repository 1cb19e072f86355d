"""The table of scanner addresses the piece loops call through.

`call_scanner(kind, buf, pos, end, s1, s2, a0)` is an indirect call through slot `kind` of a
process-wide int64 table (`SLOTS`, known to the JIT linker under SLOTS_SYMBOL, so cached machine
code finds it in every process). Each slot holds the address of that pattern's scanner compiled as
a C callback (`scan.load_scanner`), so no kernel compiles a scanner, and a process compiles (or
loads from the cache) only the scanners of the patterns it uses: o200k's is 7 of the ~27 compile
seconds the seven took when every piece loop held all of them. Until then a slot holds a callback
that loads the scanner and forwards the call (scan.py).
"""

from __future__ import annotations

import llvmlite.binding
import llvmlite.ir
import numba
import numpy as np
from numba import types

from .jit import njit

N_SCANNERS = 7  # scan.PAT_GPT2 .. scan.PAT_GPT2_DIGITS; PAT_WHOLE (7) needs no scanner
SLOTS_SYMBOL = "tltok_jit_scanner_slots_v1"

# (buf, pos, end, stage1, stage2, a0) -> end of the piece: the scanner cores' arguments (scan.py)
SCANNER_SIG = types.int64(types.CPointer(types.uint8), types.int64, types.int64, types.CPointer(types.uint16),
                          types.CPointer(types.uint8), types.int64)

SLOTS = np.zeros(N_SCANNERS, dtype=np.int64)  # lives as long as the process: compiled code reads it
llvmlite.binding.add_symbol(SLOTS_SYMBOL, SLOTS.ctypes.data)


@numba.extending.intrinsic
def _call_slot(typingctx, kind, buf, pos, end, s1, s2, a0):
    sig = types.int64(types.int64, *SCANNER_SIG.args)

    def codegen(context, builder, signature, args):
        i64 = llvmlite.ir.IntType(64)
        module = builder.module
        gv = module.globals.get(SLOTS_SYMBOL)
        if gv is None:
            gv = llvmlite.ir.GlobalVariable(module, llvmlite.ir.ArrayType(i64, N_SCANNERS), SLOTS_SYMBOL)
            gv.linkage = "external"
        addr = builder.load(builder.gep(gv, [i64(0), args[0]], inbounds=True))
        fnty = llvmlite.ir.FunctionType(i64, [context.get_value_type(t) for t in SCANNER_SIG.args])
        return builder.call(builder.inttoptr(addr, fnty.as_pointer()), args[1:])

    return sig, codegen


@njit(inline="always")
def call_scanner(kind, buf, pos, end, s1, s2, a0):
    """End of the piece of pattern `kind` that starts at pos (scan.py's core arguments); `end` for
    scan.PAT_WHOLE, -1 for a kind with no scanner."""
    if kind == N_SCANNERS:  # scan.PAT_WHOLE
        return end
    if kind < 0 or kind > N_SCANNERS:
        return types.int64(-1)
    return _call_slot(types.int64(kind), buf, types.int64(pos), types.int64(end), s1, s2, types.int64(a0))
