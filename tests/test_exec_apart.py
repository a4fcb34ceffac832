"""Exec tests are decided outside the candidate's process (issue 25, point 6).

A task with exec tests or a ``check`` runs as two processes: the tester (tests, expected values, the event
channel) and the candidate's process (a fresh interpreter that loads the program and answers calls by value).
Each attack below is a wrong answer that knows the harness; each asserts one property: it gets no reward, and the
scorer still scores the next completion right. The controls after them show that what tests legitimately do with
the candidate's objects still works across the two processes.
"""

import json
import textwrap

import pytest
from hostile import score_one as score

from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits, run_program
from grpo_wb.scoring.scorer import Scorer
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.sandbox]

# the answers are 918273645 + i: numbers no completion below knows
LOOP = "for i in range(3):\n    assert candidate(i) == 918273645 + i"
CHECK = "def check(candidate):\n    assert candidate(0) == 918273645\n    assert candidate(2) == 918273647\n"
EXEC = Task(
    task_id="apart/exec",
    prompt="def magic(i):\n",
    entry_point="magic",
    tests=(TestCase(name="loop", code=LOOP),),
    check=CHECK,
)
# a value test and an exec test in one task: the check holds the value test's expected value too
MIXED = Task(
    task_id="apart/mixed",
    prompt="def magic(i):\n",
    entry_point="magic",
    tests=(TestCase(name="value", code="assert candidate(1) == 918273646"), TestCase(name="loop", code=LOOP)),
    check=CHECK,
)
GOOD = "def magic(i):\n    return 918273645 + i\n"
WRONG = "def magic(i):\n    return 0\n"


@pytest.fixture(scope="module")
def scorer():
    sc = Scorer(SandboxLimits(timeout=5.0), RewardConfig("partial"), workers=2, cache=False)
    yield sc
    sc.close()


def assert_no_reward(scorer, r):
    assert r.reward == 0.0 and r.tests_passed == 0 and not r.passed, (r.status, r.error, r.tests_passed)
    for task in (EXEC, MIXED):  # the scorer is alive and still right
        assert score(scorer, task, GOOD).status == "pass"
        assert score(scorer, task, WRONG).status == "fail"


def test_controls(scorer):
    for task in (EXEC, MIXED):
        good, wrong = score(scorer, task, GOOD), score(scorer, task, WRONG)
        assert (good.status, good.reward) == ("pass", 1.0), good
        assert (wrong.status, wrong.reward) == ("fail", 0.0), wrong


# ----------------------------------------------------------------------------- forging the event stream


def forged(task):
    """Code that writes the events of a pass for every exec test of ``task`` (and its check) on the fd ``_FD``."""
    lines = [{"event": "loaded"}] + [
        {"event": "test", "index": i, "ok": True, "seconds": 0.0} for i, t in enumerate(task.tests) if "for" in t.code
    ]
    lines += [{"event": "check", "ok": True}, {"event": "done"}]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    return f"import os\n_LINES = {data!r}\n"


@pytest.mark.parametrize("task", [EXEC, MIXED], ids=["exec", "mixed"])
def test_forged_events_on_every_descriptor_at_import(scorer, task):
    # the forgery that passed every exec test: the event channel was descriptor 3 of the harness's process
    r = score(
        scorer,
        task,
        forged(task) + "for fd in range(3, 256):\n    try:\n        os.write(fd, _LINES)\n"
        "    except OSError:\n        pass\nos._exit(0)\n",
    )
    assert_no_reward(scorer, r)


@pytest.mark.parametrize("task", [EXEC, MIXED], ids=["exec", "mixed"])
def test_forged_events_at_call_time(scorer, task):
    r = score(
        scorer,
        task,
        forged(task) + "def magic(i):\n    for fd in range(3, 256):\n        try:\n"
        '            os.write(fd, _LINES[len(b\'{"event": "loaded"}\\n\'):])\n'
        "        except OSError:\n            pass\n    os._exit(0)\n",
    )
    assert_no_reward(scorer, r)


def test_forged_events_through_proc(scorer):
    # every descriptor of every process it can see, opened through /proc (the tester's are not its to open)
    r = score(
        scorer,
        EXEC,
        forged(EXEC)
        + textwrap.dedent("""
        def magic(i):
            for pid in os.listdir('/proc'):
                if pid.isdigit() and int(pid) != os.getpid():
                    for fd in range(0, 16):
                        try:
                            w = os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY)
                            os.write(w, _LINES[len(b'{"event": "loaded"}\\n'):])
                        except OSError:
                            pass
            os._exit(0)
        """),
    )
    assert_no_reward(scorer, r)


