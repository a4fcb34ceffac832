"""``grpo-wb doctor``: what isolation this machine gives and what the sandbox achieves here."""

from __future__ import annotations

import argparse
import os
import platform
import shutil
from importlib.metadata import PackageNotFoundError, version

from grpo_wb.cli.common import Command
from grpo_wb.scoring.sandbox import describe_isolation, isolation_report
from grpo_wb.scoring.scorer import cpp_caches, cpp_toolchain
from grpo_wb.version import __version__


def doctor(args: argparse.Namespace) -> int:
    print(f"grpo_wb {__version__}, Python {platform.python_version()}, {platform.system()} {platform.release()}")
    print(f"running as uid {os.getuid()}; cores available: {len(os.sched_getaffinity(0))}")
    bw = shutil.which("bwrap")
    print(f"bubblewrap: {bw or 'NOT FOUND (install the Debian/Ubuntu package bubblewrap for namespaces)'}")
    try:
        ray_line = f"{version('ray')} (--executor ray available)"
    except PackageNotFoundError:
        ray_line = "not installed (pip install 'grpo_wb[ray]' for --executor ray)"
    print(f"ray: {ray_line}")
    rep = isolation_report()
    print(f"achieved: {describe_isolation(rep)}")
    if rep.get("mode") != "unavailable":  # each line measured by the worker or in a probe child
        print(f"  PID namespace of its own (observed by the worker): {rep['pid_namespace']}")
        print(f"  children run as uid {rep['child_uid']} (caller: uid {rep['caller_uid']})")
        print(f"  network, a child's connection to a listener on 127.0.0.1: {rep['network']}")
        print(f"  /tmp private to the sandbox: {rep['private_tmp']}; filesystem root: {' '.join(rep['root_entries'])}")
        print(f"  environment a child sees: {', '.join(rep['environment'])}")
        print(
            "  limits in force (getrlimit in a child): "
            + ", ".join(
                f"{k} {v['in_force']}" + ("" if v["in_force"] == v["requested"] else f" (asked {v['requested']})")
                for k, v in rep["limits"].items()
            )
        )
        print(f"  user namespaces, a child's unshare(CLONE_NEWUSER): {rep['userns']}")
        print(f"  SysV IPC and kernel keys, a child's shmget: {rep['sysv_ipc']}")
        print(f"  sessions (one CPU autogroup per job), a child's setsid: {rep['new_session']}")
        print(
            "  each job, from every other: a fresh child process; all it started killed when it ends"
            + (" (the whole PID namespace swept)" if rep["pid_namespace"] else " (by its uid)")
            + "; its job directory removed, and a worker that cannot remove it retires with its tmpfs"
            + ("" if rep["private_tmp"] else " (fork mode: its directory only)")
        )
        print(
            "  exec tests and check, from the candidate: run in the job's child, which forks the candidate's process "
            "before it reads them; calls cross by value"
        )
    print(f"C++ tasks: {cpp_toolchain()[1]}")
    print(f"C++ compiles: {cpp_caches()}")
    missing = rep.get("missing") or []
    print("--isolation strict: " + ("would run" if not missing else "would refuse: not proved " + "; ".join(missing)))
    if rep.get("mode") != "bwrap":
        print("WARNING: without bubblewrap the network and the caller's files are NOT isolated")
        return 1
    return 0


COMMANDS = [
    Command(("doctor",), None, doctor, "say what isolation this machine supports and what the sandbox achieves")
]
