"""The one module where this package meets numba's internals: its kernels' machine code on disk.

Each kernel's dispatcher (and each scanner's C callback) gets a `KernelCache` of its own; numba's
module-level machinery is left as it is, so other numba code in the process keeps numba's behaviour
and its own caches. A `KernelCache` looks in two folders, in order:

    shipped  `tltok_jit/compiled/`: every kernel, compiled when the package was built (setup.py runs
             `tltok_jit.compile.build_kernels`) for a portable CPU baseline (`BASELINE_CPU`). Read-only. Used
             when its manifest matches this process: the kernel sources, numba, llvmlite and Python it
             was built with, and a CPU that has every feature of the baseline.
    user     `$TLTOK_KERNEL_CACHE`, else `$NUMBA_CACHE_DIR/tltok_jit`, else
             `$XDG_CACHE_HOME/tltok_jit/kernels`, else `~/.cache/tltok_jit/kernels`; one folder per package
             version and kernel sources. What this machine compiled itself (another numba, edited
             sources, a CPU below the baseline). New machine code is only ever written here.

Both folders name a kernel's files by its module's path inside the package (not by the absolute
path of the installation, as numba does) and stamp them with the hash of the kernel sources (not
the source file's mtime, which an installer does not keep), so a build's files are valid wherever
the package is installed (module_subpath). Loading skips numba's registry refresh and its import of every module a
kernel's environment names, and keeps a loaded library's LLVM bitcode unparsed until a compile
links against it (each of these was a measurable share of a warm process's start).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import pickle
import sys
import tempfile
import types

import numba
import numba.core.caching
import numba.core.environment
import numba.core.serialize

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "0.1.0"  # tltok_jit.__version__ (kept here so the kernels never import the front end)
SHIPPED_DIR = os.path.join(PACKAGE_DIR, "compiled")
MANIFEST = "manifest.json"

# The CPU the shipped machine code is compiled for, and the LLVM features a CPU needs to run it
# (x86-64-v3: Haswell, Zen 1 and later). On other architectures nothing is shipped yet.
BASELINE_CPU = "x86-64-v3"
BASELINE_FEATURES = ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3",
                     "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")


def kernel_source_hash(package_dir: str = PACKAGE_DIR) -> str:
    """sha256 (first 12 hex digits) of every package source that defines or shapes a kernel: the
    `kernels/` modules and any other module using `njit`. numba checks only the defining file of a
    function, so an edited helper in another module would otherwise load stale machine code."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                data = fh.read()
            if os.path.basename(root) == "kernels" or b"njit" in data:
                h.update(os.path.relpath(path, package_dir).encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:12]


SOURCE_HASH = kernel_source_hash()


def kernel_cache_root() -> str:
    """The folder holding one user kernel cache per (version, kernel sources)."""
    d = os.environ.get("TLTOK_KERNEL_CACHE")
    if d:
        return os.path.abspath(d)
    d = os.environ.get("NUMBA_CACHE_DIR")
    if d:  # where the user keeps numba's caches (often the one writable place in a container)
        return os.path.join(os.path.abspath(d), "tltok_jit")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tltok_jit", "kernels")


KERNEL_CACHE_DIR = os.path.join(kernel_cache_root(), f"{VERSION}-{SOURCE_HASH}")


def _user_cache_usable() -> bool:
    if os.environ.get("TLTOK_NO_CACHE"):
        return False
    try:
        os.makedirs(KERNEL_CACHE_DIR, exist_ok=True)
        with tempfile.TemporaryFile(dir=KERNEL_CACHE_DIR):
            pass
    except OSError:
        return False
    return True


USER_CACHE = _user_cache_usable()


# ----------------------------------------------------------------------------------------------
# The shipped folder's manifest
# ----------------------------------------------------------------------------------------------

def host_features() -> frozenset[str]:
    """The LLVM feature names this CPU has."""
    import llvmlite.binding as ll

    return frozenset(k for k, on in ll.get_host_cpu_features().items() if on)


