"""The one place kernels get their decorator (`njit`) and the intrinsics they share.

Compiled machine code is kept on disk by `numba_cache` (the package's shipped kernels, then a user
cache folder); nothing here changes numba for other code in the process."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys

import llvmlite.ir
import numba
import numba.core.cgutils
import numba.extending
import numpy as np

from . import numba_cache
from .numba_cache import KERNEL_CACHE_DIR, PACKAGE_DIR, VERSION, kernel_cache_root  # noqa: F401 (re-exported)

# True when kernels' machine code is kept on disk (shipped or user folder): compiled at most once
CACHE = numba_cache.ENABLED
# True when this machine's own compiles are kept (the user folder is writable): the background
# compile and the table cache need it
USER_CACHE = numba_cache.USER_CACHE
# True when the package's shipped kernels run in this process: nothing needs compiling
SHIPPED = numba_cache.SHIPPED


def prune_kernel_caches(keep: int = 3) -> list[str]:
    """Delete all but the `keep` most recently used kernel caches besides the current one (older
    versions or sources); returns the folders removed."""
    root = kernel_cache_root()
    try:
        names = [n for n in os.listdir(root) if os.path.join(root, n) != KERNEL_CACHE_DIR]
    except OSError:
        return []
    paths = sorted((os.path.join(root, n) for n in names), key=lambda p: os.stat(p).st_mtime, reverse=True)
    removed = []
    for p in paths[keep:]:
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def _one_variant(dispatcher):
    """Type calls from other kernels with plain (non-literal) argument types.

    numba types a constant argument (`f(buf, 0)`) as Literal[int](0) and compiles a separate variant
    of the callee for it; one large kernel was compiled seven times that way. Unliteral types give
    the callee one variant per real argument type (the constant is cast at the call)."""
    resolve = dispatcher.get_call_template

    def get_call_template(args, kws):
        return resolve(tuple(numba.types.unliteral(a) for a in args),
                       {k: numba.types.unliteral(v) for k, v in kws.items()})

    dispatcher.get_call_template = get_call_template
    return dispatcher


_held_locks: dict = {}  # lock path -> [open file, depth] of the compile locks this process holds


def _compile_lock_path(fn) -> str:
    # per source file, as numba's cache index: two installations of one version never wait on each other
    key = f"{os.path.abspath(fn.__code__.co_filename)}:{fn.__qualname__}"
    return os.path.join(KERNEL_CACHE_DIR, "locks", hashlib.sha1(key.encode()).hexdigest()[:16])


class _CompileLock:
    """An exclusive `flock` on one kernel's lock file in the cache folder, reentrant in the process.

    Held around loading-or-compiling a kernel, so processes compiling side by side (the compile
    worker's helpers, a pool's first calls) never compile one kernel twice: the second waits, then
    loads what the first saved. A process holds locks only along its chain of nested compiles, a
    caller's before its callees', and kernels do not recurse, so two processes never wait on each
    other. numba's in-process compiler lock is taken first: a thread waiting here never holds it
    while the holder of the file lock needs it."""

    def __init__(self, fn):
        self.path = _compile_lock_path(fn)

    def __enter__(self):
        import fcntl

        held = _held_locks.get(self.path)
        if held is not None:
            held[1] += 1
            return self
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            f = open(self.path, "a+b")
        except OSError:  # the cache folder went away or read-only: compile unshared, as numba would
            f = None
        if f is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            except OSError:  # a file system without locks
                f.close()
                f = None
        _held_locks[self.path] = [f, 1]
        return self

    def __exit__(self, *exc):
        held = _held_locks[self.path]
        held[1] -= 1
        if held[1] == 0:
            del _held_locks[self.path]
            if held[0] is not None:
                held[0].close()  # releases the flock
        return False


def compile_lock(fn):
    """The cross-process lock to hold (after numba's compiler lock) while loading or compiling the
    Python function `fn` by other means than a dispatcher (a `numba.cfunc`); a no-op context
    without the cache."""
    import contextlib

    return _CompileLock(fn) if USER_CACHE else contextlib.nullcontext()


def _shared_compile(dispatcher):
    """Load-or-compile each new signature of `dispatcher` under its cross-process compile lock."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core import sigutils

    compile_ = dispatcher.compile

    def compile(sig):
        args, _ = sigutils.normalize_signature(sig)
        if tuple(args) in dispatcher.overloads:
            return compile_(sig)
        with global_compiler_lock, _CompileLock(dispatcher.py_func):
            return compile_(sig)

    dispatcher.compile = compile
    return dispatcher


def _dispatcher(fn, kwargs):
    cache = kwargs.pop("cache")
    d = _one_variant(numba.njit(**kwargs)(fn))
    if not cache:
        return d
    d = numba_cache.cached_dispatcher(d)
    return _shared_compile(d) if USER_CACHE else d


def njit(*args, **kwargs):
    """`numba.njit` with this package's kernel cache (numba_cache; unless cache=False), `nogil=True`,
    no bounds checks, one variant per non-literal argument types (_one_variant), and each kernel
    loaded or compiled under its cross-process lock (_CompileLock)."""
    kwargs.setdefault("cache", True)
    kwargs.setdefault("nogil", True)
    kwargs.setdefault("boundscheck", False)
    if args and callable(args[0]):
        return _dispatcher(args[0], kwargs)
    if args:
        raise TypeError("jit.njit takes options as keywords (explicit signatures are not used)")
    return lambda fn: _dispatcher(fn, kwargs)


@numba.extending.intrinsic
def readonly(typingctx, arr):
    """The same array typed read-only (no copy: the data model is the same). Kernels are compiled
    for read-only inputs; a writable buffer passed on as is would compile a second variant of every
    kernel below."""
    if not isinstance(arr, numba.types.Array):
        return None
    sig = arr.copy(readonly=True)(arr)

    def codegen(context, builder, signature, args):
        # the result is a new reference to the same array: numba releases it when it dies
        if context.enable_nrt:
            context.nrt.incref(builder, signature.args[0], args[0])
        return args[0]

    return sig, codegen


try:  # count leading zeros (llvm.ctlz)
    from numba.cpython.unsafe.numbers import leading_zeros
except ImportError:  # pragma: no cover - an internal numba helper; a binary search otherwise
    @njit(inline="always")
    def leading_zeros(x):
        n = 0
        for k in (32, 16, 8, 4, 2, 1):
            if x < np.uint64(1) << np.uint64(64 - k):
                n += k
                x <<= np.uint64(k)
        return n

try:  # count trailing zeros (llvm.cttz)
    from numba.cpython.unsafe.numbers import trailing_zeros
except ImportError:  # pragma: no cover - an internal numba helper; a de Bruijn sequence otherwise
    _DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
    _DEBRUIJN_INDEX = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53,
                                51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54,
                                35, 52, 21, 44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13,
                                8, 7, 6], dtype=np.int64)

    @njit
    def trailing_zeros(x):
        return _DEBRUIJN_INDEX[np.int64(((x & (~x + np.uint64(1))) * _DEBRUIJN) >> np.uint64(58))]


