"""The Python objects a short call's kernel returns: its list of ids, or its count, made in the kernel.

Kernels read and write arrays only, with this one exception at the output boundary: a call on a short
str returns its ids as a new `list[int]` built with the C API where the ids are (PyList_New,
PyLong_FromLongLong), because building it in Python from the id scratch (a slice, then `tolist`)
cost ~200 ns, a fifth of a 20-character call; with the table of immortal int objects
(`id_list_shared`, tltok_jit.engine.pylist) the list holds one per id without allocating it or taking a
reference. Such a kernel must hold the GIL while it makes them (`njit(nogil=False)`).
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import box, intrinsic, models, register_model


class PyObjectRef(types.Opaque):
    """A new reference to a Python object made in a kernel; returned, it is the call's result."""

    def __init__(self) -> None:
        super().__init__(name="PyObjectRef")


py_object_ref = PyObjectRef()
register_model(PyObjectRef)(models.OpaqueModel)


@box(PyObjectRef)
def _box_ref(typ, val, c):
    return val  # already a new reference (NULL with an exception set when making it failed)


def _list_of_ids(builder, pyapi, data, count, item_of):
    """Codegen: a new list of item_of(id) (each a new reference, NULL on failure) for the uint32 ids
    data[0:count]; NULL with the exception set when an allocation fails."""
    lst = pyapi.list_new(count)
    failed = cgutils.alloca_once_value(builder, cgutils.is_null(builder, lst))
    with builder.if_then(builder.not_(builder.load(failed)), likely=True):
        with cgutils.for_range(builder, count) as loop:
            item = item_of(builder.zext(builder.load(builder.gep(data, [loop.index])), pyapi.longlong))
            with builder.if_then(cgutils.is_null(builder, item), likely=False):
                builder.store(cgutils.true_bit, failed)
            pyapi.list_setitem(lst, loop.index, item)  # steals item; a NULL item is allowed
        with builder.if_then(builder.load(failed), likely=False):
            pyapi.decref(lst)
    return builder.select(builder.load(failed), cgutils.get_null_value(lst.type), lst)


def _of_buffer(name, dtype, make):
    """An intrinsic `name`(buf, n) -> PyObjectRef for a 1-D array `buf` of `dtype`: make(context, builder,
    pyapi, pointer to buf's data, n as intp) builds the object (n <= len(buf): the caller's guarantee)."""

    def typer(typingctx, buf, n):
        if not (isinstance(buf, types.Array) and buf.dtype == dtype and isinstance(n, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            pyapi = context.get_python_api(builder)
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            count = context.cast(builder, args[1], signature.args[1], types.intp)
            return make(context, builder, pyapi, data, count)

        return py_object_ref(buf, n), codegen

    typer.__name__ = typer.__qualname__ = name  # numba names the intrinsic (and its code) after it
    return intrinsic(typer)


# A new list of the ints ids[0:n] (uint32 ids); NULL with MemoryError set when an allocation fails.
id_list = _of_buffer("id_list", types.uint32, lambda context, builder, pyapi, data, count:
                     _list_of_ids(builder, pyapi, data, count, pyapi.long_from_longlong))


@intrinsic
def id_list_shared(typingctx, ids, n, objs):
    """id_list, with the item of id i the int object at address objs[i] (one prebuilt object per
    vocabulary id, immortal: tltok_jit.engine.pylist) instead of a new int, without a reference of the
    list's own: no allocation and no reference count change per id. An id outside objs gets a new
    int."""
    if not (isinstance(ids, types.Array) and ids.dtype == types.uint32 and isinstance(n, types.Integer)
            and isinstance(objs, types.Array) and objs.dtype == types.int64 and objs.ndim == 1):
        return None
    sig = py_object_ref(ids, n, objs)

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        table = context.make_array(signature.args[2])(context, builder, args[2])
        n_objs = builder.extract_value(table.shape, 0)
        count = context.cast(builder, args[1], signature.args[1], types.intp)
        slot = cgutils.alloca_once(builder, pyapi.pyobj)

        def shared_int(v):
            with builder.if_else(builder.icmp_unsigned("<", v, n_objs), likely=True) as (shared, new):
                with shared:
                    obj = builder.inttoptr(builder.load(builder.gep(table.data, [v])), pyapi.pyobj)
                    builder.store(obj, slot)  # immortal: no reference taken (see the docstring)
                with new:
                    builder.store(pyapi.long_from_longlong(v), slot)
            return builder.load(slot)

        return _list_of_ids(builder, pyapi, data, count, shared_int)

    return sig, codegen


@intrinsic
def py_int(typingctx, n):
    """A new int object of the integer n."""
    if not isinstance(n, types.Integer):
        return None
    sig = py_object_ref(n)

    def codegen(context, builder, signature, args):
        pyapi = context.get_python_api(builder)
        return pyapi.long_from_longlong(context.cast(builder, args[0], signature.args[0], types.int64))

    return sig, codegen


@intrinsic
def py_none(typingctx):
    """A new reference to None."""
    sig = py_object_ref()

    def codegen(context, builder, signature, args):
        return context.get_python_api(builder).make_none()

    return sig, codegen


@intrinsic
def release_gil(typingctx):
    """Release the GIL (PyEval_SaveThread); returns the thread state for `acquire_gil`. No Python
    object may be touched until then."""
    sig = types.voidptr()

    def codegen(context, builder, signature, args):
        return context.get_python_api(builder).save_thread()

    return sig, codegen


@intrinsic
def acquire_gil(typingctx, state):
    """Take the GIL back (PyEval_RestoreThread) with the state `release_gil` returned."""
    if state != types.voidptr:
        return None
    sig = types.void(types.voidptr)

    def codegen(context, builder, signature, args):
        context.get_python_api(builder).restore_thread(args[0])
        return context.get_dummy_value()

    return sig, codegen


def _decoded_text(context, builder, pyapi, data, size):
    fnty = ir.FunctionType(pyapi.pyobj, [pyapi.cstring, pyapi.py_ssize_t, pyapi.cstring])
    fn = pyapi._get_function(fnty, name="PyUnicode_DecodeUTF8")
    errors = context.insert_const_string(builder.module, "replace")
    return builder.call(fn, [builder.bitcast(data, pyapi.cstring), size, errors])


# A new str of the UTF-8 bytes buf[0:n] decoded with errors="replace" (bytes.decode's decoder,
# PyUnicode_DecodeUTF8); NULL with the exception set when an allocation fails.
py_text = _of_buffer("py_text", types.uint8, _decoded_text)

# A new bytes object of buf[0:n]; NULL with the exception set when an allocation fails.
py_bytes = _of_buffer("py_bytes", types.uint8, lambda context, builder, pyapi, data, size:
                      pyapi.bytes_from_string_and_size(builder.bitcast(data, pyapi.cstring), size))
