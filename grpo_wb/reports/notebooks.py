"""A strict papermill runner and self-contained HTML reports.

Papermill only *warns* about an unknown parameter and injects whatever type it
is given. :func:`run_report` first checks every requested parameter against
the notebook's ``parameters`` cell (as ``papermill --help-notebook`` reads it:
names, annotated types, trailing-comment help) and refuses typos and
mistyped values with a one-line :class:`~grpo_wb.errors.UserError`; then it
executes the notebook with papermill in this environment (kernel ``python3``,
which jupyter_client resolves to this interpreter) and renders HTML with
nbconvert: inputs hidden, figures inlined as ``data:`` PNGs, the parameters
shown as a table in place of the hidden injected cell.

Conventions the runner relies on (notebooks/ follows them):

* every parameter is annotated with one of ``int float str bool list dict``;
* parameters named ``*_file``, ``*_dir``, ``*_path`` (or plural, for lists)
  are paths: relative values are made absolute against the caller's working
  directory before injection, because the kernel runs with its cwd set to the
  **notebook's directory** (as in JupyterLab and nbmake), where the defaults
  such as ``../data/toy_tasks.jsonl`` are written;
* a parameter ``out_dir`` receives the report directory; the notebook writes
  its artifacts there, including ``headline.json`` (:func:`write_headline`),
  which the batch index reads.

The notebooks ship in the package as ``grpo_wb.notebooks`` (the checkout's ``notebooks/`` folder, mapped by
pyproject.toml's package-dir): :func:`find_notebook` takes a path or a shipped notebook's name, as ``grpo-wb
report`` does; :func:`check_default_paths` says in one line when a default path (``../data/...``, ``../reports/...``:
a checkout's) is not there.

Report directory: ``report.ipynb`` (executed), ``report.html``,
``result.json`` (:class:`ReportResult`), ``headline.json`` (when the
notebook wrote it) and whatever else the notebook wrote.

papermill, nbformat and nbconvert are imported where they are used: 1.1 s
together, which every ``grpo-wb`` command (this module is the CLI's) would pay.
"""

from __future__ import annotations

import ast
import copy
import difflib
import html
import importlib.resources
import json
import math
import os
import re
import time
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lazy_loader
import yaml

from grpo_wb.errors import UserError, exception_line, one_line
from grpo_wb.formats import PARAMETER_TYPES
from grpo_wb.jsonio import atomic_write_json, atomic_write_text
from grpo_wb.layout import ReportFiles

if TYPE_CHECKING:
    from grpo_wb.formats import schema
else:  # pydantic and the models take some 0.1 s: loaded by the first value checked, not by `grpo-wb --help`
    schema = lazy_loader.load("grpo_wb.formats.schema", suppress_warning=True)

KERNEL_NAME = "python3"
TYPES = tuple(PARAMETER_TYPES)
PATH_SUFFIXES = ("_file", "_dir", "_path", "_files", "_dirs", "_paths")
OUT_DIR_PARAM = "out_dir"
HEADLINE_FILE = ReportFiles.HEADLINE
RESULT_FILE = ReportFiles.RESULT
SHIPPED = "grpo_wb.notebooks"
"""The package the notebooks ship in: the checkout's ``notebooks/`` folder (pyproject.toml's package-dir)."""
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