def build_identity() -> dict:
    """What shipped machine code must have been built with to run in this process."""
    import llvmlite

    return {"source_hash": SOURCE_HASH, "version": VERSION, "numba": numba.__version__,
            "llvmlite": llvmlite.__version__, "python": list(sys.version_info[:2]),
            "abiflags": getattr(sys, "abiflags", ""), "machine": _machine()}


def _machine() -> str:
    import platform

    return platform.machine().lower()


def read_manifest(folder: str = SHIPPED_DIR) -> dict | None:
    try:
        with open(os.path.join(folder, MANIFEST)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def shipped_status(folder: str = SHIPPED_DIR) -> tuple[bool, str]:
    """(usable, why): whether this process can run the machine code in `folder`, and if not, why."""
    if os.environ.get("TLTOK_NO_SHIPPED_KERNELS"):
        return False, "TLTOK_NO_SHIPPED_KERNELS is set"
    m = read_manifest(folder)
    if m is None:
        return False, "this installation carries no compiled kernels (an editable or source install)"
    ident = build_identity()
    for k, v in ident.items():
        if m.get(k) != v:
            return False, f"the compiled kernels were built for {k} {m.get(k)!r}, this process has {v!r}"
    missing = sorted(set(m.get("features", ())) - host_features())
    if missing:
        return False, f"this CPU lacks {', '.join(missing)} ({m.get('cpu')} baseline of the compiled kernels)"
    return True, f"compiled kernels for {m.get('cpu')}"


SHIPPED, SHIPPED_WHY = shipped_status()
_SHIPPED_MAGIC = tuple(read_manifest()["magic"]) if SHIPPED else None

# ----------------------------------------------------------------------------------------------
# KernelCache
# ----------------------------------------------------------------------------------------------

_LAZY_KIND = "tltok-object"  # numba's "object" kind, plus the defined symbols' names


class _Folder(types.SimpleNamespace):
    """One folder of machine code: its root, and the target tuple its index keys carry (None: this
    process's own)."""


FOLDERS = []
if SHIPPED:
    FOLDERS.append(_Folder(root=SHIPPED_DIR, magic=_SHIPPED_MAGIC, writable=False))
if USER_CACHE:
    FOLDERS.append(_Folder(root=KERNEL_CACHE_DIR, magic=None, writable=True))
ENABLED = bool(FOLDERS)


def module_subpath(py_file: str) -> tuple[str, object]:
    """A kernel module's folder inside a cache and the stamp its entries must carry: its path in
    the package ("kernels.encode") and the kernel sources' hash; for a module outside the package
    (a user's own kernels built on ours), its folder's path hashed and the file's mtime and size,
    as numba's own cache does."""
    path = os.path.abspath(py_file)
    if path.startswith(PACKAGE_DIR + os.sep):
        return os.path.splitext(os.path.relpath(path, PACKAGE_DIR))[0].replace(os.sep, "."), SOURCE_HASH
    st = os.stat(path)
    folder = hashlib.sha1(os.path.dirname(path).encode()).hexdigest()[:12]
    return f"outside.{os.path.splitext(os.path.basename(path))[0]}-{folder}", (st.st_mtime, st.st_size)


class _Impl(numba.core.caching.CompileResultCacheImpl):
    """numba's CompileResultCacheImpl without a locator (the folders are ours), saving the names of
    the symbols a library defines beside its machine code, so loading it never parses its bitcode."""

    def __init__(self, py_func):
        self._lineno = py_func.__code__.co_firstlineno
        source = inspect.getfile(py_func)
        self._locator = types.SimpleNamespace(_py_file=source)  # read by numba's can't-cache warning
        modname = os.path.splitext(os.path.basename(source))[0]
        qualname = getattr(py_func, "__qualname__", py_func.__name__)
        fullname = f"{modname}.{qualname}".replace("<", "").replace(">", "")
        self._filename_base = (f"{fullname}-{self._lineno}.py{sys.version_info[0]}{sys.version_info[1]}"
                               f"{getattr(sys, 'abiflags', '')}")
        self.subpath, self.stamp = module_subpath(source)

    def reduce(self, cres):
        payload = super().reduce(cres)
        if payload[0][1] != "object":
            return payload
        return (_lazy_state(cres.library, payload[0]),) + tuple(payload[1:])

    def rebuild(self, target_context, payload):
        """numba's CompileResult._rebuild, with the library unserialized by _unserialize."""
        from numba.core.compiler import CompileResult

        libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init, referenced_envs = payload
        for fn in reload_init or ():
            fn()
        library = _unserialize(target_context.codegen(), libdata)
        cr = CompileResult(target_context=target_context, typing_context=target_context.typing_context,
                           library=library, environment=env,
                           entry_point=target_context.get_executable(library, fndesc, env), fndesc=fndesc,
                           type_annotation=typeann, signature=signature, objectmode=objectmode, lifted=lifted,
                           typing_error=None, call_helper=None, metadata=None, reload_init=reload_init,
                           referenced_envs=referenced_envs)
        for e in referenced_envs:
            library.codegen.set_env(e.env_name, e)
        return cr


def _lazy_state(library, state: tuple) -> tuple:
    """numba's serialized form `state` of `library` ("object" kind), with the defined names."""
    name, _, (object_code, bitcode) = state
    mod = library._get_module_for_linking()
    names = tuple(sorted({gv.name for gs in (mod.functions, mod.global_variables) for gv in gs
                          if not gv.is_declaration}))
    return name, _LAZY_KIND, (object_code, bitcode, names)


def _lazy_library_class(base):
    class LazyLibrary(base):
        """A library loaded from the kernel cache whose bitcode is parsed only if a compile in this
        process links against it."""

        def _get_module_for_linking(self):
            bitcode = self.__dict__.pop("_tltok_bitcode", None)
            if bitcode is not None and self._shared_module is None:
                import llvmlite.binding as ll

                self._shared_module = ll.parse_bitcode(bitcode)
            return super()._get_module_for_linking()

    return LazyLibrary


_lazy_classes: dict = {}


def _unserialize(codegen, state):
    name, kind, data = state
    if kind != _LAZY_KIND:
        return codegen.unserialize_library(state)
    object_code, shared_bitcode, names = data
    lib = codegen.create_library(name)
    cls = type(lib)
    lib.__class__ = _lazy_classes.setdefault(cls, _lazy_library_class(cls))
    lib.enable_object_caching()
    lib._set_compiled_object(object_code)
    lib._tltok_bitcode = shared_bitcode
    lib._finalize_final_module()
    codegen._engine._defined_symbols.update(names)
    return lib


def _rebuild_env_lean(modname, consts, env_name):
    """numba.core.environment._rebuild_env without importing a numba module that is not imported yet.

    A cached kernel's machine code comes with the environment of every function it was built from,
    numba's own `np.empty` and `len(str)` among them, and numba imports each one's module to hand it
    the module's globals (numba.np.arrayobj alone: ~50 ms). Only object-mode code reads those
    globals; nopython kernels read the constants alone, so a module not imported yet gets a stand-in."""
    import importlib

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


@contextlib.contextmanager
def _swapped(owner, name, value):
    """owner.name = value for the block. Used only under numba's global compiler lock (every load
    and compile holds it), so no other thread's numba code sees the swap."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def _nrt_path(folder: _Folder, codegen) -> str:
    magic = folder.magic or codegen.magic_tuple()
    key = hashlib.sha1(repr((numba.__version__, tuple(magic))).encode()).hexdigest()[:16]
    return os.path.join(folder.root, f"nrt-{key}.pickle")


def _compile_nrt_functions_cached(ctx):
    """numba's compile_nrt_functions with its machine code kept in the kernel folders: numba compiles
    its runtime's helpers with LLVM in every process that runs a kernel (~35 ms)."""
    from numba.core.runtime import nrtdynmod

    codegen = ctx.codegen()
    for folder in FOLDERS:
        try:
            with open(_nrt_path(folder, codegen), "rb") as f:
                return _unserialize(codegen, pickle.load(f))
        except Exception:  # noqa: BLE001 - absent or damaged: the next folder, else compile below
            continue
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    for folder in FOLDERS:
        if folder.writable:
            _write_whole(_nrt_path(folder, codegen),
                         pickle.dumps(_lazy_state(library, library.serialize_using_object_code())))
    return library


def _write_whole(path: str, data: bytes) -> None:
    """Write under another name, then rename: a reader never sees half of the file."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass


def initialize_runtime(target_context) -> None:
    """numba's runtime initialization, its helpers loaded from the kernel folders when there."""
    from numba.core.runtime import nrtdynmod, rtsys

    if rtsys._init:
        return
    with _swapped(nrtdynmod, "compile_nrt_functions", _compile_nrt_functions_cached):
        rtsys.initialize(target_context)


class KernelCache(numba.core.caching._Cache):
    """The on-disk cache of one kernel: the shipped folder, then the user folder (see the module)."""

    def __init__(self, py_func):
        self._name = repr(py_func)
        self._py_func = py_func
        self._impl = _Impl(py_func)
        self._files = [(folder, numba.core.caching.IndexDataCacheFile(
            cache_path=os.path.join(folder.root, self._impl.subpath), filename_base=self._impl.filename_base,
            source_stamp=self._impl.stamp)) for folder in FOLDERS]
        self._enabled = True

    def __repr__(self):
        return f"<KernelCache py_func={self._name}>"

    @property
    def cache_path(self):
        return self._files[-1][1]._cache_path if self._files else None

    def enable(self):
        self._enabled = True

    def disable(self):
        self._enabled = False

    def flush(self):
        for folder, f in self._files:
            if folder.writable:
                f.flush()

    def _index_key(self, sig, magic):
        code = self._py_func.__code__.co_code
        cvars = b""
        if self._py_func.__closure__ is not None:
            cvars = numba.core.serialize.dumps(tuple(c.cell_contents for c in self._py_func.__closure__))
        return (sig, tuple(magic), (hashlib.sha256(code).hexdigest(), hashlib.sha256(cvars).hexdigest()))

    def load_overload(self, sig, target_context):
        """The compiled kernel for `sig` from the first folder that has it, or None. numba refreshes
        its typing and lowering registries first (~0.35 s, for declarations only a compile reads):
        loading machine code needs the runtime alone, and any compile still refreshes in full."""
        if not self._enabled:
            return None
        initialize_runtime(target_context)
        codegen = target_context.codegen()
        for folder, f in self._files:
            key = self._index_key(sig, folder.magic or codegen.magic_tuple())
            try:
                with _swapped(numba.core.environment, "_rebuild_env", _rebuild_env_lean):
                    data = f.load(key)
                    if data is not None:
                        return self._impl.rebuild(target_context, data)
            except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
                continue  # a damaged entry is a miss: compiled (and saved) again
        return None

    def save_overload(self, sig, data):
        if not self._enabled or not self._impl.check_cachable(data):
            return
        for folder, f in self._files:
            if folder.writable:
                try:
                    os.makedirs(f._cache_path, exist_ok=True)
                    f.save(self._index_key(sig, data.codegen.magic_tuple()), self._impl.reduce(data))
                except OSError:
                    pass  # the folder went away or became read-only: the kernel stays in this process


def cached_dispatcher(dispatcher):
    """Give a numba dispatcher made with cache=False this package's KernelCache."""
    if ENABLED:
        dispatcher._cache = KernelCache(dispatcher.py_func)
    return dispatcher


def cached_cfunc(sig, py_func, **options):
    """numba.cfunc(sig, **options)(py_func), loaded from / saved to the kernel folders."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    cf = CFunc(py_func, sigutils.normalize_signature(sig), locals={}, options=options)
    if ENABLED:
        cf._cache = KernelCache(py_func)
    cf.compile()
    return cf
