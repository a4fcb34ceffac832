"""A rendered report in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
``make test`` installs as it installs bubblewrap) driven by selenium, with every host unresolvable, opens the
rollout explorer's HTML from a file, filters the table to ``timeout``, opens a task, finds the failing test's
diff, and follows deep links. Without Chromium this test fails, naming what is missing."""

from __future__ import annotations

import shutil

import pytest
from conftest import write_jsonl

from grpo_wb.cli.main import main
from grpo_wb.tasks.records import Task, TestCase, write_tasks

pytestmark = [pytest.mark.browser, pytest.mark.notebooks, pytest.mark.slow]

NOTEBOOK = "notebooks/rollout_explorer.ipynb"


def _rows():
    io_fail = {
        "test": "t0",
        "kind": "stdio",
        "error": "wrong output",
        "input": "21\n",
        "expected": "42\n21\n",
        "actual": "42\n22\n",
    }
    val_fail = {
        "test": "assert_0",
        "kind": "values",
        "error": "AssertionError",
        "code": "assert candidate(2) == 4",
        "actual": "5",
    }

    def r(tid, i, status, failure=None, error=""):
        return {
            "task_id": tid,
            "completion_id": f"{tid}#{i}",
            "sample_index": i,
            "status": status,
            "passed": status == "pass",
            "reward": float(status == "pass"),
            "error": error,
            "completion": f"# sample {i} of {tid}\nprint({i})\n",
            "duration_s": 0.01,
            "extraction": {"mode": "fenced", "rule": "last_python_block"},
            "failure": failure or {},
        }

    return [
        r("t/io", 0, "fail", io_fail, "wrong output"),
        r("t/io", 1, "pass"),
        r("t/hang", 0, "timeout", error="timed out"),
        r("t/hang", 1, "timeout", error="timed out"),
        r("t/value", 0, "fail", val_fail, "AssertionError"),
        r("t/value", 1, "pass"),
        *(r("t/easy", i, "pass") for i in range(3)),
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    write_jsonl(d / "scored.jsonl", _rows())
    write_tasks(
        d / "tasks.jsonl",
        [
            Task(t, f"Prompt of {t}.", "", (TestCase("t0", type="stdio", output="x\n"),))
            for t in ("t/io", "t/hang", "t/value", "t/easy")
        ],
    )
    assert (
        main(
            [
                "report",
                NOTEBOOK,
                "--out",
                str(d / "rep"),
                "-p",
                "input_path",
                str(d / "scored.jsonl"),
                "-p",
                "tasks_file",
                str(d / "tasks.jsonl"),
            ]
        )
        == 0
    )
    return d / "rep" / "report.html"


@pytest.fixture(scope="module")
def browser():
    missing = [b for b in ("chromium", "chromedriver") if shutil.which(b) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not found: `make test` installs Debian's chromium and chromium-driver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ):  # offline: no host resolves
        opts.add_argument(a)
    d = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    yield d
    d.quit()


def _open(d, url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    d.get("about:blank")
    d.get(url)
    WebDriverWait(d, 60).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".wbx table.dataTable tbody tr")))


def _shown_groups(d):
    from selenium.webdriver.common.by import By

    return [g.get_attribute("data-task") for g in d.find_elements(By.CSS_SELECTOR, ".wbx-group") if g.is_displayed()]


def _table_tasks(d):
    from selenium.webdriver.common.by import By

    return [a.text for a in d.find_elements(By.CSS_SELECTOR, ".wbx table.dataTable tbody a.wbx-task")]


def test_filter_to_timeout_open_a_task_read_its_diff_and_follow_deep_links(report, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d = browser
    url = report.as_uri()
    _open(d, url)
    assert sorted(_table_tasks(d)) == ["t/easy", "t/hang", "t/io", "t/value"]
    assert _shown_groups(d) == []

    search = d.find_element(By.CSS_SELECTOR, ".wbx .dt-search input")
    search.send_keys("timeout")
    WebDriverWait(d, 10).until(lambda _: _table_tasks(d) == ["t/hang"])
    d.find_element(By.CSS_SELECTOR, ".wbx a.wbx-task[data-task='t/hang']").click()
    assert _shown_groups(d) == ["t/hang"] and d.current_url.endswith("#task=t/hang")
    cards = d.find_elements(By.CSS_SELECTOR, ".wbx-group[data-task='t/hang'] .wbx-card")
    assert [c.get_attribute("data-status") for c in cards] == ["timeout", "timeout"]

    search.clear()
    search.send_keys("t/io")
    WebDriverWait(d, 10).until(lambda _: _table_tasks(d) == ["t/io"])
    d.find_element(By.CSS_SELECTOR, ".wbx a.wbx-task[data-task='t/io']").click()
    assert _shown_groups(d) == ["t/io"]
    dels = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".wbx-group[data-task='t/io'] .wbx-diff .wbx-del")]
    ins = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".wbx-group[data-task='t/io'] .wbx-diff .wbx-ins")]
    assert (dels, ins) == (["- 21"], ["+ 22"])

    _open(d, url + "#task=t/value")  # a deep link opens one task on load
    assert _shown_groups(d) == ["t/value"]
    value = d.find_element(By.CSS_SELECTOR, ".wbx-group[data-task='t/value'] .wbx-kv").text
    assert "assert candidate(2) == 4" in value and "actual 5" in value

    _open(d, url + "#task=t/none")
    missing = d.find_element(By.CSS_SELECTOR, ".wbx-missing")
    assert missing.is_displayed() and missing.text == "This report has no task t/none."
    assert _shown_groups(d) == []