# ----------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class NotebookParameter:
    """One entry of a notebook's ``parameters`` cell."""

    name: str
    """Variable name."""
    type: str
    """Annotated type: one of :data:`TYPES`."""
    default: str
    """Default, as source text."""
    help: str
    """The trailing comment."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_notebook(path: str | Path):
    """The notebook at ``path`` (nbformat 4), or a one-line UserError naming the file."""
    import nbformat

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such notebook")
    try:
        return nbformat.read(str(p), as_version=4)
    except Exception as e:  # nbformat raises several kinds for a broken file
        raise UserError(f"{p}: not a readable notebook ({exception_line(e)})") from None


def parameters_cells(nb) -> list:
    """The cells tagged ``parameters`` (a template has exactly one)."""
    return [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]


def template_problems(path: str | Path) -> list[str]:
    """What keeps a notebook from being a strict template (empty list = fine).

    One ``parameters`` cell; every name it assigns is annotated with a
    supported type and has a help comment (papermill silently drops
    assignments it cannot parse, such as ``x: str | None = None``); kernelspec
    ``python3``.
    """
    import papermill as pm

    nb = read_notebook(path)
    problems = []
    tagged = parameters_cells(nb)
    if len(tagged) != 1:
        return [f"{path}: needs exactly one cell tagged 'parameters', found {len(tagged)}"]
    ks = nb.metadata.get("kernelspec", {}).get("name")
    if ks != KERNEL_NAME:
        problems.append(f"{path}: kernelspec name is {ks!r}, expected {KERNEL_NAME!r}")
    try:
        tree = ast.parse(tagged[0].source)
    except SyntaxError as e:
        return problems + [f"{path}: parameters cell does not parse: {e.msg}"]
    assigned = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        assigned += [t.id for t in targets if isinstance(t, ast.Name)]
    inspected = pm.inspect_notebook(str(path))
    for name in assigned:
        info = inspected.get(name)
        if info is None:
            problems.append(
                f"{path}: parameter {name!r} is not visible to papermill (use a plain annotation: {', '.join(TYPES)})"
            )
        elif info["inferred_type_name"] not in TYPES:
            problems.append(
                f"{path}: parameter {name!r} has type {info['inferred_type_name']!r}; annotate it "
                f"with one of {', '.join(TYPES)}"
            )
        elif not info["help"].strip():
            problems.append(f"{path}: parameter {name!r} has no help comment")
    return problems


def notebook_parameters(path: str | Path) -> dict[str, NotebookParameter]:
    """The declared parameters of a strict template; a notebook that is not one is a UserError."""
    import papermill as pm

    problems = template_problems(path)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(problems[0] + more)
    return {
        k: NotebookParameter(k, v["inferred_type_name"], v["default"], v["help"])
        for k, v in pm.inspect_notebook(str(path)).items()
    }


def is_path_parameter(name: str) -> bool:
    """Parameters whose name ends in _file/_dir/_path (or a plural) hold paths."""
    return name.endswith(PATH_SUFFIXES)


def coerce_cli_value(param: NotebookParameter, raw: str) -> Any:
    """Turn a ``-p NAME VALUE`` string into the declared type, or raise UserError."""
    t = param.type
    bad = UserError(f"parameter {param.name!r} expects {t}, got {raw!r}")
    if t == "str":
        return raw
    if t == "int":
        try:
            return int(raw.strip())
        except ValueError:
            raise bad from None
    if t == "float":
        try:
            v = float(raw.strip())
        except ValueError:
            raise bad from None
        if not math.isfinite(v):
            raise bad
        return v
    if t == "bool":
        s = raw.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        raise bad
    try:
        v = yaml.safe_load(raw)
    except yaml.YAMLError:
        raise UserError(f"parameter {param.name!r} expects {t} (as YAML/JSON), got unparsable {raw!r}") from None
    return check_value(param, v)


def check_value(param: NotebookParameter, value: Any) -> Any:
    """Check a typed value (from a plan or the API) against the declared type
    (:data:`~grpo_wb.formats.schema.PARAMETER_VALUES`: strict, a float finite; ints pass for floats)."""
    return schema.check_parameter(param.name, param.type, value)


def validate_parameters(
    declared: Mapping[str, NotebookParameter],
    values: Mapping[str, Any],
    *,
    raw: bool = False,
    notebook: str = "notebook",
) -> dict[str, Any]:
    """Strictly validated values: an unknown name (with a did-you-mean) or a wrong type is a UserError."""
    out = {}
    for name, v in values.items():
        if name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UserError(f"{notebook} has no parameter {name!r}{hint} (parameters: {', '.join(declared)})")
        p = declared[name]
        out[name] = coerce_cli_value(p, v) if raw and isinstance(v, str) else check_value(p, v)
    return out


def resolve_path_values(values: Mapping[str, Any], base: str | Path) -> dict[str, Any]:
    """Make relative, non-empty values of path parameters absolute against ``base`` (globs stay globs)."""
    base = Path(base)

    def fix(v: Any) -> Any:
        if not isinstance(v, str) or not v:
            return v
        p = Path(os.path.expanduser(v))
        return os.path.normpath(p if p.is_absolute() else base.resolve() / p)

    out = {}
    for k, v in values.items():
        if is_path_parameter(k):
            v = [fix(x) for x in v] if isinstance(v, list) else fix(v)
        out[k] = v
    return out


def readable_tables() -> None:
    """pandas' display options for reports: whole cells (an error message or a diff is not cut at 50 characters),
    up to 200 rows, three decimals."""
    import pandas as pd  # where used: every grpo-wb command imports this module

    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_rows", 200)
    pd.set_option("display.precision", 3)


def write_headline(out_dir: str | Path, headline: Mapping[str, Any]):
    """Write ``headline.json`` (what the batch index shows) into ``out_dir``; return it as a table to display."""
    import pandas as pd  # where used: every grpo-wb command imports this module

    atomic_write_json(Path(out_dir) / HEADLINE_FILE, dict(headline))
    return pd.DataFrame(
        {"value": [_readable(v) for v in headline.values()]}, index=pd.Index(list(headline), name="headline")
    )


def _readable(v: Any) -> str:
    """A headline value as a reader wants it: floats to four significant digits (headline.json keeps them all)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_readable(x) for x in v)
    return str(v)


