"""Every Python block in the README and in docs/ runs, and its shown output is checked.

A page's ```python blocks run in order in one namespace, so a later block can use
what an earlier one defined. When a ```output block follows a ```python block, the
text that block printed must equal it exactly (trailing spaces aside).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md")])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_page_examples_run_and_print_what_they_show(page: Path, tmp_path: Path) -> None:
    """Run a page's Python blocks in order and compare each shown output."""
    blocks = _blocks(page.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        for index, (lang, code) in enumerate(blocks):
            if lang != "python":
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.name}[block {index}]", "exec"), namespace)
            following = blocks[index + 1] if index + 1 < len(blocks) else None
            if following is not None and following[0] == "output":
                assert _normalise(out.getvalue()) == _normalise(following[1]), (
                    f"{page.name} block {index} printed something other than it shows"
                )
    finally:
        os.chdir(cwd)
