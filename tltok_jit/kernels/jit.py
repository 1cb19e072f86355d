"""The one place kernels get their decorator: cached compilation into a user cache folder keyed by
the package version and a hash of the kernel sources (never inside the installed package), and no
cache when that folder is not writable (numba would otherwise fail at import)."""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import sys
import tempfile

import llvmlite.ir
import numba
import numba.core.caching
import numba.core.cgutils
import numba.core.environment
import numba.core.typing.typeof
import numba.extending
import numpy as np


PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "0.1.0"  # tltok_jit.__version__ (kept here so the kernels never import the front end)


def _kernel_source_hash() -> str:
    """sha256 (first 12 hex digits) of every package source that defines or shapes a kernel: the
    `kernels/` modules and any other module using `njit`. numba checks only the defining file of a
    function, so an edited helper in another module would otherwise load stale machine code."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                data = fh.read()
            if os.path.basename(root) == "kernels" or b"njit" in data:
                h.update(os.path.relpath(path, PACKAGE_DIR).encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:12]


def kernel_cache_root() -> str:
    """The folder holding one compiled-kernel cache per (version, kernel sources):
    $TLTOK_KERNEL_CACHE, else $XDG_CACHE_HOME/tltok_jit/kernels, else ~/.cache/tltok_jit/kernels."""
    d = os.environ.get("TLTOK_KERNEL_CACHE")
    if d:
        return os.path.abspath(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tltok_jit", "kernels")


KERNEL_CACHE_DIR = os.path.join(kernel_cache_root(), f"{VERSION}-{_kernel_source_hash()}")


class _KernelCacheLocator(numba.core.caching.UserProvidedCacheLocator):
    """numba's user-directory locator, pointed at KERNEL_CACHE_DIR and only for this package's files
    (other numba code in the process keeps its own cache)."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(KERNEL_CACHE_DIR, self.get_suitable_cache_subpath(py_file))

    def ensure_cache_path(self):
        # _cache_usable found the folder writable once; numba's own check writes a temporary file
        # for every kernel, at import
        os.makedirs(self.get_cache_path(), exist_ok=True)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(PACKAGE_DIR + os.sep):
            return None
        return numba.core.caching._SourceFileBackedLocatorMixin.from_function.__func__(cls, py_func, py_file)


def _cache_usable() -> bool:
    if os.environ.get("TLTOK_NO_CACHE"):
        return False
    if os.environ.get("NUMBA_CACHE_DIR"):
        return True  # the user chose numba's own cache folder
    try:
        os.makedirs(KERNEL_CACHE_DIR, exist_ok=True)
        with tempfile.TemporaryFile(dir=KERNEL_CACHE_DIR):
            pass
    except OSError:
        return False
    numba.core.caching.CacheImpl._locator_classes.insert(0, _KernelCacheLocator)
    return True


CACHE = _cache_usable()


def _load_overload_lean(self, sig, target_context):
    """numba.core.caching.Cache.load_overload without its registry refresh.

    Before loading a cached kernel, numba refreshes every typing and lowering registry of the CPU
    target (importing most of numba.np / numba.cpython): ~0.35 s of a warm process's start, spent on
    declarations only a compile reads. Loading machine code needs the NRT alone (allocations in the
    kernels; none is a numba parallel loop, so no threading layer is needed). Any
    compile still refreshes in full (numba's CompilerBase does so itself)."""
    from numba.core.runtime import rtsys

    rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)


def _rebuild_env_lean(modname, consts, env_name):
    """numba.core.environment._rebuild_env without importing a numba module that is not imported yet.

    A cached kernel's machine code comes with the environment of every function it was built from,
    numba's own `np.empty` and `len(str)` among them, and numba imports each one's module to hand it
    the module's globals (numba.np.arrayobj alone: ~50 ms of a warm process's start). Only object-mode
    code reads those globals (numba's pylowering); nopython kernels read the constants alone, so a
    module not imported yet gets a stand-in dict."""
    from numba.core.environment import Environment, lookup_environment

    env = lookup_environment(env_name)
    if env is not None:
        return env
    mod = sys.modules.get(modname)
    if mod is None and not (modname or "").startswith("numba."):
        mod = importlib.import_module(modname)
    env = Environment(mod.__dict__ if mod is not None else {"__name__": modname})
    env.consts[:] = consts
    env.env_name = env_name
    Environment._memo[env_name] = env
    return env


def _typeof_plain_ndarray(original):
    """numba's typeof for np.ndarray, skipping its MaskedArray test for exact ndarrays: the test
    reads `np.ma`, which imports numpy.ma (~20 ms) in the first call of any kernel."""
    from numba.core import errors
    from numba.np import numpy_support

    def typeof_ndarray(val, c):
        if type(val) is not np.ndarray:
            return original(val, c)
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except errors.NumbaNotImplementedError:
            return original(val, c)  # its error
        return numba.types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)

    return typeof_ndarray


