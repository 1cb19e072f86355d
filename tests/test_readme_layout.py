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
