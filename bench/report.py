"""Ratios, aligned text tables, Markdown and JSON output.

One job: turn measurement rows into what a person reads.  A ratio is
MB/s of X / MB/s of tiktoken on the same (mode, encoding, corpus, threads);
short strings are compared with tiktoken's plain Python loop.
"""

from __future__ import annotations

import json
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path

PACKAGES = ("tiktoken", "tokenizers", "gigatoken", "fastokens", "bpe-openai", "tokie", "numba", "numpy", "pyarrow")


NUMERIC = {"thr", "MB/s", "ratio", "cpuMB/s", "ratio(cpu)", "kstrings/s", "peak dRSS MB", "peak vs tiktoken", "ids",
           "items", "ms", "us/item"}


def environment() -> dict:
    vers = {}
    for p in PACKAGES:
        try:
            vers[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            vers[p] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        commit = ""
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "machine": f"{cpu} ({os.cpu_count()} CPUs)",
        "commit": commit,
        "versions": vers,
        "loadavg_end": os.getloadavg(),
    }


def add_ratios(rows: list[dict]) -> None:
    base, base_cpu = {}, {}
    for r in rows:
        if r["lib"] == "tiktoken" and r.get("status") == "ok":
            base[(r["mode"], r["encoding"], r["corpus"], r["threads"])] = r["mbps"]
            base_cpu[(r["mode"], r["encoding"], r["corpus"], r["threads"])] = r["cpu_mbps"]
    for r in rows:
        if r.get("status") != "ok":
            r["ratio"] = r["ratio_cpu"] = None
            continue
        if r["mode"] in ("short_loop", "short_batch"):
            key = ("short_loop", r["encoding"], r["corpus"], 1)
        else:
            key = (r["mode"], r["encoding"], r["corpus"], r["threads"])
        b = base.get(key)
        r["ratio"] = r["mbps"] / b if b else None
        bc = base_cpu.get(key)
        r["ratio_cpu"] = r["cpu_mbps"] / bc if bc else None
    # memory: peak relative to tiktoken's
    peak = {r["encoding"]: r.get("peak_delta_mb") for r in rows
            if r["mode"] == "memory" and r["lib"] == "tiktoken" and r.get("status") == "ok"}
    for r in rows:
        if r["mode"] == "memory" and r.get("status") == "ok" and peak.get(r["encoding"]):
            r["peak_ratio"] = r["peak_delta_mb"] / peak[r["encoding"]]


def _exact(r: dict) -> str:
    e = r.get("exact")
    return "yes" if e is True else ("NO" if e is False else "?")


def _fmt(x, nd=1) -> str:
    return "" if x is None else f"{x:,.{nd}f}"


def _note(r: dict) -> str:
    if r.get("status") != "ok":
        return f"{r.get('status')}: {r.get('reason', '')}"
    n = r.get("note", "")
    if r.get("exact") is False:
        n = (n + "; " if n else "") + f"first differing id at {r.get('first_diff')}"
    return n


def tables(rows: list[dict]) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    thr = [r for r in rows if r["mode"] in ("whole", "long", "batch", "worst")]
    if thr:
        hdr = ["mode", "library", "encoding", "corpus", "thr", "MB/s", "ratio", "cpuMB/s", "ratio(cpu)", "exact",
               "note"]
        body = [[r["mode"], r["lib"], r["encoding"], r["corpus"], str(r["threads"]),
                 _fmt(r.get("mbps")) if r.get("status") == "ok" else "n/a", _fmt(r.get("ratio"), 2),
                 _fmt(r.get("cpu_mbps")), _fmt(r.get("ratio_cpu"), 2),
                 _exact(r) if r.get("status") == "ok" else "", _note(r)] for r in thr]
        out.append(("Throughput (MB/s = 10^6 bytes of UTF-8 input per wall second; cpuMB/s per CPU second "
                    "of all the process's threads)", hdr, body))
    sh = [r for r in rows if r["mode"] in ("short_loop", "short_batch")]
    if sh:
        hdr = ["mode", "library", "encoding", "thr", "kstrings/s", "MB/s", "ratio", "ratio(cpu)", "exact", "note"]
        body = [[r["mode"], r["lib"], r["encoding"], str(r["threads"]),
                 _fmt(r["n_items"] / r["seconds"] / 1e3) if r.get("status") == "ok" else "n/a",
                 _fmt(r.get("mbps"), 2) if r.get("status") == "ok" else "",
                 _fmt(r.get("ratio"), 2), _fmt(r.get("ratio_cpu"), 2),
                 _exact(r) if r.get("status") == "ok" else "", _note(r)] for r in sh]
        out.append(("Short strings (ratio vs tiktoken's plain loop)", hdr, body))
    dec = [r for r in rows if r["mode"].startswith("decode_")]
    if dec:
        hdr = ["mode", "library", "encoding", "corpus", "thr", "ids", "items", "ms", "us/item", "MB/s", "ratio",
               "exact", "note"]
        ok = lambda r: r.get("status") == "ok"  # noqa: E731
        body = [[r["mode"], r["lib"], r["encoding"], r["corpus"], str(r["threads"]),
                 f"{r['n_tokens']:,}" if ok(r) else "", f"{r['n_items']:,}" if ok(r) else "",
                 _fmt(r["seconds"] * 1e3, 2) if ok(r) else "n/a",
                 _fmt(r["seconds"] * 1e6 / r["n_items"], 2) if ok(r) else "",
                 _fmt(r.get("mbps")) if ok(r) else "", _fmt(r.get("ratio"), 2),
                 _exact(r) if ok(r) else "", _note(r)] for r in dec]
        out.append(("Decode (tiktoken's ids as Python lists -> str; MB/s = 10^6 bytes of UTF-8 output per wall "
                    "second; ratio = MB/s / tiktoken's; exact = the text equals the input)", hdr, body))
    mem = [r for r in rows if r["mode"] == "memory"]
    if mem:
        hdr = ["library", "encoding", "input", "MB/s", "peak dRSS MB", "peak vs tiktoken", "exact", "note"]
        body = [[r["lib"], r["encoding"], r["corpus"],
                 _fmt(r.get("mbps")) if r.get("status") == "ok" else "n/a",
                 _fmt(r.get("peak_delta_mb"), 0), _fmt(r.get("peak_ratio"), 2),
                 _exact(r) if r.get("status") == "ok" else "", _note(r)] for r in mem]
        out.append(("Peak memory of one encode (fresh process, RSS high-water mark minus RSS before the call)",
                    hdr, body))
    return out


