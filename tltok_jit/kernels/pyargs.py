"""Arguments of the short-call kernels that unbox for less than numba's own types.

A call on a 20-character text costs ~0.8 us; numba's unboxing of its arguments was ~110 ns of it:

- a str: numba's `unicode_type` takes a reference-counted copy of the str's header (a meminfo:
  malloc, an atomic increment, free). `borrowed_str` has the same data model and methods but no
  meminfo: it reads the str in place for the call's duration, which the caller's reference to the
  str outlives (a kernel taking one never stores or returns it). ~25 ns.
- an object read through the C layout (kernels/pyints.py): `borrowed_object` passes its address
  as it is, without numba's generic object handling or an `id()` call in Python.
- an address: an int of more than 30 bits unboxes through CPython's slow path (~25 ns more than a
  small int). A call handle's address is entered once in `CALL_SLOTS` (a table the kernels reach
  by symbol, not by argument) and the call passes its slot number instead (`take_slot`,
  `call_address`).
"""

from __future__ import annotations

import ctypes
import threading

import llvmlite.binding as ll
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.cpython.unicode import UnicodeModel
from numba.extending import NativeValue, intrinsic, models, register_model, unbox

from .jit import njit


class BorrowedStr(types.UnicodeType):
    """A str argument read in place, without a reference of the kernel's own (see the module doc)."""

    def __init__(self) -> None:
        types.Hashable.__init__(self, name="borrowed_str")  # UnicodeType's own __init__ fixes the name


register_model(BorrowedStr)(UnicodeModel)
borrowed_str = BorrowedStr()


@unbox(BorrowedStr)
def _unbox_borrowed_str(typ, obj, c):
    _, data, length, kind, is_ascii, hashv = c.pyapi.string_as_string_size_and_kind(obj)
    s = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    s.data = data
    s.length = length
    s.kind = kind
    s.is_ascii = is_ascii
    s.hash = hashv
    s.meminfo = cgutils.get_null_value(s.meminfo.type)  # numba's incref / decref skip a NULL meminfo
    s.parent = obj
    return NativeValue(s._getvalue(), is_error=cgutils.is_not_null(c.builder, c.pyapi.err_occurred()))


class BorrowedObject(types.Opaque):
    """Any Python object argument, as its address (see the module doc; `object_address`)."""

    def __init__(self) -> None:
        super().__init__(name="borrowed_object")


register_model(BorrowedObject)(models.OpaqueModel)
borrowed_object = BorrowedObject()


@unbox(BorrowedObject)
def _unbox_borrowed_object(typ, obj, c):
    return NativeValue(obj)


@intrinsic
def object_address(typingctx, obj):
    """The address of a borrowed_object argument (an int64, for kernels/pyints.py's loads)."""
    if not isinstance(obj, BorrowedObject):
        return None
    sig = types.int64(obj)

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))

    return sig, codegen


# ----------------------------------------------------------------------------------------------
# call slots

SLOTS = 4096  # slot numbers stay below 2**30 (one CPython digit); addresses are far above SLOTS
_SYMBOL = "tltok_jit_call_slots"
CALL_SLOTS = (ctypes.c_int64 * SLOTS)()  # slot 0 stays 0: "no handle"
ll.add_symbol(_SYMBOL, ctypes.addressof(CALL_SLOTS))  # cached machine code finds it by name, too
_free = list(range(SLOTS - 1, 0, -1))
_slots_lock = threading.Lock()


def take_slot(address: int) -> int:
    """A slot number holding `address` (a call handle's data address) until release_slot; the
    address itself when every slot is taken (the kernels take either)."""
    if address < SLOTS:
        raise ValueError(f"address {address:#x} is not a data address")
    with _slots_lock:
        if not _free:
            return address
        slot = _free.pop()
        CALL_SLOTS[slot] = address
        return slot


def release_slot(slot: int) -> None:
    """Empty a slot of take_slot (an address it returned instead is ignored)."""
    if 0 < slot < SLOTS:
        with _slots_lock:
            CALL_SLOTS[slot] = 0
            _free.append(slot)


@intrinsic
def _slot_value(typingctx, slot):
    if not isinstance(slot, types.Integer):
        return None
    sig = types.int64(slot)

    def codegen(context, builder, signature, args):
        table = builder.module.globals.get(_SYMBOL)
        if table is None:
            table = ir.GlobalVariable(builder.module, ir.ArrayType(ir.IntType(64), SLOTS), _SYMBOL)
            table.linkage = "external"
        i = context.cast(builder, args[0], signature.args[0], types.intp)
        return builder.load(builder.gep(table, [ir.Constant(ir.IntType(32), 0), i]))

    return sig, codegen


@njit(inline="always")
def call_address(ca):
    """The call handle address a kernel was given: `ca` itself, or what slot `ca` holds (0 for an
    empty slot)."""
    if ca < SLOTS:
        return _slot_value(max(ca, 0))
    return ca
