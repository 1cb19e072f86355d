"""Where the kernels spend a call's time, sampled: `perf record` (a timer event, so it works in VMs
without hardware counters) over a loop of calls, with the JIT kernels named.

    python bench/perf_kernels.py o200k_base english                 # 100 calls, text seen
    python bench/perf_kernels.py o200k_base scripts --unseen --calls 400
    python bench/perf_kernels.py o200k_base chinese --unseen --hot merge_by_chars_at

numba's machine code has no symbols perf can see. The loop process keeps a copy of every object file
numba loads (kernels/jit.py loads the cached kernels through `_set_compiled_object`), lists their
functions with `nm` and writes /tmp/perf-<pid>.map, which `perf report` reads. perf samples the loop
only (the loop switches it on and off through `perf record --control`). Printed: the share of
samples per function, and with --hot FUNC the function's hottest instructions (offsets into its object file, the
instructions before each from `objdump`): a sample lands on the instruction after the one it waited
for, or after a miss the CPU could not hide. --unseen empties the piece cache before each call (every
piece merged again, the tables warm in the CPU caches, as bench/unseen.py; the emptying shows as
numpy's fill). Needs Linux `perf`, `nm` and `objdump`.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import data, oracle  # noqa: E402


def readable(symbol: str) -> str:
    """module.function of a numba-mangled tltok_jit symbol (`_ZN9tltok_jit7kernels5merge11merge_piece...`
    -> `merge.merge_piece`); any other symbol as it is."""
    i = symbol.find("_ZN")
    if i < 0:
        return symbol
    s = symbol[i + 3:]
    if s.startswith("7cpython"):
        s = s[8:]
    parts = []
    while s and s[0].isdigit():
        k = re.match(r"\d+", s).group()
        n = int(k)
        parts.append(s[len(k):len(k) + n])
        s = s[len(k) + n:]
    if parts[:2] == ["tltok_jit", "kernels"]:
        parts = parts[2:]
    elif parts[:1] == ["tltok_jit"]:
        parts = parts[1:]
    return ".".join(parts) or symbol


# ------------------------------------------------------------------------------------------------
# the loop, run under perf
# ------------------------------------------------------------------------------------------------

def _child(a: argparse.Namespace) -> None:
    import numba.core.codegen as cg

    objects = []
    original = cg.CPUCodeLibrary._set_compiled_object

    def keep(self, value):
        objects.append((self, bytes(value)))
        return original(self, value)

    cg.CPUCodeLibrary._set_compiled_object = keep
    os.environ["TLTOK_COMPILE"] = "foreground"  # the kernels, never the Python encoder meanwhile
    import tltok_jit
    from tltok_jit.kernels.cache import empty_cache

    enc = tltok_jit.get_encoding(a.encoding)
    warm = data.warmup_text()
    for _ in range(2):
        enc.encode_to_numpy(warm, num_threads=a.threads)
    text = data.corpus(a.corpus)
    cache = enc.engine.serial_workspace()[0] if a.threads == 1 else enc.engine.parallel_workspace(a.threads)[0]
    call = enc.encode_ordinary if a.list else enc.encode_ordinary_to_numpy
    call(text, num_threads=a.threads)
    _perf_control(a.objects, "enable")
    t0 = time.perf_counter()
    for _ in range(a.calls):
        if a.unseen:
            empty_cache(cache)
        call(text, num_threads=a.threads)
    per_call = (time.perf_counter() - t0) / a.calls
    _perf_control(a.objects, "disable")
    _write_map(objects, Path(a.objects))
    print(f"@@{os.getpid()} {per_call}", flush=True)


def _perf_control(folder: str, command: str) -> None:
    """Tell perf record (started with its events off, --control on two FIFOs in `folder`) to start or
    stop sampling, and wait until it has."""
    with open(os.path.join(folder, "ctl"), "w") as ctl:
        ctl.write(command + "\n")
    with open(os.path.join(folder, "ack")) as ack:
        ack.readline()


def _write_map(objects, keep_dir: Path) -> None:
    """/tmp/perf-<pid>.map of every function in `objects`, and each object file kept in keep_dir
    (for --hot) as <index>.o, with <index>.txt holding the functions' runtime addresses."""
    lines = []
    for k, (lib, obj) in enumerate(objects):
        path = keep_dir / f"{k}.o"
        path.write_bytes(obj)
        out = subprocess.run(["nm", "-S", "--defined-only", str(path)], capture_output=True, text=True).stdout
        placed = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 4 or parts[2] not in "tTwW":
                continue
            try:
                address = lib._codegen._engine.get_function_address(parts[3])
            except Exception:  # noqa: BLE001 - not a function the engine resolves
                continue
            if address:
                lines.append(f"{address:x} {int(parts[1], 16):x} {parts[3]}")
                placed.append(f"{address:x} {parts[0]} {int(parts[1], 16):x} {parts[3]}")
        (keep_dir / f"{k}.txt").write_text("\n".join(placed) + "\n")
    Path(f"/tmp/perf-{os.getpid()}.map").write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------
