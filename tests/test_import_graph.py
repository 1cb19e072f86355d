"""The package's imports run one way: loaders -> description -> tables -> kernels <- front ends <-
integrations. Every `import` of a tltok_jit module counts, at the top of a file or inside a
function (an import inside a function is still a dependency; it only hides a cycle from Python)."""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import tltok_jit

PACKAGE = pathlib.Path(tltok_jit.__file__).parent
ROOT = "tltok_jit"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The tltok_jit modules `name` imports (a `from X import y` counts X, and X.y if it is a module)."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != ROOT:
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            if subs and len(subs) == len(node.names):
                out.update(subs)  # `from . import arrow`: the submodule, not the package
            else:
                out.add(target)
                out.update(subs)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == ROOT)
    out.discard(name)
    return {m for m in out if m in known}


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    graph = {name: _imports(name, path, known) for name, path in mods.items()}
    # importing tltok_jit.a.b runs tltok_jit/__init__ and tltok_jit/a/__init__ first; those edges are
    # Python's, not the module's, and a package's __init__ importing its own submodules is its job
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a list of modules (first == last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(u: str):
        color[u] = GREY
        stack.append(u)
        for v in sorted(graph[u]):
            if color[v] == GREY:
                return stack[stack.index(v):] + [v]
            if color[v] == WHITE:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        color[u] = BLACK
        return None

    for u in sorted(graph):
        if color[u] == WHITE:
            found = visit(u)
            if found:
                return found
    return None


def test_find_cycle_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_kernels_import_no_front_end():
    graph = import_graph()
    for name, deps in graph.items():
        if name.startswith(f"{ROOT}.kernels"):
            outside = {d for d in deps if not d.startswith(f"{ROOT}.kernels") and d != f"{ROOT}.unicode"
                       and not d.startswith(f"{ROOT}.unicode.")}
            assert not outside, f"{name} imports {sorted(outside)}: kernels see only kernels and Unicode tables"


def test_import_loads_neither_pyarrow_nor_polars():
    code = ("import sys, tltok_jit; bad = [m for m in ('pyarrow', 'polars', 'pandas', 'ray') if m in sys.modules];"
            " assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent)


def test_rank_file_users_never_load_the_tokenizer_json_pipeline():
    code = ("import sys, tltok_jit; enc = tltok_jit.get_encoding('r50k_base'); enc.encode('hi'); enc.decode([1]);"
            " bad = [m for m in ('tltok_jit.hf.runtime', 'tltok_jit.compile.python_encoder_hf', 'tltok_jit.loaders.hf_json',"
            " 'tltok_jit.hf.decoder_chain') if m in sys.modules]; assert not bad, bad")
    env = {**os.environ, "TLTOK_OFFLINE": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent, env=env)


# what each lower layer may not import: a description never depends on what consumes it
FRONT_ENDS = ("encoding", "columns", "streaming", "tokenizer", "kinds", "integrations", "udf", "ray", "padding",
              "packing", "loader", "training")
LOWER_LAYERS = {
    # a loader builds a tokenizer.json file's decoder chain, never the runtime that encodes with it
    f"{ROOT}.loaders": FRONT_ENDS + ("hf.runtime", "hf.online_normalizer", "engine.kernel_pipeline", "compile",
                                     "tables"),
    f"{ROOT}.model": FRONT_ENDS + ("loaders", "tables", "hf", "engine", "compile", "kernels"),
    f"{ROOT}.tables": FRONT_ENDS + ("hf", "engine", "compile"),
    # the engine's pipeline and the tokenizer.json runtime hand whole columns to columns/ (the Arrow
    # drivers run on their tables)
    f"{ROOT}.engine": tuple(m for m in FRONT_ENDS if m != "columns") + ("compile",),
    f"{ROOT}.hf": tuple(m for m in FRONT_ENDS if m != "columns") + ("compile",),
    f"{ROOT}.errors": tuple(m.split(".")[-1] for m in _modules() if m.count(".") == 1),
}


# Known, listed so that no new one slips in (none left).
KNOWN_UPWARD: set[tuple[str, str]] = set()


def _banned(module: str, banned: tuple[str, ...]) -> bool:
    rest = module[len(ROOT) + 1:]
    return any(rest == b or rest.startswith(b + ".") for b in banned)


def test_lower_layers_import_no_front_end():
    graph = import_graph()
    for name, deps in graph.items():
        for layer, banned in LOWER_LAYERS.items():
            if name == layer or name.startswith(layer + "."):
                bad = sorted(d for d in deps if _banned(d, banned) and (name, d) not in KNOWN_UPWARD)
                assert not bad, f"{name} imports {bad}"


def test_known_upward_imports_still_exist():
    graph = import_graph()  # an entry fixed upstream must leave the list too
    for name, dep in KNOWN_UPWARD:
        assert dep in graph[name], f"{name} no longer imports {dep}: remove it from KNOWN_UPWARD"


# tiktoken's own attribute names, which its users read too
_TIKTOKEN_ATTRIBUTES = {"_special_tokens", "_mergeable_ranks", "_pat_str"}


def _private_encoding_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, attribute) of every `enc._x`, `self.enc._x`, `self._enc._x` read in a module."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        base = node.value
        holder = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if holder in ("enc", "_enc") and node.attr not in _TIKTOKEN_ATTRIBUTES:
            found.append((node.lineno, node.attr))
    return found


def test_front_ends_reach_an_encoding_through_its_engine():
    bad = {}
    for name, path in _modules().items():
        if name == "tltok_jit.encoding":
            continue
        reads = _private_encoding_reads(ast.parse(path.read_text()))
        if reads:
            bad[name] = reads
    assert not bad, f"private Encoding attributes read outside encoding.py (use Encoding.engine): {bad}"


def test_private_read_detector_finds_one():
    tree = ast.parse("def f(enc):\n    return enc._t, self.enc._compiled, self._enc._model, enc._mergeable_ranks\n")
    assert sorted(_private_encoding_reads(tree)) == [(2, "_compiled"), (2, "_model"), (2, "_t")]
