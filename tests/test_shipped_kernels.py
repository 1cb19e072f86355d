"""The kernels compiled when the package is built: used without compiling, only where they fit, and
without changing numba for anyone else in the process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numba.core.caching
import numba.core.environment
import pytest

from tltok_jit.kernels import numba_cache

REPO = Path(__file__).resolve().parent.parent
needs_shipped = pytest.mark.skipif(not numba_cache.SHIPPED, reason=f"no usable shipped kernels here: "
                                   f"{numba_cache.SHIPPED_WHY} (build them: pip install -e .)")


def _env(kernels: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TLTOK_", "NUMBA_"))}
    env.update(TLTOK_KERNEL_CACHE=str(kernels), XDG_CACHE_HOME=str(kernels.parent / "xdg"),
               TLTOK_DATA=os.environ.get("TLTOK_DATA", ""), TLTOK_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return env


def _compiled(kernels: Path) -> list[str]:
    return sorted(str(p.relative_to(kernels)) for p in kernels.rglob("*.nbi"))


JOB = """
import pyarrow as pa, tltok_jit
from tltok_jit.kernels import numba_cache
assert numba_cache.SHIPPED, numba_cache.SHIPPED_WHY
texts = ["Hello world, it's 2024!", "日本語のテキスト。 🙂", "  spaces\\tand\\r\\n", "x" * 5000, None]
for name in ("r50k_base", "cl100k_base", "o200k_base"):
    enc = tltok_jit.get_encoding(name)
    ids = enc.encode("hello world 日本 🙂", allowed_special="all")
    assert enc.decode(ids) == "hello world 日本 🙂"
    enc.encode_batch([t or "" for t in texts], num_threads=2)
    col = enc.encode_arrow(pa.array(texts), num_threads=2)
    enc.count_arrow(pa.array(texts), num_threads=1)
    enc.decode_arrow(col, num_threads=2)
    enc.encode("abc" * 400_000)
    assert len(enc.encode(" a" * 600_000)) == 600_000  # a long list: filled by its own kernel
    d = tltok_jit.StreamDecoder(enc)
    for i in ids:
        d.push(i)
    d.finish()
print("ok")
"""


@needs_shipped
def test_a_real_job_on_empty_caches_compiles_nothing(tmp_path):
    kernels = tmp_path / "kernels"
    p = subprocess.run([sys.executable, "-c", JOB], env=_env(kernels), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _compiled(kernels) == []
    # o200k_base's tables come from the package too: only r50k_base's and cl100k_base's were built
    assert len(list(kernels.glob("*/tables/*"))) == 2, list(kernels.glob("*/tables/*"))


@needs_shipped
def test_a_tokenizer_json_job_compiles_nothing(tmp_path, shared_path):
    files = [shared_path(f"tokenizers/{m}/tokenizer.json") for m in ("llama3", "mistral-7b", "qwen2.5")]
    code = textwrap.dedent(f"""
        import pyarrow as pa, tltok_jit
        for f in {[str(f) for f in files]!r}:
            enc = tltok_jit.from_file(f)
            enc.decode(enc.encode("Hello wörld 日本 🙂 1234", allowed_special="all"))
            enc.encode_batch(["a b", "c 日本"] * 20, num_threads=2)
            enc.encode_arrow(pa.array(["a b", None, "ünï"]), num_threads=2)
    """)
    kernels = tmp_path / "kernels"
    p = subprocess.run([sys.executable, "-c", code], env=_env(kernels), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _compiled(kernels) == []


@needs_shipped
def test_a_sentencepiece_job_compiles_nothing(tmp_path, shared_path):
    files = [shared_path(f"tokenizers/sentencepiece/{m}") for m in ("llama2.model", "botchan_en_unigram_1000.model")]
    code = textwrap.dedent(f"""
        import pyarrow as pa, tltok_jit
        for f in {[str(f) for f in files]!r}:
            tok = tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("sentencepiece", {{"model": f}}))
            tok.decode(tok.encode("Hello wörld 日本 🙂 1234"))
            assert len(tok.encode("abcdefghij" * 100_000)) > 50_000  # a long list, filled by its own kernel
            tok.encode_arrow(pa.array(["a b", None, "ünï"]), num_threads=2)
    """)
    kernels = tmp_path / "kernels"
    p = subprocess.run([sys.executable, "-c", code], env=_env(kernels), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _compiled(kernels) == []


@needs_shipped
def test_a_wordpiece_and_packing_job_compiles_nothing(tmp_path, shared_path):
    path = shared_path("tokenizers/minilm/tokenizer.json")
    code = textwrap.dedent(f"""
        import pyarrow as pa, tltok_jit
        from tltok_jit.packing import pack
        tok = tltok_jit.from_file({str(path)!r})
        texts = ["Hello wörld 日本 🙂 1234", "", "a b c " * 300]
        tok.decode(tok.encode(texts[0], add_special_tokens=True))
        tok.encode_batch(texts)
        tok.encode_batch_padded(texts, truncation=True, max_length=16, padding="max_length")
        col = tok.encode_arrow(pa.array(texts + [None]), num_threads=2)
        tok.count_arrow(pa.array(texts), num_threads=1)
        for strategy in ("bfd", "concat", "pad"):
            pack(col.drop_null(), 64, strategy=strategy, eos_id=102)
    """)
    kernels = tmp_path / "kernels"
    p = subprocess.run([sys.executable, "-c", code], env=_env(kernels), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _compiled(kernels) == []


@needs_shipped
def test_ray_actors_on_empty_caches_compile_nothing(tmp_path):
    """Two actors of a real local cluster, each process with an empty kernel folder: the package's
    kernels serve them."""
    pytest.importorskip("ray.data", reason="ray is not installed (pip install 'ray[data]', the `ray` extra)")
    kernels = tmp_path / "kernels"
    code = textwrap.dedent(f"""
        import os, ray, pyarrow as pa, tltok_jit
        from tltok_jit import ray as tray
        # four logical CPUs: two actors and a slot for Ray Data's own tasks (the machine may have two)
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env={{"env_vars": {{"TLTOK_KERNEL_CACHE": {str(kernels)!r}}}}})
        ray.data.DataContext.get_current().enable_progress_bars = False
        texts = [f"document {{i}} ünï 日本" for i in range(400)]
        ds = ray.data.from_arrow(pa.table({{"text": texts}})).repartition(4)
        out = tray.tokenize_dataset(ds, encoding="o200k_base", concurrency=2, batch_size=50).take_all()
        enc = tltok_jit.get_encoding("o200k_base")
        assert sorted(r["tokens"] for r in out) == sorted(enc.encode_batch(texts))
        pids = ray.get([ray.remote(lambda: os.getpid()).remote() for _ in range(2)])
        ray.shutdown()
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], env=_env(kernels), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert _compiled(kernels) == []