# the report
# ------------------------------------------------------------------------------------------------

def _functions(report: str) -> list[tuple[float, str]]:
    rows = []
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
        if m:
            rows.append((float(m.group(1)), m.group(2)))
    return rows


def _hot(perf_data: Path, keep_dir: Path, want: str, top: int) -> list[str]:
    """The hottest instructions of the kernel function whose readable name ends with `want`."""
    where = None
    for txt in sorted(keep_dir.glob("*.txt")):
        for line in txt.read_text().splitlines():
            address, offset, size, name = line.split()
            if readable(name).endswith(want):
                where = (int(address, 16), int(offset, 16), int(size, 16), name, txt.with_suffix(".o"))
                break
        if where:
            break
    if where is None:
        return [f"no kernel function named {want!r} was loaded"]
    address, offset, size, name, obj = where
    ips = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip"], capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in ips.split():
        ip = int(line, 16)
        if address <= ip < address + size:
            counts[ip - address + offset] += 1
    total = sum(counts.values())
    if not total:
        return [f"no samples in {readable(name)}"]
    asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={offset}",
                          f"--stop-address={offset + size}", str(obj)], capture_output=True, text=True).stdout
    lines = asm.splitlines()
    index = {int(m.group(1), 16): i for i, line in enumerate(lines) if (m := re.match(r"\s*([0-9a-f]+):", line))}
    out = [f"{readable(name)}: {total} samples; the {top} hottest instructions (offset in its object file, "
           f"share of the function's samples), each after the 4 instructions before it:"]
    for off, n in counts.most_common(top):
        out.append(f"-- {off:x}  {100 * n / total:.1f}%")
        i = index.get(off)
        if i is not None:
            out += ["   " + re.sub(r"<_ZN[^>]*>", "", s).rstrip()[:110] for s in lines[max(i - 4, 0):i + 1]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("encoding", choices=oracle.ENCODINGS)
    ap.add_argument("corpus", choices=data.CORPORA)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--unseen", action="store_true", help="empty the piece cache before each call")
    ap.add_argument("--list", action="store_true", help="time encode_ordinary (a list), not the numpy call")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--frequency", type=int, default=5000, help="samples a second (perf -F)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--hot", default=None, help="a kernel function (e.g. merge_by_chars_at): its hottest instructions")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--objects", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.calls < 1 or a.threads < 1:
        ap.error("--calls and --threads must be at least 1")
    if a.child:
        _child(a)
        return 0
    for tool in ("perf", "nm", "objdump"):
        if shutil.which(tool) is None:
            ap.error(f"needs `{tool}` on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        perf_data = Path(tmp) / "perf.data"
        for fifo in ("ctl", "ack"):
            os.mkfifo(os.path.join(tmp, fifo))
        # sampling only while the loop runs: off at start (-D -1), switched by the loop (_perf_control)
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(a.frequency), "-o", str(perf_data), "-D", "-1",
               "--control", f"fifo:{tmp}/ctl,{tmp}/ack", "--",
               sys.executable, __file__, a.encoding, a.corpus, "--child", "--objects", tmp, "--calls", str(a.calls),
               "--threads", str(a.threads)] + (["--unseen"] if a.unseen else []) + (["--list"] if a.list else [])
        run = subprocess.run(cmd, capture_output=True, text=True)
        marks = [line for line in run.stdout.splitlines() if line.startswith("@@")]
        if run.returncode != 0 or not marks:
            sys.exit(f"perf record failed ({run.returncode}): {(run.stderr or run.stdout).strip()[-500:]}")
        pid, per_call = marks[-1][2:].split()
        per_call = float(per_call)
        report = subprocess.run(["perf", "report", "-i", str(perf_data), "--no-children", "--sort", "symbol",
                                 "--stdio"], capture_output=True, text=True).stdout
        Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
        rows = _functions(report)
        print(f"{a.encoding} {a.corpus}, {a.calls} calls ({'unseen' if a.unseen else 'seen'}, "
              f"{a.threads} thread{'s' if a.threads > 1 else ''}, {'list' if a.list else 'numpy'}): "
              f"{per_call * 1e3:.2f} ms a call under perf\n")
        shares = collections.Counter()
        for share, sym in rows:  # (a scanner's C callback and its body read alike)
            shares[readable(sym)] += share
        print("| share of samples | function |\n|---:|---|")
        for name, share in shares.most_common(a.top):
            print(f"| {share:.2f}% | {name} |")
        if a.hot:
            print()
            print("\n".join(_hot(perf_data, Path(tmp), a.hot, a.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