# ----------------------------------------------------------------------------- the shipped notebooks


def shipped_notebooks() -> dict[str, Path]:
    """The notebooks shipped in the package, by name (the file's stem), in name order."""
    try:
        folder = Path(str(importlib.resources.files(SHIPPED)))
    except ModuleNotFoundError:
        raise UserError(f"{SHIPPED} is not installed (an editable install older than it: run make install)") from None
    return {p.stem: p for p in sorted(folder.glob("*.ipynb"))}


def find_notebook(ref: str | Path) -> Path:
    """``ref`` when it is a file, else the shipped notebook it names (``task_headroom`` or ``task_headroom.ipynb``);
    else a one-line UserError listing the shipped names."""
    p = Path(ref)
    if p.is_file():
        return p
    shipped = shipped_notebooks()
    name = str(ref).removesuffix(".ipynb")
    if name in shipped:
        return shipped[name]
    raise UserError(f"{ref}: no such notebook file, nor a shipped notebook's name (shipped: {', '.join(shipped)})")


def first_markdown_line(path: str | Path) -> str:
    """The first line of a notebook's first Markdown cell, its heading marks dropped ("" when it has none)."""
    for cell in json.loads(Path(path).read_text(encoding="utf-8")).get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = "".join(cell.get("source", []))
            return next((ln.lstrip("#").strip() for ln in text.splitlines() if ln.strip()), "")
    return ""


def check_default_paths(
    notebook: str | Path, declared: Mapping[str, NotebookParameter], given: Collection[str]
) -> None:
    """Every path parameter left at its default names something that is there, else a one-line UserError saying
    which ``-p`` to give: the kernel runs in the notebook's folder, where a default such as
    ``../reports/data/humaneval.jsonl`` is a checkout's file (one that ``make demo`` writes, or one no installed
    package has). Empty defaults (the notebook's "none") and glob patterns pass."""
    nb = Path(notebook)
    folder = nb.resolve().parent
    for name, p in declared.items():
        if name in given or name == OUT_DIR_PARAM or not is_path_parameter(name):
            continue
        try:
            value = ast.literal_eval(p.default)
        except (ValueError, SyntaxError):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v and not any(c in v for c in "*?[") and not (folder / v).exists():
                raise UserError(
                    f"{nb.name}: {name} defaults to {v!r} (relative to {folder}), which is not there: "
                    f"give -p {name} PATH"
                )


# ----------------------------------------------------------------------------- results