def _doctored(tmp_path, **change) -> Path:
    d = tmp_path / "compiled"
    d.mkdir(parents=True)
    m = numba_cache.build_identity()
    m.update(cpu=numba_cache.BASELINE_CPU, features=list(numba_cache.BASELINE_FEATURES), magic=["t", "c", ""])
    m.update(change)
    (d / numba_cache.MANIFEST).write_text(json.dumps(m))
    return d


def test_shipped_kernels_are_used_only_where_they_fit(tmp_path, monkeypatch):
    monkeypatch.delenv("TLTOK_NO_SHIPPED_KERNELS", raising=False)
    fits = set(numba_cache.BASELINE_FEATURES) <= numba_cache.host_features()
    assert numba_cache.shipped_status(_doctored(tmp_path / "a"))[0] == fits
    ok, why = numba_cache.shipped_status(_doctored(tmp_path / "b", numba="0.1.0"))
    assert not ok and "numba '0.1.0'" in why
    ok, why = numba_cache.shipped_status(_doctored(tmp_path / "c", source_hash="000000000000"))
    assert not ok and "source_hash" in why
    ok, why = numba_cache.shipped_status(_doctored(tmp_path / "d", features=["avx2", "no-such-feature"]))
    assert not ok and "lacks no-such-feature" in why
    ok, why = numba_cache.shipped_status(tmp_path / "absent")
    assert not ok and "no compiled kernels" in why
    monkeypatch.setenv("TLTOK_NO_SHIPPED_KERNELS", "1")
    assert not numba_cache.shipped_status(_doctored(tmp_path / "e"))[0]


def test_other_numba_code_keeps_numbas_own_behaviour(tmp_path):
    """Loading and compiling this package's kernels leaves numba's module-level machinery as it is;
    a user's own cached function caches where numba puts it."""
    import tltok_jit

    tltok_jit.get_encoding("r50k_base").encode("load some kernels")
    assert numba.core.caching.CacheImpl._locator_classes[0] is numba.core.caching.UserProvidedCacheLocator
    assert numba.core.caching.Cache.load_overload.__module__ == "numba.core.caching"
    assert numba.core.caching.CompileResultCacheImpl.reduce.__module__ == "numba.core.caching"
    assert numba.core.environment._rebuild_env.__module__ == "numba.core.environment"
    mod = tmp_path / "user_mod.py"
    mod.write_text("import numba\n@numba.njit(cache=True)\ndef f(x):\n    return x + 1\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import tltok_jit, user_mod; print(user_mod.f(1))"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "2", p.stderr
    assert list((tmp_path / "__pycache__").glob("user_mod.f-*.nbi"))


def test_the_kernel_source_hash_names_what_the_build_compiled(tmp_path):
    """A copy of the package has the same hash; an edited kernel module another."""
    copy = tmp_path / "tltok_jit"
    shutil.copytree(numba_cache.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "compiled"))
    assert numba_cache.kernel_source_hash(str(copy)) == numba_cache.SOURCE_HASH
    with open(copy / "kernels" / "decode.py", "a") as f:
        f.write("\n# edited\n")
    assert numba_cache.kernel_source_hash(str(copy)) != numba_cache.SOURCE_HASH