def render_text(rows: list[dict]) -> str:
    parts = []
    for title, hdr, body in tables(rows):
        hdr = list(hdr)
        w = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(hdr)]
        right = {h for h in hdr if h in NUMERIC}
        line = lambda cells: "  ".join(c.rjust(w[i]) if hdr[i] in right else c.ljust(w[i])  # noqa: E731
                                       for i, c in enumerate(cells)).rstrip()
        parts.append(title)
        parts.append(line(hdr))
        parts.append(line(["-" * x for x in w]))
        parts.extend(line(b) for b in body)
        parts.append("")
    return "\n".join(parts)


def render_markdown(rows: list[dict], env: dict, inputs: list[dict], argv: list[str]) -> str:
    md = ["# tltok_jit benchmark results", ""]
    md.append(f"- date: {env['date']}; commit {env['commit']}; Python {env['python']}; {env['machine']}")
    md.append("- versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v))
    if "loadavg_start" in env:
        md.append(f"- load average (1/5/15 min) at start {tuple(round(x, 2) for x in env['loadavg_start'])}, "
                  f"at end {tuple(round(x, 2) for x in env['loadavg_end'])} (a shared 2-core machine: other "
                  "processes add noise)")
    md.append(f"- command: `python {' '.join(argv)}`")
    md.append("- every number: a fresh process per measurement, warmed up on UDHR+emoji text, ONE timed "
              "call on unseen text (best of the repeats); exact = ids equal tiktoken's on the timed text")
    md.append("")
    md.append("| input | bytes | items | note |")
    md.append("|---|---:|---:|---|")
    for i in inputs:
        md.append(f"| {i['mode']}/{i['corpus']} | {i['bytes']:,} | {i['items']:,} | {i['note']} |")
    md.append("")
    for title, hdr, body in tables(rows):
        md.append(f"## {title}")
        md.append("")
        md.append("| " + " | ".join(hdr) + " |")
        md.append("|" + "|".join("---:" if h in NUMERIC else "---" for h in hdr) + "|")
        md.extend("| " + " | ".join(c.replace("|", "\\|") for c in b) + " |" for b in body)
        md.append("")
    md.append("## APIs timed")
    md.append("")
    seen = set()
    for r in rows:
        k = (r["lib"], r["mode"])
        if r.get("api") and k not in seen:
            seen.add(k)
            md.append(f"- {r['lib']} / {r['mode']}: `{r['api']}`")
    md.append("")
    md.append("## Vocabulary sources")
    md.append("")
    seen = set()
    for r in rows:
        k = (r["lib"], r["encoding"])
        if r.get("source") and k not in seen:
            seen.add(k)
            md.append(f"- {r['lib']} / {r['encoding']}: {r['source']}")
    md.append("")
    return "\n".join(md)


def write(rows, env, inputs, argv, out_md: Path) -> Path:
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(render_markdown(rows, env, inputs, argv), encoding="utf-8")
    out_json = out_md.with_suffix(".json")
    out_json.write_text(json.dumps({"environment": env, "argv": argv, "inputs": inputs, "rows": rows},
                                   indent=1, default=str), encoding="utf-8")
    return out_json
