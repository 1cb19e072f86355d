"""First contact: what a new user meets right after installing, measured as they would meet it.

    python bench/cold_start.py                                   # table on stdout
    python bench/cold_start.py --out bench/results/cold-start.md --mb 96

Every step runs in a new virtual environment made for this run, in fresh processes whose HOME,
XDG cache and kernel cache folders start empty (nothing of this machine's own caches is seen):

  install   `pip install <clone>` of a clean `git clone` of HEAD (the kernels' compile included),
            then tiktoken into the same venv (not timed)
  first     import + get_encoding("o200k_base").encode("hello") in a new process; tiktoken the same
            (its rank file from ../shared, as a cached download would give it)
  letters   1 MB of random letters without a space, encoded in the first process of a model
            (o200k_base, Llama-3's tokenizer.json, llama2.model): the call alone
  cli       `tltok encode` of ~MB of ~1.5 KB documents (Parquet) right after install, then the same
            command again; tiktoken + pyarrow doing the same job (2 threads) in the same run
  compiled  kernels any of these processes compiled (machine code in the user kernel folders)

Pass --pip-args to add pip options (an index, --no-index --find-links, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BENCH_SHARED") or REPO.parent / "shared")
TOK = SHARED / "tokenizers"

_LETTERS = ("import random, string; random.seed(7); "
            "LETTERS = ''.join(random.choices(string.ascii_letters, k=1_000_000))")
_TIKTOKEN_O200K = f"""
import tiktoken, tiktoken.load, tiktoken_ext.openai_public as op
op.load_tiktoken_bpe = lambda *a, **k: tiktoken.load.load_tiktoken_bpe({str(TOK / 'tiktoken' / 'o200k_base.tiktoken')!r})
enc = tiktoken.Encoding(**op.o200k_base())
"""
FIRST = {
    "tltok_jit o200k_base": "import tltok_jit\ntltok_jit.get_encoding('o200k_base').encode('hello')",
    "tiktoken o200k_base": _TIKTOKEN_O200K + "enc.encode('hello')",
}
LETTERS = {
    "o200k_base": "import tltok_jit\nenc = tltok_jit.get_encoding('o200k_base')",
    "Llama-3 tokenizer.json": f"import tltok_jit\nenc = tltok_jit.from_file({str(TOK / 'llama3' / 'tokenizer.json')!r})",
    "llama2.model (SentencePiece)": ("import tltok_jit\nenc = tltok_jit.build_tokenizer(tltok_jit.TokenizerSpec("
                                     f"'sentencepiece', {{'model': {str(TOK / 'sentencepiece' / 'llama2.model')!r}}}))"),
}
_TIKTOKEN_JOB = _TIKTOKEN_O200K + """
import sys, pyarrow as pa, pyarrow.parquet as pq
writer = None
for b in pq.ParquetFile(sys.argv[1]).iter_batches(batch_size=4096, columns=["text"]):
    ids = enc.encode_ordinary_batch([t or "" for t in b.column(0).to_pylist()], num_threads=2)
    tb = pa.table({"tokens": pa.array(ids, type=pa.list_(pa.uint32()))})
    writer = writer or pq.ParquetWriter(sys.argv[2], tb.schema)
    writer.write_table(tb)