@numba.extending.intrinsic
def borrow(typingctx, arr):
    """The array without its reference count (a null meminfo), for use inside one kernel call only.

    Every call that takes an array updates its reference count atomically on entry and exit; the
    piece loop calls the merge and cache helpers once per piece with a dozen arrays, which costs as
    much as merging a short piece. A borrowed view makes those updates no-ops. The caller must keep
    the original array alive while the view is used (it does: the view never leaves the call that
    made it) and must never return or store the view."""
    if not isinstance(arr, numba.types.Array):
        return None
    sig = arr(arr)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, value=args[0])
        ary.meminfo = numba.core.cgutils.get_null_value(ary.meminfo.type)
        ary.parent = numba.core.cgutils.get_null_value(ary.parent.type)
        return ary._getvalue()

    return sig, codegen


LITTLE_ENDIAN = sys.byteorder == "little"


@numba.extending.intrinsic
def load_u64(typingctx, ptr, i):
    """The 8 bytes at ptr[i:i + 8] as one unaligned uint64 load (native byte order); `ptr` is a
    uint8 pointer (scan.data_ptr). The caller guarantees the 8 bytes are inside the array."""
    if not isinstance(ptr, numba.types.CPointer) or ptr.dtype != numba.types.uint8:
        return None
    if not isinstance(i, numba.types.Integer):
        return None
    sig = numba.types.uint64(ptr, i)

    def codegen(context, builder, signature, args):
        p = builder.gep(args[0], [args[1]])
        p = builder.bitcast(p, llvmlite.ir.IntType(64).as_pointer())
        return builder.load(p, align=1)

    return sig, codegen


