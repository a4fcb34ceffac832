"""The rollout explorer: a table of tasks to sort, filter and search, and each task's group of completions.

It renders to one self-contained HTML fragment that works the same in JupyterLab and in a report that
``grpo-wb report`` / ``batch`` rendered, offline, with no kernel and no server: the table is itables'
DataTables with its library embedded (``connected=False``), the group views are HTML rendered here (code
highlighted by Pygments, a stdio test's expected and actual output as a diff), and a few lines of glue open the
group of the task clicked, or named in the address (``report.html#task=HumanEval/32``).

A group view shows at most ``per_task`` completions (one per way the task fails first: see
:func:`grpo_wb.runs.explore.showcase_rows`), so a report over 100 samples per task stays a few megabytes; the notebook
reads any other task's rows from the results file's index.
"""

from __future__ import annotations

import difflib
import html
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
from IPython.display import HTML
from itables import options as itables_options
from itables import to_html_datatable
from itables.javascript import generate_init_offline_itables_html
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from grpo_wb.runs.explore import (
    Rollouts,
    describe_failure,
    open_rollouts,
    sample_label,
    showcase_rows,
    task_records,
    ways,
)

PER_TASK = 8
"""Completions shown per task in a rendered group view."""
MAX_WAYS = 12
"""Ways to fail listed per task."""
COLUMNS = {
    "task": "task",
    "category": "category",
    "pass_rate": "pass rate",
    "passed": "passed",
    "samples": "samples",
    "statuses": "statuses",
    "top_failure": "largest failure cluster",
    "same_way": "all fail one way",
    "prompt": "prompt",
}
_FORMATTER = HtmlFormatter(cssclass="wbx-code", nowrap=False)
# JupyterLab's stylesheet right-aligns every table cell (for numbers): text here reads from the left

CSS = """
.wbx {font-size: 13px}
.wbx-notes {color: #8a4b00}
.wbx-group {border-top: 2px solid #888; margin-top: 1em; padding-top: .5em}
.wbx-cards {display: grid; grid-template-columns: repeat(auto-fill, minmax(440px, 1fr)); gap: 8px}
.wbx-card {border: 1px solid #ccc; border-left: 5px solid #999; border-radius: 3px; padding: 4px 8px;
  overflow: auto; max-height: 640px}
.wbx-card[data-status="pass"] {border-left-color: #2a8a2a}
.wbx-card[data-status="fail"] {border-left-color: #c0392b}
.wbx-card[data-status="error"] {border-left-color: #8e44ad}
.wbx-card[data-status="timeout"] {border-left-color: #d68910}
.wbx-head b {text-transform: uppercase}
.wbx pre {white-space: pre-wrap; margin: 2px 0; font-size: 12px}
.wbx-diff .wbx-del {background: #fde2e2; display: block}
.wbx-diff .wbx-ins {background: #dcf5dc; display: block}
.wbx-kv th {text-align: left; vertical-align: top; padding-right: 8px}
.wbx table td, .wbx table th {text-align: left !important; vertical-align: top}
.wbx table td.dt-type-numeric, .wbx table th.dt-type-numeric {text-align: right !important}
.wbx-ways td, .wbx-ways th {padding: 1px 6px}
""" + _FORMATTER.get_style_defs(".wbx-code")

GLUE = """
(function () {
  const root = document.getElementById("%(root)s");
  const missing = root.querySelector(".wbx-missing");
  function open(id, scroll) {
    let found = null;
    root.querySelectorAll(".wbx-group").forEach(g => {
      const on = g.dataset.task === id; g.hidden = !on; if (on) found = g; });
    missing.hidden = !!found || !id;
    missing.textContent = found || !id ? "" : "This report has no task " + id + ".";
    if (found && scroll) found.scrollIntoView();
  }
  function fromHash(scroll) {
    const m = /(?:^#|&)task=([^&]*)/.exec(location.hash);
    if (m) open(decodeURIComponent(m[1]), scroll);
  }
  root.addEventListener("click", e => {
    const a = e.target.closest("a.wbx-task");
    if (!a) return;
    e.preventDefault();
    const id = a.dataset.task;
    open(id, true);
    if (!document.querySelector(".jp-LabShell")) history.replaceState(null, "", "#task=" + encodeURIComponent(id).replace(/%%2F/g, "/"));
  });
  window.addEventListener("hashchange", () => fromHash(true));
  fromHash(true);
})();
"""


def task_link(task_id: str) -> str:
    """The task's deep link within a report: ``#task=ID``."""
    return "#task=" + quote(task_id, safe="/")


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _code_span(text: str) -> str:
    return f"<code>{_e(text)}</code>" if text else ""