@dataclass
class ReportResult:
    """The outcome of one report; written as ``result.json`` in the report directory."""

    name: str
    """Report name (the HTML title)."""
    notebook: str
    """Template that was executed."""
    out_dir: str
    """Report directory."""
    parameters: dict[str, Any]
    """The injected (validated, path-resolved) parameters."""
    status: str = "ok"
    """``ok`` or ``failed``."""
    error_kind: str | None = None
    """``cell_error``, ``timeout``, ``dead_kernel``, ``killed`` or ``error``."""
    error: str | None = None
    """One line: ``ValueError: boom`` or ``cell timed out after 5 s``."""
    failed_cell: int | None = None
    """Execution count (``In [N]``) of the failing cell, when known."""
    seconds: float = 0.0
    """Wall time of execution and rendering."""
    ipynb: str | None = None
    """Executed notebook (absent when execution never started)."""
    html: str | None = None
    """Rendered report."""
    headline: dict[str, Any] = field(default_factory=dict)
    """headline.json, when the notebook wrote one."""
    node: str | None = None
    """The Ray node that ran it (``batch --executor ray``); None when it ran on this machine."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReportResult:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _last_started_cell(nb) -> int | None:
    """Execution count of the last code cell papermill started (the one a timeout or a dead kernel hit)."""
    started = [
        c
        for c in nb.cells
        if c.cell_type == "code" and c.get("metadata", {}).get("papermill", {}).get("status") not in (None, "pending")
    ]
    if not started:
        return None
    return started[-1].get("execution_count")


def classify_failure(exc: BaseException, nb=None) -> tuple[str, str, int | None]:
    """``(error_kind, one-line error, failed cell)`` for an exception from papermill/nbclient."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        return "cell_error", one_line(f"{exc.ename}: {exc.evalue}", first_line=True), exc.exec_count
    cell = _last_started_cell(nb) if nb is not None else None
    if isinstance(exc, CellTimeoutError):
        return "timeout", one_line(str(exc), first_line=True), cell
    if isinstance(exc, DeadKernelError):
        return "dead_kernel", "the kernel died (crash, out of memory or killed)", cell
    return "error", one_line(f"{type(exc).__name__}: {exc}", first_line=True), cell


# ----------------------------------------------------------------------------- HTML


def _parameters_html(declared: Mapping[str, NotebookParameter], injected: Mapping[str, Any]) -> str:
    rows = []
    for name, p in declared.items():
        value = repr(injected[name]) if name in injected else p.default
        mark = "" if name in injected else " (default)"
        rows.append(
            f"<tr><td><code>{html.escape(name)}</code></td><td><code>{html.escape(value)}</code>{mark}</td>"
            f"<td>{html.escape(p.help)}</td></tr>"
        )
    return (
        "<h3>Parameters</h3>\n<table><thead><tr><th>parameter</th><th>value</th><th>meaning</th></tr></thead>"
        "<tbody>" + "".join(rows) + "</tbody></table>"
    )


def prepare_for_html(
    nb, declared: Mapping[str, NotebookParameter], injected: Mapping[str, Any], failure: str | None = None
):
    """A copy of an executed notebook with the parameters as a visible table (and a failure banner)."""
    import nbformat

    nb = copy.deepcopy(nb)
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), 0)
    table = nbformat.v4.new_markdown_cell(_parameters_html(declared, injected))
    table.metadata["tags"] = ["grpo-wb-parameters"]
    nb.cells.insert(idx + 1, table)
    if failure and not any("papermill-error-cell-tag" in c.get("metadata", {}).get("tags", []) for c in nb.cells):
        banner = nbformat.v4.new_markdown_cell(
            f'<span style="color:red; font-size:1.5em;">Report failed: {html.escape(failure)}</span>'
        )
        banner.metadata["tags"] = ["grpo-wb-error"]
        nb.cells.insert(0, banner)
    return nb


# nbconvert's lab template less what it links from a CDN, fetched whenever the page is opened: require.js, MathJax,
# mermaid and the widget manager. No report uses them: the notebooks write no math, no mermaid and no widgets, the
# plots are inline PNGs and the explorer's table embeds its DataTables (itables offline, an ES module). A page that
# fetches nothing works offline and calls no third-party host when it is shared (docs/explorer.md).
OFFLINE_TEMPLATE = "grpo_wb_offline.html.j2"
_OFFLINE_TEMPLATE_SOURCE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""


