"""docs/python.md runs as written: its ```python blocks are executed in order, in one namespace,
from a directory where the repository's paths resolve, and each block prints exactly the
```text block that follows it (when one does)."""

import contextlib
import io
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def blocks():
    text = (ROOT / "docs" / "python.md").read_text()
    found = re.findall(r"```(python|text)\n(.*?)```", text, re.S)
    out = []
    for i, (kind, body) in enumerate(found):
        if kind == "python":
            shown = found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
            out.append((body, shown))
    return out


def test_the_walk_through_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    # The repository's paths, seen from a scratch directory (the plot is written there).
    for name in ("crates", "scenarios", "examples"):
        os.symlink(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    code = blocks()
    assert len(code) >= 4
    for body, shown in code:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(body, "docs/python.md", "exec"), namespace)
        if shown is not None:
            assert printed.getvalue() == shown, body
    assert (tmp_path / "busbw-qps.png").stat().st_size > 10_000