def test_the_tester_cannot_be_traced_or_written(scorer):
    # the candidate (same uid as the tester) reports what it could do to its parent: nothing
    r = score(
        scorer,
        EXEC,
        textwrap.dedent("""
        import ctypes, os
        def magic(i):
            libc = ctypes.CDLL(None, use_errno=True)
            seen = [f'ptrace={libc.ptrace(16, os.getppid(), 0, 0)}']  # PTRACE_ATTACH
            for what in ('mem', 'fd/3'):
                try:
                    os.close(os.open(f'/proc/{os.getppid()}/{what}', os.O_WRONLY))
                    seen.append(f'{what}=opened')
                except OSError as e:
                    seen.append(f'{what}={e.errno}')
            raise RuntimeError('|'.join(seen))
        """),
    )
    assert r.reward == 0.0
    assert "ptrace=-1" in r.error and "mem=opened" not in r.error and "fd/3=opened" not in r.error, r.error


# ----------------------------------------------------------------------------- reading the expected values


@pytest.mark.parametrize("task", [EXEC, MIXED], ids=["exec", "mixed"])
def test_no_expected_value_in_the_candidates_memory(scorer, task):
    # a scan of everything the process has mapped readable (through ctypes: no /proc/self/mem needed)
    r = score(
        scorer,
        task,
        textwrap.dedent("""
        import ctypes, re
        def _scan():
            found = []
            with open('/proc/self/maps') as maps:
                for line in maps:
                    span, perms = line.split()[:2]
                    if not perms.startswith('r') or '[v' in line:
                        continue
                    lo, hi = (int(x, 16) for x in span.split('-'))
                    found += re.findall(rb'candidate[(][0-9a-z][)] == ([0-9]+)', ctypes.string_at(lo, hi - lo))
            return [int(x) for x in found]
        _FOUND = _scan()
        def magic(i):
            return (_FOUND[0] if _FOUND else 0) + i
        """),
    )
    assert_no_reward(scorer, r)


@pytest.mark.parametrize("task", [EXEC, MIXED], ids=["exec", "mixed"])
def test_no_test_source_among_the_candidates_objects(scorer, task):
    r = score(
        scorer,
        task,
        textwrap.dedent("""
        import gc, re, sys
        def _texts():
            for o in gc.get_objects():
                if isinstance(o, dict):
                    yield from (v for v in o.values() if isinstance(v, str))
                elif isinstance(o, (list, tuple)):
                    yield from (v for v in o if isinstance(v, str))
            for f in sys._current_frames().values():
                while f is not None:
                    yield from (c for c in f.f_code.co_consts if isinstance(c, str))
                    f = f.f_back
        def magic(i):
            for t in _texts():
                m = re.search(r'candidate[(][0-9a-z][)] == ([0-9]+)', t)
                if m:
                    return int(m.group(1)) + i
            return 0
        """),
    )
    assert_no_reward(scorer, r)


def test_no_expected_value_up_the_call_stack(scorer):
    r = score(
        scorer,
        EXEC,
        textwrap.dedent("""
        import sys
        def magic(i):
            f, best = sys._getframe(1), 0
            while f is not None:
                for v in (*f.f_code.co_consts, *f.f_locals.values()):
                    if type(v) is int and v > 10**8:
                        best = max(best, v)
                f = f.f_back
            return best + i
        """),
    )
    assert_no_reward(scorer, r)


# ----------------------------------------------------------------------------- breaking the tester


def test_killing_the_tester(scorer):
    r = score(scorer, EXEC, "import os, signal\ndef magic(i):\n    os.kill(os.getppid(), signal.SIGKILL)\n")
    assert_no_reward(scorer, r)


def test_garbage_on_the_answer_channel(scorer):
    r = score(
        scorer,
        EXEC,
        "import os\ndef magic(i):\n    os.write(4, b'\\x00\\x00\\x00\\x05{\"ok\"')\n"
        "    os.write(4, b'\\xff' * 4096)\n    return 0\n",
    )
    assert_no_reward(scorer, r)


def test_answers_ahead_of_the_questions(scorer):
    # well-formed answers written before they are asked for are still only answers: the tests compare them
    r = score(
        scorer,
        EXEC,
        "import json, os, struct\n_A = json.dumps({'ok': 918273645}).encode()\n"
        "os.write(4, (struct.pack('>I', len(_A)) + _A) * 50)\n"
        "def magic(i):\n    return 0\n",
    )
    assert r.reward < 1.0 and not r.passed, (r.status, r.error)


