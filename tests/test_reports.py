"""The strict runner: parameter validation (no kernel), HTML rendering, and the failure paths (with a kernel)."""

from __future__ import annotations

import json

import pytest
from nbfixtures import assert_shareable_html, fetched, html_body, make_notebook

from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.reports import notebooks as reports

# nbformat is imported where it is used: importing it builds jsonschema's format checkers, some 3 s of every pytest
# process's collection

PARAMS = (
    'n_prompts: int = 2  # prompts\nrate: float = 0.5  # a rate\nname: str = "x"  # a name\n'
    "flag: bool = False  # a flag\nks: list = [1, 2]  # pass@k values\nopts: dict = {}  # options\n"
    'data_file: str = ""  # a path\n'
)


@pytest.fixture
def tiny(tmp_path):
    return make_notebook(tmp_path / "nb" / "tiny.ipynb", PARAMS, ["print(n_prompts * 2)"])


def test_declared_parameters_carry_types_and_help(tiny):
    declared = reports.notebook_parameters(tiny)
    assert {k: p.type for k, p in declared.items()} == {
        "n_prompts": "int",
        "rate": "float",
        "name": "str",
        "flag": "bool",
        "ks": "list",
        "opts": "dict",
        "data_file": "str",
    }
    assert declared["ks"].help == "pass@k values" and declared["n_prompts"].default == "2"


@pytest.mark.parametrize(
    "params,problem",
    [
        ("x = 3  # no annotation\n", "has type 'None'"),
        ("x: str | None = None  # union\n", "not visible to papermill"),
        ("x: int = 3  # empty = none\n", "not visible to papermill"),  # papermill skips lines with two '='
        ("x: int = 3\n", "no help comment"),
        ("x: tuple = (1,)  # a tuple\n", "has type 'tuple'"),
    ],
)
def test_template_problems_catch_what_papermill_would_drop(tmp_path, params, problem):
    nb = make_notebook(tmp_path / "t.ipynb", params, [])
    probs = reports.template_problems(nb)
    assert probs and problem in probs[0]
    with pytest.raises(UserError):
        reports.notebook_parameters(nb)


def test_template_needs_one_parameters_cell_and_python3(tmp_path):
    import nbformat

    nb = make_notebook(tmp_path / "k.ipynb", "x: int = 1  # x\n", [], kernel="grpo-wb")
    assert "kernelspec" in reports.template_problems(nb)[0]
    raw = nbformat.read(str(nb), as_version=4)
    raw.cells[1].metadata["tags"] = []
    nbformat.write(raw, str(nb))
    assert "exactly one cell tagged 'parameters'" in reports.template_problems(nb)[0]


@pytest.mark.parametrize(
    "name,raw,value",
    [
        ("n_prompts", "8", 8),
        ("rate", "1e-3", 0.001),
        ("rate", "3", 3.0),
        ("flag", "true", True),
        ("flag", "No", False),
        ("name", "8", "8"),
        ("ks", "[1, 5, 10]", [1, 5, 10]),
        ("opts", "{a: 1}", {"a": 1}),
    ],
)
def test_cli_values_are_coerced_to_the_declared_type(tiny, name, raw, value):
    out = reports.validate_parameters(reports.notebook_parameters(tiny), {name: raw}, raw=True)
    assert out[name] == value and type(out[name]) is type(value)


@pytest.mark.parametrize(
    "name,raw",
    [
        ("n_prompts", "8.5"),
        ("n_prompts", "abc"),
        ("rate", "nan"),
        ("flag", "maybe"),
        ("ks", "3"),
        ("opts", "[1]"),
        ("ks", "[1,"),
    ],
)
def test_mistyped_cli_values_are_errors(tiny, name, raw):
    with pytest.raises(UserError, match=f"parameter '{name}' expects"):
        reports.validate_parameters(reports.notebook_parameters(tiny), {name: raw}, raw=True)


def test_typed_values_are_checked_strictly(tiny):
    declared = reports.notebook_parameters(tiny)
    assert reports.validate_parameters(declared, {"rate": 1})["rate"] == 1.0
    for name, v in (("n_prompts", True), ("n_prompts", "3"), ("name", 3), ("ks", "1,2"), ("flag", 1)):
        with pytest.raises(UserError, match="expects"):
            reports.validate_parameters(declared, {name: v})