@numba.extending.intrinsic
def byte_mask64(typingctx, ptr, i, fold, lo, span):
    """Bit k set when byte b = ptr[i + k], k < 64, has ((b | fold) - lo) mod 256 <= span: one class of
    64 bytes as a mask (fold 0x20 takes A-Z as a-z). `ptr` is a uint8 pointer (scan.data_ptr); the
    caller guarantees the 64 bytes are inside the array. LLVM lowers it to vector compares and
    move-mask instructions (scan_blocks)."""
    if not isinstance(ptr, numba.types.CPointer) or ptr.dtype != numba.types.uint8:
        return None
    if not all(isinstance(a, numba.types.Integer) for a in (i, fold, lo, span)):
        return None
    sig = numba.types.uint64(ptr, i, fold, lo, span)

    def codegen(context, builder, signature, args):
        i8 = llvmlite.ir.IntType(8)
        i32 = llvmlite.ir.IntType(32)
        vec = llvmlite.ir.VectorType(i8, 64)
        undef = llvmlite.ir.Constant(vec, llvmlite.ir.Undefined)
        zeros = llvmlite.ir.Constant(llvmlite.ir.VectorType(i32, 64), [0] * 64)

        def splat(x):
            one = builder.insert_element(undef, builder.trunc(x, i8), i32(0))
            return builder.shuffle_vector(one, undef, zeros)

        v = builder.load(builder.bitcast(builder.gep(args[0], [args[1]]), vec.as_pointer()), align=1)
        d = builder.sub(builder.or_(v, splat(args[2])), splat(args[3]))
        return builder.bitcast(builder.icmp_unsigned("<=", d, splat(args[4])), llvmlite.ir.IntType(64))

    return sig, codegen


@numba.extending.intrinsic
def data_ptr(typingctx, arr):
    """Raw data pointer of a contiguous array, for the scanner cores.

    Kernels that index arrays passed through many inlined helpers pay NRT reference-count updates
    (atomic) on every helper boundary; the cores index raw pointers instead. The caller must keep the
    array alive while the pointer is used (it does: the array is its own argument).
    """
    if not isinstance(arr, numba.types.Array) or arr.layout != "C":
        return None  # typing error: only C-contiguous arrays
    sig = numba.types.CPointer(arr.dtype)(arr)

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return sig, codegen


@numba.extending.intrinsic
def address_of(typingctx, arr):
    """The data address of a contiguous array as an int64 (a handle's entry: see handle_layout)."""
    if not isinstance(arr, numba.types.Array) or arr.layout != "C":
        return None
    sig = numba.types.int64(arr)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.ptrtoint(data, context.get_value_type(numba.types.int64))

    return sig, codegen


@numba.extending.intrinsic
def store_u64(typingctx, ptr, i, value):
    """Write `value` to the 8 bytes at ptr[i:i + 8] (one unaligned store, native byte order); the
    caller guarantees they are inside the array."""
    if not isinstance(ptr, numba.types.CPointer) or ptr.dtype != numba.types.uint8:
        return None
    if not isinstance(i, numba.types.Integer) or value != numba.types.uint64:
        return None
    sig = numba.types.void(ptr, i, value)

    def codegen(context, builder, signature, args):
        p = builder.gep(args[0], [args[1]])
        p = builder.bitcast(p, llvmlite.ir.IntType(64).as_pointer())
        builder.store(args[2], p, align=1)
        return context.get_dummy_value()

    return sig, codegen