def _output(row: dict[str, Any]) -> str:
    actual = (row.get("failure") or {}).get("actual")
    return "" if actual is None else " ".join(str(actual).split())


def _code(text: str) -> str:
    return highlight(text, PythonLexer(), _FORMATTER)


def _diff(expected: str, actual: str) -> str:
    """Expected vs actual output, line by line (``-`` expected, ``+`` actual)."""
    lines = []
    for d in difflib.ndiff(expected.splitlines(), actual.splitlines()):
        if d.startswith("? "):
            continue
        cls = {"- ": "wbx-del", "+ ": "wbx-ins"}.get(d[:2], "")
        lines.append(f'<span class="{cls}">{_e(d)}</span>' if cls else _e(d) + "\n")
    return f'<pre class="wbx-diff">{"".join(lines)}</pre>'


def failure_html(row: dict[str, Any]) -> str:
    """The first failing test: a value test's call and actual value, or a stdio test's input and diff."""
    f = describe_failure(row)
    if not f:
        return ""
    parts = [f'<div class="wbx-failure"><b>{_e(f["kind"])}</b>']
    if f.get("test"):
        parts.append(f" on test <code>{_e(f['test'])}</code>")
    if f.get("error"):
        parts.append(f'<pre class="wbx-error">{_e(f["error"])}</pre>')
    if "input" in f:
        parts.append(f'<div>input</div><pre class="wbx-input">{_e(f["input"])}</pre>')
    if "code" in f:
        parts.append(
            f'<table class="wbx-kv"><tr><th>test</th><td><code>{_e(f["code"])}</code></td></tr>'
            + (f"<tr><th>actual</th><td><code>{_e(f['actual'])}</code></td></tr>" if "actual" in f else "")
            + "</table>"
        )
    elif "expected" in f and "actual" in f:
        parts.append("<div>expected (−) vs actual (+)</div>" + _diff(str(f["expected"]), str(f["actual"])))
    elif "expected" in f:
        parts.append(f"<div>expected</div><pre>{_e(f['expected'])}</pre>")
    parts.append("</div>")
    return "".join(parts)


def _num(v: Any, fmt: str) -> str:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "–"


def card_html(row: dict[str, Any]) -> str:
    """One completion: status, reward, advantage, duration, extraction; its code; how it failed; stderr."""
    ext = row.get("extraction") or {}
    rule = "/".join(str(x) for x in (ext.get("mode") or row.get("extraction_mode"), ext.get("rule")) if x)
    status = str(row.get("status", ""))
    head = (
        f'<div class="wbx-head">{_e(sample_label(row))} <b class="wbx-status">{_e(status)}</b> · reward '
        f"{_num(row.get('reward'), '.3g')} · advantage {_num(row.get('advantage'), '+.3f')} · "
        f"{_num(row.get('duration_s'), '.3f')} s"
        + (f" · extraction {_e(rule)}" if rule else "")
        + (f" · {_e(row['tests_passed'])}/{_e(row['tests_total'])} tests" if "tests_total" in row else "")
        + "</div>"
    )
    text = row.get("completion")
    code = _code(text) if isinstance(text, str) else '<p class="wbx-notes">no completion text recorded</p>'
    stderr = str(row.get("stderr_tail") or "")
    return (
        f'<div class="wbx-card" data-status="{_e(status)}" data-completion="{_e(row.get("completion_id", ""))}">'
        + head
        + code
        + failure_html(row)
        + (f'<details><summary>stderr</summary><pre class="wbx-stderr">{_e(stderr)}</pre></details>' if stderr else "")
        + "</div>"
    )