def render_html(nb, title: str) -> str:
    """Self-contained HTML that fetches nothing: no code cells, no prompts, parameters cells dropped, images already
    inline, no script or stylesheet from elsewhere (:data:`OFFLINE_TEMPLATE`)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    from traitlets.config import Config

    c = Config()
    c.TagRemovePreprocessor.remove_cell_tags = {"parameters", "injected-parameters"}
    c.HTMLExporter.exclude_input = True
    c.HTMLExporter.exclude_input_prompt = True
    c.HTMLExporter.exclude_output_prompt = True
    exp = HTMLExporter(
        config=c,
        template_name="lab",
        template_file=OFFLINE_TEMPLATE,
        extra_loaders=[DictLoader({OFFLINE_TEMPLATE: _OFFLINE_TEMPLATE_SOURCE})],
    )
    exp.register_preprocessor(TagRemovePreprocessor(config=c), enabled=True)
    body, _ = exp.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return body


def shown_relative(text: str, root: str | Path) -> str:
    """Paths under ``root`` (a batch's base folder, else the working directory) shown relative to it: a shared
    report names files as the repository does, not as one machine lays them out."""
    prefix = str(Path(root).resolve()).rstrip("/") + "/"
    if prefix == "/":
        return text
    return re.sub(r"(?<![\w./-])" + re.escape(prefix), "", text)  # a whole path, not the tail of another


# ----------------------------------------------------------------------------- running


def run_report(
    notebook: str | Path,
    out_dir: str | Path,
    parameters: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    raw: bool = False,
    cell_timeout: float = 600.0,
    start_timeout: float = 60.0,
    base_dir: str | Path | None = None,
    kernel_name: str = KERNEL_NAME,
    check_defaults: bool = False,
) -> ReportResult:
    """Validate, execute and render one report; a bad parameter (and, with ``check_defaults``, a default path that is
    not there: :func:`check_default_paths`) raises UserError before anything runs.

    Execution failures (a failing cell, a cell timeout, a dead kernel) do not
    raise: they come back as a ``failed`` :class:`ReportResult`, with the
    partial notebook rendered so the failure can be shared too.
    """
    import papermill as pm

    nb_path = Path(notebook).resolve()
    declared = notebook_parameters(nb_path)
    params = validate_parameters(declared, dict(parameters or {}), raw=raw, notebook=str(notebook))
    if check_defaults:
        check_default_paths(nb_path, declared, params)
    if OUT_DIR_PARAM in params:
        raise UserError(f"{OUT_DIR_PARAM} is set by the runner to the report directory; use --out instead")
    params = resolve_path_values(params, base_dir or os.getcwd())
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if OUT_DIR_PARAM in declared:
        params[OUT_DIR_PARAM] = str(out)
    for stale in (HEADLINE_FILE, RESULT_FILE):
        (out / stale).unlink(missing_ok=True)
    ipynb, html_path = out / ReportFiles.NOTEBOOK, out / ReportFiles.HTML
    title = name or nb_path.stem
    cell_seconds = max(1, math.ceil(cell_timeout))  # nbclient's timeout trait is an int
    res = ReportResult(name=title, notebook=str(nb_path), out_dir=str(out), parameters=params)
    t0 = time.monotonic()
    exc: BaseException | None = None
    try:
        pm.execute_notebook(
            str(nb_path),
            str(ipynb),
            parameters=params,
            kernel_name=kernel_name,
            cwd=str(nb_path.parent),
            progress_bar=False,
            log_output=False,
            start_timeout=int(math.ceil(start_timeout)),
            execution_timeout=cell_seconds,
        )
    except Exception as e:  # every execution failure becomes a failed result
        exc = e
    nb = None
    if ipynb.exists():
        import nbformat

        nb = nbformat.read(str(ipynb), as_version=4)
        res.ipynb = str(ipynb)
    if exc is not None:
        res.status = "failed"
        res.error_kind, res.error, res.failed_cell = classify_failure(exc, nb)
        if res.error_kind == "timeout":
            res.error = f"a cell timed out after {cell_seconds} s"
        where = f" in cell In [{res.failed_cell}]" if res.failed_cell is not None else ""
        res.error = f"{res.error}{where}"
    if nb is not None:
        try:
            page = render_html(prepare_for_html(nb, declared, params, res.error), title)
            atomic_write_text(html_path, shown_relative(page, base_dir or os.getcwd()))
            res.html = str(html_path)
        except Exception as e:  # rendering must not hide the execution outcome
            if res.ok:
                res.status, res.error_kind = "failed", "error"
                res.error = f"HTML rendering failed: {type(e).__name__}: {one_line(str(e), first_line=True)}"
    hp = out / HEADLINE_FILE
    if hp.exists():
        try:
            res.headline = json.loads(hp.read_text(encoding="utf-8"))
        except ValueError:
            res.headline = {}
    res.seconds = round(time.monotonic() - t0, 3)
    atomic_write_json(out / RESULT_FILE, res.to_json())
    return res