@numba.extending.intrinsic
def prefetch(typingctx, arr, i):
    """Ask the CPU to bring the cache line of arr[i] in (a hint: no fault, no effect on results).

    The piece loop knows a window of pieces ahead and prefetches their table slots, so the misses of
    tables larger than the CPU caches overlap instead of stalling one after another."""
    if not isinstance(arr, numba.types.Array) or not isinstance(i, numba.types.Integer):
        return None
    sig = numba.types.void(arr, i)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, value=args[0])
        p = builder.gep(ary.data, [args[1]])
        i8p = llvmlite.ir.IntType(8).as_pointer()
        i32 = llvmlite.ir.IntType(32)
        fnty = llvmlite.ir.FunctionType(llvmlite.ir.VoidType(), [i8p, i32, i32, i32])
        fn = numba.core.cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(p, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


def _make_view(readonly: bool):
    @numba.extending.intrinsic
    def view(typingctx, addr, dims, dtype):
        if not isinstance(addr, (numba.types.Integer, numba.types.CPointer)):
            return None
        if not isinstance(dtype, numba.types.NumberClass):
            return None
        if not isinstance(dims, numba.types.UniTuple) or not isinstance(dims.dtype, numba.types.Integer):
            return None
        aryty = numba.types.Array(dtype.instance_type, dims.count, "C", readonly=readonly)
        sig = aryty(addr, dims, dtype)

        def codegen(context, builder, signature, args):
            from numba.np.arrayobj import populate_array  # compile time only (~50 ms of imports)

            ary = context.make_array(aryty)(context, builder)
            itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            intp = context.get_value_type(numba.types.intp)
            shape = [builder.sext(d, intp) if d.type.width < intp.width else d
                     for d in numba.core.cgutils.unpack_tuple(builder, args[1])]
            strides = []
            step = intp(itemsize)
            for d in reversed(shape):
                strides.append(step)
                step = builder.mul(step, d)
            ptr_t = context.get_data_type(aryty.dtype).as_pointer()
            if isinstance(signature.args[0], numba.types.CPointer):
                data = builder.bitcast(args[0], ptr_t)
            else:
                data = builder.inttoptr(args[0], ptr_t)
            populate_array(ary, data=data, shape=shape, strides=list(reversed(strides)), itemsize=intp(itemsize),
                           meminfo=None)
            return ary._getvalue()

        return sig, codegen

    return view


# view_ro(address or pointer, (n0, ...), np.dtype) / view_rw: the C array there, without a reference
# count (kernels/handle.py rebuilds the tables from one array of addresses with these). The caller
# keeps the memory alive and never lets the view leave the kernel call.
view_ro = _make_view(True)
view_rw = _make_view(False)


@numba.extending.intrinsic
def stack_array(typingctx, n, dtype):
    """A C array of `n` (a compile-time constant) items of `dtype` in the calling function's stack
    frame, uninitialized and without a reference count: scratch that costs no allocation (np.empty
    inside a kernel is an NRT allocation, a measurable share of a call on a short text). The array
    must never leave the function that made it."""
    if not isinstance(n, numba.types.IntegerLiteral) or not isinstance(dtype, numba.types.NumberClass):
        return None
    count = n.literal_value
    aryty = numba.types.Array(dtype.instance_type, 1, "C")
    sig = aryty(n, dtype)

    def codegen(context, builder, signature, args):
        from numba.np.arrayobj import populate_array  # compile time only (~50 ms of imports)

        elem_t = context.get_data_type(aryty.dtype)
        itemsize = context.get_abi_sizeof(elem_t)
        intp = context.get_value_type(numba.types.intp)
        data = numba.core.cgutils.alloca_once(builder, elem_t, size=intp(count))
        ary = context.make_array(aryty)(context, builder)
        populate_array(ary, data=data, shape=[intp(count)], strides=[intp(itemsize)], itemsize=intp(itemsize),
                       meminfo=None)
        return ary._getvalue()

    return sig, codegen


@numba.extending.intrinsic
def fetch_add(typingctx, arr, idx):
    """Atomically add 1 to arr[idx] (int64) and return the old value: the block queue that workers
    of the column kernels take work from."""
    if not (isinstance(arr, numba.types.Array) and arr.dtype == numba.types.int64
            and isinstance(idx, numba.types.Integer)):
        return None
    sig = numba.types.int64(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], signature.args[1], numba.types.intp)
        ptr = numba.core.cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)
        one = context.get_constant(numba.types.int64, 1)
        return builder.atomic_rmw("add", ptr, one, "seq_cst")

    return sig, codegen