def test_unknown_parameter_is_an_error_with_a_suggestion(tiny):
    with pytest.raises(UserError, match=r"has no parameter 'n_promts'; did you mean 'n_prompts'\?"):
        reports.validate_parameters(reports.notebook_parameters(tiny), {"n_promts": "3"}, raw=True)


def test_path_parameters_are_resolved_against_the_caller(tmp_path):
    vals = {
        "data_file": "data/x.jsonl",
        "run_dirs": ["a/run", "/abs/run", "r*/run"],
        "name": "rel/not/a/path",
        "empty_dir": "",
    }
    out = reports.resolve_path_values(vals, tmp_path)
    assert out["data_file"] == str(tmp_path / "data" / "x.jsonl")
    assert out["run_dirs"] == [str(tmp_path / "a" / "run"), "/abs/run", str(tmp_path / "r*" / "run")]
    assert out["name"] == "rel/not/a/path" and out["empty_dir"] == ""


def test_run_report_refuses_before_executing(tiny, tmp_path):
    with pytest.raises(UserError, match="has no parameter"):
        reports.run_report(tiny, tmp_path / "out", {"nope": 1})
    with pytest.raises(UserError, match="out_dir is set by the runner"):
        nb = make_notebook(tmp_path / "o.ipynb", 'out_dir: str = ""  # out\n', [])
        reports.run_report(nb, tmp_path / "out", {"out_dir": "x"})
    assert not (tmp_path / "out" / "report.ipynb").exists()


def test_cli_report_unknown_parameter_is_one_line(tiny, tmp_path, capsys):
    rc = main(["report", str(tiny), "-p", "n_promts", "3", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("grpo-wb: error:") and "did you mean" in err[0]
    rc = main(["report", str(tiny), "-p", "n_prompts", "many", "--out", str(tmp_path / "o")])
    assert rc == 1 and "expects int, got 'many'" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.ipynb")]) == 1
    assert "no such notebook" in capsys.readouterr().err


def _executed_like(tmp_path):
    """A notebook as papermill leaves it: parameters + injected cells, a code cell with a PNG output."""
    import nbformat

    nb = nbformat.read(str(make_notebook(tmp_path / "r.ipynb", "n: int = 1  # n\n", ["print(n)"])), as_version=4)
    inj = nbformat.v4.new_code_cell("# Parameters\nn = 5\n")
    inj.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(2, inj)
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    nb.cells[-1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})]
    return nb


def test_render_html_hides_code_and_shows_parameters(tmp_path):
    nb = _executed_like(tmp_path)
    declared = {"n": reports.NotebookParameter("n", "int", "1", "n")}
    html = reports.render_html(reports.prepare_for_html(nb, declared, {"n": 5}), "My report")
    assert "<title>My report</title>" in html
    assert_shareable_html(html, min_images=1)
    body = html_body(html)
    assert "print(n)" not in body and "# Parameters" not in body
    assert "<code>5</code>" in body
    failed = reports.render_html(reports.prepare_for_html(nb, declared, {}, failure="boom in cell 3"), "x")
    assert "Report failed: boom in cell 3" in failed and "(default)" in failed