def group_html(ro: Rollouts, record: dict[str, Any], per_task: int = PER_TASK) -> str:
    """One task's section: its counts, its prompt, its failure clusters and up to ``per_task`` completions."""
    tid = record["task_id"]
    rows = ro.group(tid)
    shown = showcase_rows(rows, per_task)
    failing = ways(rows)
    table = "".join(
        f"<tr><td>{k}</td><td>{_e(kind)}</td><td><code>{_e(shape)}</code></td><td>{_e(test)}</td>"
        f"<td>{_code_span(_cut(_output(rows[i]), 80))}</td><td>{_e(sample_label(rows[i]))}</td></tr>"
        for (kind, shape, test, _), k, i in failing[:MAX_WAYS]
    )
    prompt = ro.prompts.get(tid)
    return (
        f'<section class="wbx-group" data-task="{_e(tid)}" hidden>'
        f"<h3>{_e(tid)} <small>({_e(record['category'])})</small></h3>"
        f"<p>{record['passed']} of {record['samples']} passed · {_e(record['statuses'])}. "
        f"{len(shown)} of {record['samples']} completions shown"
        + (
            (
                ": a pass, one per way it fails, then in order"
                if record["passed"]
                else ": one per way it fails, then in order"
            )
            if len(shown) < record["samples"]
            else ""
        )
        + (
            f" (chosen from the first {len(rows):,}; the ways to fail below count those)"
            if len(rows) < record["samples"]
            else ""
        )
        + ".</p>"
        + (f'<p class="wbx-notes">{_e(record["same_way"])}</p>' if record["same_way"] else "")
        + (f"<details><summary>prompt</summary><pre>{_e(prompt)}</pre></details>" if prompt else "")
        + (
            f"<div>{len(failing)} ways to fail"
            + (f" (the {MAX_WAYS} most common)" if len(failing) > MAX_WAYS else "")
            + ':</div><table class="wbx-ways"><tr><th>rows</th><th>kind</th><th>message</th><th>first failing test'
            f"</th><th>output given</th><th>e.g.</th></tr>{table}</table>"
            if failing
            else ""
        )
        + f'<div class="wbx-cards">{"".join(card_html(r) for r in shown)}</div></section>'
    )


def table_frame(records: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The task table as shown: task ids as links that open their group, every other text escaped (the table
    takes HTML, and errors and prompts hold ``<lambda>``, ``a<b`` or ``</script>``)."""
    df = pd.DataFrame(list(records))
    df["task"] = [
        f'<a class="wbx-task" data-task="{_e(t)}" href="{_e(task_link(t))}">{_e(t)}</a>' for t in df["task_id"]
    ]
    for col in ("category", "statuses", "top_failure", "same_way", "prompt"):  # text from the rows: shown as text
        df[col] = [_e(v) for v in df[col]]
    df["pass_rate"] = df["pass_rate"].round(3)
    cols = [c for c in COLUMNS if c in df and (c != "prompt" or df[c].astype(bool).any())]
    return df[cols].rename(columns=COLUMNS)


def render(ro: Rollouts, *, per_task: int = PER_TASK, base: str | Path | None = None) -> str:
    """The explorer over ``ro`` as one self-contained HTML fragment (``base``: show the file's path relative to
    it)."""
    root = f"wbx-{uuid.uuid4().hex[:12]}"  # unique in a page that holds outputs of several sessions
    records = sorted(task_records(ro), key=lambda r: (r["pass_rate"], r["task_id"]))
    shown = ro.path
    if base is not None:
        try:
            shown = ro.path.resolve().relative_to(Path(base).resolve())
        except ValueError:
            shown = Path(ro.path.name)
    table = to_html_datatable(
        table_frame(records),
        connected=False,
        allow_html=True,
        showIndex=False,
        maxBytes=0,
        table_id=f"{root}-t",
        classes="display compact",
        order=[],
        pageLength=25,
        layout={"topStart": "info", "topEnd": "search", "bottomStart": "pageLength", "bottomEnd": "paging"},
    )
    notes = "".join(f'<p class="wbx-notes">{_e(n)}</p>' for n in ro.notes)
    return (
        generate_init_offline_itables_html(itables_options.dt_bundle)
        + f'<div class="wbx" id="{root}"><style>{CSS}</style>{notes}'
        f"<p>{len(records):,} tasks, {ro.rows:,} completions from <code>{_e(shown)}</code>. Sort, filter or search the "
        "table; a task's name opens its completions below (and this page's address "
        "<code>#task=ID</code> opens one directly).</p>"
        + table
        + '<p class="wbx-missing wbx-notes" hidden></p>'
        + "".join(group_html(ro, r, per_task) for r in records)
        + f"<script>{GLUE % {'root': root}}</script></div>"
    )


def view(ro: Rollouts, *, per_task: int = PER_TASK, base: str | Path | None = None):
    """The explorer over opened rollouts, for a notebook cell (an ``IPython.display.HTML``); the one-line notes
    (rows without completions, tasks missing from the task file) are printed too."""
    for note in ro.notes:
        print(note)
    return HTML(render(ro, per_task=per_task, base=base))


def show(
    source: str | Path,
    tasks_file: str | Path | None = None,
    *,
    per_task: int = PER_TASK,
    base: str | Path | None = None,
):
    """The explorer over a results file or run directory (see :func:`view`)."""
    return view(open_rollouts(source, tasks_file or None), per_task=per_task, base=base)