writer.close()
"""


def _fresh_env(venv: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TLTOK_", "NUMBA_", "PYTHON", "VIRTUAL_ENV"))}
    for d in ("home", "xdg", "kernels"):
        (home / d).mkdir(parents=True, exist_ok=True)
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               HOME=str(home / "home"), XDG_CACHE_HOME=str(home / "xdg"), TLTOK_KERNEL_CACHE=str(home / "kernels"),
               TLTOK_OFFLINE="1", TIKTOKEN_CACHE_DIR="")
    return env


def _run(args: list, env: dict, cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run([str(a) for a in args], env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{args} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return wall, p.stdout + p.stderr


def _compiled_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.nbi"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--mb", type=float, default=96.0, help="MB of text the cli step encodes")
    ap.add_argument("--pip-args", default="", help="extra pip options, space-separated")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = ap.parse_args()
    py = Path(sys.executable)
    work = args.keep or Path(tempfile.mkdtemp(prefix="tltok-cold-"))
    work.mkdir(parents=True, exist_ok=True)
    pip_extra = args.pip_args.split()
    rows: list[tuple[str, str, str]] = []
    homes: list[Path] = []

    def home(name: str) -> Path:
        h = work / "homes" / name
        shutil.rmtree(h, ignore_errors=True)
        homes.append(h)
        return h

    try:
        clone = work / "clone"
        shutil.rmtree(clone, ignore_errors=True)
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True)
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True,
                              text=True).stdout.strip()
        venv = work / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([py, "-m", "venv", venv], check=True)
        vpy = venv / "bin" / "python"
        env = _fresh_env(venv, home("install"))
        env.pop("TLTOK_OFFLINE")
        t_install, _ = _run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip_extra,
                             clone], env, work)
        rows.append(("install", f"`pip install` of a clean clone ({head}), compile included", f"{t_install:.1f} s"))
        _run([vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip_extra, "tiktoken==0.14.0"],
             env, work)
        site = subprocess.run([vpy, "-c", "import tltok_jit, os; print(os.path.dirname(tltok_jit.__file__))"],
                              env=env, capture_output=True, text=True, cwd=work).stdout.strip()
        wheel_mb = sum(f.stat().st_size for f in Path(site).rglob("*") if f.is_file()) / 1e6
        rows.append(("install", "installed package size (compiled kernels included)", f"{wheel_mb:.1f} MB"))

        for name, code in FIRST.items():
            t, _ = _run([vpy, "-c", code], _fresh_env(venv, home("first-" + name.split()[0])), work)
            rows.append(("first", f"{name}: import + load + encode('hello'), new process", f"{t:.2f} s"))

        for name, load in LETTERS.items():
            if not _model_present(load):
                rows.append(("letters", name, "skipped (file not in ../shared)"))
                continue
            code = (f"{_LETTERS}\nimport time\nt0 = time.perf_counter()\n{load}\nt1 = time.perf_counter()\n"
                    "n = len(enc.encode(LETTERS))\nt2 = time.perf_counter()\n"
                    "print(json.dumps({'load': t1 - t0, 'encode': t2 - t1, 'ids': n}))")
            _, out = _run([vpy, "-c", "import json\n" + code], _fresh_env(venv, home("letters-" + name.split()[0])),
                          work)
            r = json.loads(out.strip().splitlines()[-1])
            rows.append(("letters", f"{name}: 1 MB of letters, first process ({r['ids']:,} ids; load "
                                    f"{r['load']:.2f} s)", f"{r['encode'] * 1e3:.0f} ms"))

        sys.path.insert(0, str(REPO))
        from bench.bench_e2e import make_input, text_mb

        docs = work / "docs.parquet"
        if not docs.exists():
            make_input(docs, "mixed", args.mb)
        mb, n_docs = text_mb(docs)
        h = home("cli")
        cli_env = _fresh_env(venv, h)
        t_first, out_first = _run(["tltok", "encode", docs, "-o", work / "tokens.parquet", "--overwrite"], cli_env,
                                  work)
        t_again, _ = _run(["tltok", "encode", docs, "-o", work / "tokens.parquet", "--overwrite"], cli_env, work)
        t_tk, _ = _run([vpy, "-c", _TIKTOKEN_JOB, docs, work / "tiktoken.parquet"], _fresh_env(venv, home("tk")), work)
        path = out_first.strip().splitlines()[-1]
        rows.append(("cli", f"`tltok encode` of {mb:.0f} MB ({n_docs:,} documents), first run after install",
                     f"{t_first:.1f} s ({mb / t_first:.1f} MB/s)"))
        rows.append(("cli", "the same command again", f"{t_again:.1f} s ({mb / t_again:.1f} MB/s); first / again "
                                                      f"{t_first / t_again:.2f}"))
        rows.append(("cli", "tiktoken + pyarrow, the same job (2 threads)",
                     f"{t_tk:.1f} s ({mb / t_tk:.1f} MB/s); ours first run {t_tk / t_first:.1f}x faster"))
        rows.append(("cli", "first run's summary line", path.replace("|", "/")))
        compiled = [f for h in homes for f in _compiled_files(h)]
        rows.append(("compiled", "kernels compiled by any process above", str(len(compiled)) +
                     (": " + ", ".join(compiled[:5]) if compiled else "")))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    lines = ["| step | what | measured |", "|---|---|---:|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    text = (f"# Cold start ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)\n\n"
            f"`python bench/cold_start.py --mb {args.mb:g}`: a new venv, empty caches, a clean clone of HEAD.\n\n"
            + "\n".join(lines) + "\n")
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def _model_present(load: str) -> bool:
    import re

    return all(Path(p).exists() for p in re.findall(r"'(/[^']+)'", load))


if __name__ == "__main__":
    sys.exit(main())