def test_the_entry_point_answers_plain_values_only(scorer):
    r = score(
        scorer,
        EXEC,
        "class _Any(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n\ndef magic(i):\n    return _Any(0)\n",
    )
    assert_no_reward(scorer, r)
    assert r.error == "AssertionError", r.error  # it crossed as the int it is (0), read by int's own methods


# ----------------------------------------------------------------------------- what tests do, across two processes

PROGRAM = """
class EmptyError(IndexError):
    def __init__(self, msg):
        super().__init__(msg)
        self.code = 7
class Stack:
    LIMIT = 3
    def __init__(self):
        self.items = []
    def push(self, x):
        if len(self.items) >= self.LIMIT:
            raise OverflowError("full")
        self.items.append(x)
        return self
    def pop(self):
        if not self.items:
            raise EmptyError("empty stack")
        return self.items.pop()
    def __len__(self):
        return len(self.items)
    def __iter__(self):
        return iter(self.items)
    def __contains__(self, x):
        return x in self.items
    def __eq__(self, other):
        return isinstance(other, Stack) and self.items == other.items
    @staticmethod
    def make(*xs):
        s = Stack()
        for x in xs:
            s.push(x)
        return s
class Resource:
    def __init__(self):
        self.open = False
    def __enter__(self):
        self.open = True
        return self
    def __exit__(self, *exc):
        self.open = False
        return False
def squares(n):
    for i in range(n):
        yield i * i
def apply(f, xs, *, times=1):
    for _ in range(times):
        xs = [f(x) for x in xs]
    return xs
def sort_in_place(xs):
    xs.sort()
def fill(d):
    d["k"] = 1
def add(a, b):
    return a + b
def deep(n):
    x = []
    for _ in range(n):
        x = [x]
    return x
"""

SEMANTICS = {
    "call by value": "assert add(1, 2) == 3 and add('a', 'b') == 'ab' and add((1,), (2,)) == (1, 2)",
    "objects as handles": "s = Stack(); s.push(1).push(2)\nassert len(s) == 2 and s.pop() == 2 and s.items == [1]",
    "identity": "s = Stack()\nassert s.push(1) is s",
    "isinstance": "s = Stack.make(1)\nassert isinstance(s, Stack) and type(s).__name__ == 'Stack'",
    "builtin exceptions": "s = Stack.make(1, 2, 3)\ntry:\n    s.push(4)\nexcept OverflowError as e:\n"
    "    assert str(e) == 'full'\nelse:\n    raise AssertionError('no error')",
    "the candidate's exceptions": "s = Stack()\ntry:\n    s.pop()\nexcept EmptyError as e:\n"
    "    assert isinstance(e, IndexError) and e.code == 7 and str(e) == 'empty stack'\n"
    "else:\n    raise AssertionError('no error')",
    "dunders": "s = Stack.make(1, 2)\nassert 2 in s and 5 not in s and list(s) == [1, 2] and s == Stack.make(1, 2)",
    "class attributes": "assert Stack.LIMIT == 3",
    "attribute writes": "s = Stack()\ns.items = [9]\nassert s.pop() == 9",
    "context managers": "r = Resource()\nwith r as inside:\n    assert inside is r and r.open\nassert not r.open",
    "generators": "assert list(squares(4)) == [0, 1, 4, 9] and sum(squares(3)) == 5",
    "callbacks": "assert apply(lambda x: x * 10, [1, 2], times=2) == [100, 200]",
    "callbacks given handles": "assert apply(lambda s: len(s), [Stack.make(1), Stack.make(1, 2)]) == [1, 2]",
    "builtins given": "assert apply(str, [1]) == ['1'] and apply(len, ['ab']) == [2]",
    "large values": "assert len(add(list(range(300000)), [1])) == 300001",
    "changes in place": "xs = [3, 1, 2]\nsort_in_place(xs)\nd = {}\nfill(d)\nassert xs == [1, 2, 3] and d == {'k': 1}",
}


@pytest.mark.parametrize("name", list(SEMANTICS))
def test_what_a_test_does_with_the_candidate_works_across_processes(name):
    # 30 s: what is checked is the semantics, not the speed (a busy machine took the default 3 s over the large values)
    tests = [{"code": SEMANTICS[name]}, {"code": SEMANTICS[name] + "\nassert False, 'ran'"}]
    r = run_program(PROGRAM, "add", tests, limits=SandboxLimits(timeout=30.0))
    events = {e["index"]: e for e in r.events if e.get("event") == "test"}
    assert events[0]["ok"], events[0]
    assert not events[1]["ok"] and events[1]["error"] == "AssertionError: ran", events[1]  # the test can fail
