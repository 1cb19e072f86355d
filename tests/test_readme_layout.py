"""The README's layout table names every module of the package (it is how a newcomer finds one)."""

from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parent.parent


def _layout_table() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## What is in the box")
    return text[start:text.index("\n## ", start + 1)]


def test_every_module_is_in_the_layout_table():
    table = _layout_table()
    named = set(re.findall(r"`([\w/]+\.py|[\w]+/)`", table))
    missing = []
    for path in sorted((REPO / "tltok_jit").glob("*.py")):
        if path.name != "__init__.py" and path.name not in named:
            missing.append(path.name)
    for path in sorted(p for p in (REPO / "tltok_jit").iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        if f"{path.name}/" not in named:
            missing.append(f"{path.name}/")
    assert not missing, f"modules the README's layout table does not name: {missing}"


def test_the_table_names_no_module_that_is_gone():
    names = re.findall(r"`(\w+\.py)`", _layout_table())
    known = {p.name for p in (REPO / "tltok_jit").rglob("*.py")}
    assert not [n for n in names if n not in known]


def test_readme_stays_a_users_document():
    # the history of measurements and decisions lives in docs/ (docs/README.md indexes it)
    n = len((REPO / "README.md").read_text().splitlines())
    assert n <= 400, f"README.md has {n} lines (at most 400: move history and detail to docs/)"


def test_links_between_readme_and_docs_resolve():
    broken = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" not in target and not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(REPO)} -> {target}")
    assert not broken, f"links to files that do not exist: {broken}"


def _variables(paths) -> set[str]:
    found = set()
    for root in paths:
        for path in (REPO / root).rglob("*.py"):
            found |= set(re.findall(r"TLTOK_[A-Z0-9_]+", path.read_text()))
    return found


def test_readme_names_every_environment_variable_the_package_reads():
    readme = set(re.findall(r"TLTOK_[A-Z0-9_]+", (REPO / "README.md").read_text()))
    missing = sorted(_variables(["tltok_jit"]) - readme)
    assert not missing, f"TLTOK_* variables the README's Configuration section does not name: {missing}"
    gone = sorted(readme - _variables(["tltok_jit", "bench", "tests"]))
    assert not gone, f"the README names variables nothing reads: {gone}"