def _compile_nrt_functions_cached(ctx):
    """numba.core.runtime.nrtdynmod.compile_nrt_functions, its machine code kept in the kernel cache
    folder: numba compiles its runtime's helpers with LLVM in every process that runs a kernel (~35 ms
    of a warm start). Keyed by numba's version and the target (CPU name and features)."""
    import pickle

    from numba.core.runtime import nrtdynmod

    codegen = ctx.codegen()
    key = hashlib.sha1(repr((numba.__version__, codegen.magic_tuple())).encode()).hexdigest()[:16]
    path = os.path.join(KERNEL_CACHE_DIR, f"nrt-{key}.pickle")
    try:
        with open(path, "rb") as f:
            state = pickle.load(f)
    except Exception:  # noqa: BLE001 - absent or damaged: compile it (and save it) below
        state = None
    if state is not None:
        return codegen.unserialize_library(state)
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    try:  # written whole under another name, then renamed: a reader never sees half of it
        fd, tmp = tempfile.mkstemp(dir=KERNEL_CACHE_DIR, prefix=".nrt-")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(_lazy_state(library, library.serialize_using_object_code()), f)
        os.replace(tmp, path)
    except OSError:
        pass
    return library


_LAZY_KIND = "tltok-object"  # numba's "object" kind, plus the defined symbols' names (see _reduce_lazy)


def _reduce_lazy(original):
    """numba's CompileResultCacheImpl.reduce, for this package's kernels only: the library is saved
    with the names of the symbols it defines, under a kind of its own.

    Loading a cached library, numba parses its LLVM bitcode (kept for linking it into a later
    compile) and walks it for those names: ~13 ms of a warm process's start for the two kernels
    and the scanner a first encode loads. With the names saved, the bitcode is parsed only if a
    compile in the process links against the library (_unserialize_lazy). Other numba code in the
    process keeps numba's format (its cache files must load without this package)."""

    def reduce(self, cres):
        payload = original(self, cres)
        if payload[0][1] != "object" or not isinstance(self._locator, _KernelCacheLocator):
            return payload
        return (_lazy_state(cres.library, payload[0]),) + tuple(payload[1:])

    return reduce


def _lazy_state(library, state: tuple) -> tuple:
    """numba's serialized form `state` of `library` ("object" kind), as _reduce_lazy saves it."""
    name, _, (object_code, bitcode) = state
    mod = library._get_module_for_linking()
    names = tuple(sorted({gv.name for gs in (mod.functions, mod.global_variables) for gv in gs
                          if not gv.is_declaration}))
    return name, _LAZY_KIND, (object_code, bitcode, names)


def _unserialize_lazy(original):
    """CPUCodeLibrary._unserialize that also reads _reduce_lazy's kind: the machine code is loaded
    as numba loads it, the defined names are registered from the list, and the bitcode is kept
    unparsed until _get_module_for_linking asks for it."""

    def _unserialize(cls, codegen, state):
        name, kind, data = state
        if kind != _LAZY_KIND:
            return original(codegen, state)
        object_code, shared_bitcode, names = data
        self = codegen.create_library(name)
        self.enable_object_caching()
        self._set_compiled_object(object_code)
        self._tltok_bitcode = shared_bitcode
        self._finalize_final_module()
        codegen._engine._defined_symbols.update(names)
        return self

    return classmethod(_unserialize)


def _module_for_linking_lazy(original):
    def _get_module_for_linking(self):
        bitcode = self.__dict__.pop("_tltok_bitcode", None)
        if bitcode is not None and self._shared_module is None:
            import llvmlite.binding as ll

            self._shared_module = ll.parse_bitcode(bitcode)
        return original(self)

    return _get_module_for_linking


if CACHE and not os.environ.get("NUMBA_CACHE_DIR"):
    from numba.core import codegen as _codegen

    numba.core.caching.CompileResultCacheImpl.reduce = _reduce_lazy(numba.core.caching.CompileResultCacheImpl.reduce)
    _codegen.CPUCodeLibrary._unserialize = _unserialize_lazy(_codegen.CPUCodeLibrary._unserialize)
    _codegen.CPUCodeLibrary._get_module_for_linking = _module_for_linking_lazy(
        _codegen.CPUCodeLibrary._get_module_for_linking)


if not os.environ.get("TLTOK_FULL_REFRESH"):
    numba.core.caching.Cache.load_overload = _load_overload_lean
    if CACHE and not os.environ.get("NUMBA_CACHE_DIR"):
        import numba.core.runtime.nrtdynmod

        numba.core.runtime.nrtdynmod.compile_nrt_functions = _compile_nrt_functions_cached
    numba.core.environment._rebuild_env = _rebuild_env_lean
    _typeof_impl = numba.core.typing.typeof.typeof_impl
    _typeof_impl.register(np.ndarray)(_typeof_plain_ndarray(_typeof_impl.dispatch(np.ndarray)))


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

    return _CompileLock(fn) if CACHE else contextlib.nullcontext()


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
    d = _one_variant(numba.njit(**kwargs)(fn))
    return _shared_compile(d) if CACHE and kwargs.get("cache") else d


def njit(*args, **kwargs):
    """`numba.njit` with `cache=True` (when possible), `nogil=True`, no bounds checks, one variant
    per non-literal argument types (_one_variant), and each kernel loaded or compiled under its
    cross-process lock (_CompileLock)."""
    kwargs.setdefault("cache", CACHE)
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
