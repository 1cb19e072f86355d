"""bench/engine_stages.py cuts the engine where its stages begin: every cut finds its one line in
kernels/encode.py (an edit there makes the tool refuse, not time something else), and each copy
differs from the engine by exactly its cuts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import engine_stages  # noqa: E402


def test_every_cut_lands_once(tmp_path):
    names = engine_stages.engine_copies(tmp_path)
    assert set(names) == {"whole", *engine_stages.CUTS}
    whole = (tmp_path / f"{names['whole']}.py").read_text()
    assert "from ." not in whole  # imports made absolute: the copies live outside the package
    for cut, edits in engine_stages.CUTS.items():
        copy = (tmp_path / f"{names[cut]}.py").read_text()
        for e in edits:
            anchor, replacement = engine_stages.EDITS[e]
            assert whole.count(anchor) == 1 and replacement in copy
        assert len(copy) - len(whole) == sum(len(engine_stages.EDITS[e][1]) - len(engine_stages.EDITS[e][0])
                                             for e in edits)


def test_a_changed_engine_is_refused(tmp_path, monkeypatch):
    src = tmp_path / "encode.py"
    src.write_text(engine_stages.ENGINE.read_text().replace(engine_stages.EDITS["stop before merge"][0], ""))
    monkeypatch.setattr(engine_stages, "ENGINE", src)
    (tmp_path / "out").mkdir()
    with pytest.raises(SystemExit, match="the engine changed"):
        engine_stages.engine_copies(tmp_path / "out")


def test_an_unknown_encoding_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as e:
        engine_stages.main(["o200k_bse", "english"])
    assert e.value.code == 2
    assert "unknown encoding 'o200k_bse'" in capsys.readouterr().err
