"""Shared helpers for the notebook-layer tests: small smoke runs (made once per session) and tiny notebooks."""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from conftest import TOY

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
_RUNS: dict[int, Path] = {}
_TMP = Path(tempfile.mkdtemp(prefix="grpo_wb_nbtests_"))
atexit.register(shutil.rmtree, _TMP, True)


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


def assert_shareable_html(html: str, min_images: int) -> None:
    """Embedded images only, no code cells, no source code, a parameters table."""
    body = html_body(html)
    imgs = re.findall(r'<img[^>]*src="([^"]*)"', body)
    assert len(imgs) >= min_images, f"{len(imgs)} images in the HTML, expected >= {min_images}"
    assert all(src.startswith("data:image/png;base64,") for src in imgs)
    code_cells = re.findall(r'class="jp-Cell jp-CodeCell[^"]*"', body)
    assert code_cells and all("jp-mod-noInput" in c for c in code_cells), "a code cell kept its input"
    assert 'class="highlight' not in body and "from grpo_wb" not in body
    assert "<h3>Parameters</h3>" in body
