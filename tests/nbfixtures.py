"""Shared helpers for the notebook-layer tests: small smoke runs (made once per session) and tiny notebooks."""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path

from conftest import TOY

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
_RUNS: dict[int, Path] = {}
_TMP = Path(tempfile.mkdtemp(prefix="grpo_wb_nbtests_"))
atexit.register(shutil.rmtree, _TMP, True)

# nbformat is imported where it is used: importing it builds jsonschema's format checkers, some 3 s of every pytest
# process's collection


def shared_run(group_size: int = 4) -> Path:
    """A small mock smoke run on the toy tasks (2 steps, 4 prompts), made once per session per G."""
    if group_size not in _RUNS:
        from grpo_wb.runs.smoke import SmokeConfig, SmokeRun

        out = _TMP / f"g{group_size}" / "run"
        cfg = SmokeConfig(
            tasks=str(TOY), out=str(out), group_size=group_size, batch_size=4, steps=2, seed=0, timeout=0.5
        )
        SmokeRun(cfg, overwrite=True, progress=False, log=lambda m: None).run()
        _RUNS[group_size] = out
    return _RUNS[group_size]


def make_notebook(path: Path, params: str, cells: list[str], kernel: str = "python3") -> Path:
    """Write a notebook with a ``parameters`` cell and code cells (no outputs)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": "Python 3", "language": "python"}
    p = nbformat.v4.new_code_cell(params)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# tiny"), p] + [nbformat.v4.new_code_cell(c) for c in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def n_images(nb) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs(nb))


def n_tables(nb) -> int:
    return sum("<table" in o.get("data", {}).get("text/html", "") for o in outputs(nb))


def html_body(html: str) -> str:
    return html[html.index("<body") :]


# what a page fetches when it is opened: a script, frame or media element's src, a <link>'s href (a stylesheet, a
# preload, a module), a CSS @import or url(), an ES module's import or import(): anything but a data: URL. A rendered
# report is one file that fetches nothing (docs/explorer.md), so any of them is one too many, local or remote.
_FETCHES = (
    r"""<(?:script|img|iframe|frame|audio|video|source|track|embed|object|input)\b[^>]*?\b(?:src|data)\s*=\s*["']?([^"'\s>]+)""",
    r"""<link\b[^>]*?\bhref\s*=\s*["']?([^"'\s>]+)""",
    r"""@import\s+(?:url\(\s*)?["']?([^"'\s);]+)""",
    r"""(?-i:\burl)\(\s*["']?([^"'\s)]+)""",  # CSS url(), not a script's new URL(
    r"""\bimport\s*(?:\(\s*|[\w{}\s,*]+?\s+from\s*)["']([^"']+)["']""",
)
# the hosts nbconvert's template and the notebook libraries fetch from, wherever they are named
CDNS = ("cdnjs.cloudflare.com", "cdn.jsdelivr.net", "unpkg.com", "code.jquery.com", "cdn.datatables.net", "mathjax")


def fetched(html: str) -> list[str]:
    """What the page would fetch when opened (data: URLs aside), and each CDN host it names at all."""
    found = [u for pattern in _FETCHES for u in re.findall(pattern, html, re.IGNORECASE) if not u.startswith("data:")]
    return found + [h for h in CDNS if h in html.lower()]


def assert_shareable_html(html: str, min_images: int) -> None:
    """Embedded images only, no code cells, no source code, a parameters table, nothing fetched when opened."""
    assert fetched(html) == [], f"the page fetches {fetched(html)[:10]}"
    body = html_body(html)
    imgs = re.findall(r'<img[^>]*src="([^"]*)"', body)
    assert len(imgs) >= min_images, f"{len(imgs)} images in the HTML, expected >= {min_images}"
    assert all(src.startswith("data:image/png;base64,") for src in imgs)
    code_cells = re.findall(r'class="jp-Cell jp-CodeCell[^"]*"', body)
    assert code_cells and all("jp-mod-noInput" in c for c in code_cells), "a code cell kept its input"
    assert 'class="highlight' not in body and "from grpo_wb" not in body
    assert "<h3>Parameters</h3>" in body