def test_a_rendered_report_fetches_nothing(tmp_path):
    """docs/explorer.md: a report is one HTML file that fetches nothing when it is opened. nbconvert's lab template
    links require.js, MathJax and mermaid from a CDN; render_html's leaves them out. The control: the stock
    template's page of the same notebook, which the same check names them in."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = _executed_like(tmp_path)
    nb.cells.append(
        nbformat.v4.new_markdown_cell("A link to read, not a fetch: [TRL](https://github.com/huggingface/trl)")
    )
    declared = {"n": reports.NotebookParameter("n", "int", "1", "n")}
    html = reports.render_html(reports.prepare_for_html(nb, declared, {"n": 5}), "My report")
    assert fetched(html) == [], fetched(html)
    assert "<script src" not in html and 'href="https://github.com/huggingface/trl"' in html
    stock = fetched(HTMLExporter(template_name="lab").from_notebook_node(nb)[0])
    for what in ("require.js", "mathjax", "mermaid"):
        assert any(what in u.lower() for u in stock), (what, stock)


def test_paths_under_the_base_folder_are_shown_relative_to_it(tmp_path):
    page = f"<td>{tmp_path}/reports/data/humaneval.jsonl</td><td>/elsewhere/x.jsonl</td><td>{tmp_path}x/y</td>"
    assert (
        reports.shown_relative(page, tmp_path)
        == f"<td>reports/data/humaneval.jsonl</td><td>/elsewhere/x.jsonl</td><td>{tmp_path}x/y</td>"
    )
    assert reports.shown_relative(page, "/") == page


@pytest.mark.notebooks
def test_a_rendered_report_names_files_relative_to_the_folder_it_ran_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nb = make_notebook(
        tmp_path / "nb" / "p.ipynb",
        'data_file: str = ""  # a path\nout_dir: str = ""  # out\n',
        ["print('completions from:', data_file)"],
    )
    (tmp_path / "data").mkdir()
    res = reports.run_report(nb, tmp_path / "out", {"data_file": "data/s.jsonl"})
    page = html_body((tmp_path / "out" / "report.html").read_text())
    assert res.ok and "completions from: data/s.jsonl" in page and str(tmp_path) not in page


# ----------------------------------------------------------------------------- with a kernel


@pytest.mark.notebooks
def test_failing_cell_via_cli(tmp_path, capsys):
    import nbformat

    nb = make_notebook(
        tmp_path / "fail.ipynb", "n: int = 1  # n\n", ["x = n + 1", "raise ValueError(f'boom {x}')", "print('never')"]
    )
    out = tmp_path / "rep"
    rc = main(["report", str(nb), "-p", "n", "41", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert rc == 1 and err.startswith("grpo-wb: error:") and "ValueError: boom 42" in err
    res = reports.ReportResult.from_json(json.loads((out / "result.json").read_text()))
    assert (
        res.status == "failed" and res.error_kind == "cell_error" and res.failed_cell == 4
    )  # In [4]: after the injected cell
    html = (out / "report.html").read_text()
    assert "boom 42" in html_body(html) and "An Exception was encountered" in html_body(html)
    executed = nbformat.read(str(out / "report.ipynb"), as_version=4)
    assert executed.metadata.papermill.exception is True


@pytest.mark.notebooks
@pytest.mark.slow
def test_cell_timeout_is_a_failure_not_a_hang(tmp_path):
    """A cell that sleeps 60 s with a 2 s cell timeout: a timeout that did not fire would end in "ok"."""
    nb = make_notebook(tmp_path / "slow.ipynb", "n: int = 1  # n\n", ["import time\ntime.sleep(60)"])
    res = reports.run_report(nb, tmp_path / "rep", cell_timeout=2)
    assert res.status == "failed" and res.error_kind == "timeout" and "timed out after 2 s" in res.error
    assert res.failed_cell == 2
    assert "Report failed" in (tmp_path / "rep" / "report.html").read_text()


@pytest.mark.notebooks
def test_dead_kernel_is_a_failure(tmp_path):
    nb = make_notebook(
        tmp_path / "dead.ipynb", "n: int = 1  # n\n", ["import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"]
    )
    res = reports.run_report(nb, tmp_path / "rep", cell_timeout=30)
    assert res.status == "failed" and res.error_kind == "dead_kernel" and "kernel died" in res.error


# ----------------------------------------------------------------------------- one declaration per parameter


def test_config_backed_notebook_parameters_are_declared_by_their_dataclass():
    from grpo_wb.cli.notebook_params import CONFIG_PARAMETERS, NOTEBOOKS, parameter_problems

    for name in CONFIG_PARAMETERS:
        assert parameter_problems(NOTEBOOKS / name) == [], name


def test_a_drifted_parameter_line_is_reported_and_synced(tmp_path):
    import shutil

    import nbformat

    from grpo_wb.cli.notebook_params import NOTEBOOKS, parameter_problems, sync_parameters

    nb_path = tmp_path / "smoke_experiment.ipynb"
    shutil.copy(NOTEBOOKS / "smoke_experiment.ipynb", nb_path)
    nb = nbformat.read(str(nb_path), as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace("group_size: int = 4  #", "group_size: float = 4  # old help;")
    nbformat.write(nb, str(nb_path))
    (problem,) = parameter_problems(nb_path)
    assert "group_size: float = 4" in problem and 'SmokeConfig declares "group_size: int = 4  # G,' in problem
    assert sync_parameters(nb_path) and parameter_problems(nb_path) == []
    assert (
        "group_size: int = 4  # G, completions per prompt" in nbformat.read(str(nb_path), as_version=4).cells[1].source
    )
