"""User namespaces are closed to completions (issue 25 point 10): in one of its own, a completion could mount a
tmpfs of any size (memory outside every limit) and reach kernel code no job needs. Each attack tries another way
in; a control checks that threads and processes, which libc makes with the same system calls, still work."""

from __future__ import annotations

import pytest

from grpo_wb.scoring.sandbox import SandboxLimits, unproved, userns_filter
from grpo_wb.scoring.scorer import Scorer, ScoreRequest
from grpo_wb.tasks.records import Task, TestCase

pytestmark = [pytest.mark.sandbox]

REFUSED = Task("ns/refused", "Print refused.", "", (TestCase("a", type="stdio", input="", output="refused\n"),))

_LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
ATTACKS = {
    "unshare(CLONE_NEWUSER)": _LIBC + "print('made' if libc.unshare(0x10000000) == 0 else 'refused')\n",
    "unshare(NEWUSER|NEWNS), then a 1 GiB tmpfs": _LIBC
    + (
        "ok = libc.unshare(0x10000000 | 0x00020000) == 0\n"
        "ok = ok and libc.mount(b'none', b'/tmp', b'tmpfs', 0, b'size=1g') == 0\n"
        "print('made' if ok else 'refused')\n"
    ),
    "raw clone(CLONE_NEWUSER)": _LIBC
    + (
        "pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\n"  # SYS_clone, CLONE_NEWUSER | SIGCHLD
        "if pid == 0:\n    os._exit(0)\n"
        "if pid > 0:\n    os.waitpid(pid, 0)\n"
        "print('made' if pid > 0 else 'refused')\n"
    ),
    "clone3 with CLONE_NEWUSER": _LIBC
    + (
        "import struct\nargs = ctypes.create_string_buffer(struct.pack('QQQQQQQQ', 0x10000000, 0, 0, 0, 17, 0, 0, 0))\n"
        "pid = libc.syscall(435, args, 64)\n"
        "if pid == 0:\n    os._exit(0)\n"
        "if pid > 0:\n    os.waitpid(pid, 0)\n"
        "print('made' if pid > 0 else 'refused')\n"
    ),
    "the unshare command": (
        "import subprocess\n"
        "try:\n    r = subprocess.run(['unshare', '--user', '--map-root-user', 'true'], capture_output=True)\n"
        "    print('made' if r.returncode == 0 else 'refused')\n"
        "except OSError:\n    print('refused')\n"
    ),
}


@pytest.fixture(scope="module")
def scorer():
    with Scorer(SandboxLimits(timeout=10.0), workers=1, cache=False) as sc:
        assert sc.isolation()["mode"] == "bwrap", "these tests need the bubblewrap sandbox"
        yield sc


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_completion_cannot_make_a_user_namespace(scorer, attack):
    (r,) = list(scorer.score([ScoreRequest(REFUSED, ATTACKS[attack])]))
    assert (r.status, r.error) == ("pass", ""), (r.status, r.error, r.stderr_tail)  # it printed "refused"


def test_threads_and_processes_still_work(scorer):
    ok = (
        "import threading, subprocess, os\nout = []\nt = threading.Thread(target=lambda: out.append(1))\n"
        "t.start(); t.join()\npid = os.fork()\nif pid == 0:\n    os._exit(3)\n"
        "code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])\n"
        "r = subprocess.run(['true'])\nprint('refused' if out == [1] and code == 3 and r.returncode == 0 else 'no')\n"
    )
    (r,) = list(scorer.score([ScoreRequest(REFUSED, ok)]))
    assert r.status == "pass", (r.error, r.stderr_tail)


def test_the_isolation_report_proves_it_and_strict_needs_it(scorer):
    rep = scorer.isolation()
    assert isinstance(userns_filter(), bytes) and rep["userns_closed"], rep.get("userns")
    assert not any("user namespaces" in m for m in rep["missing"])
    assert any(m.startswith("user namespaces closed") for m in unproved({**rep, "userns_closed": False}))
