"""Scoring and batch reports on a Ray cluster, behind the local executor's interface.

:class:`RayScorer` is a drop-in for :class:`~grpo_wb.scoring.scorer.Scorer` (same
``score``/``isolation``/``executed``/``cache_hits``/``close``): one long-lived
actor per node holds that node's warm, isolated worker pool — a plain local
``Scorer``, so the sandbox and verdict code are the local ones, not a copy.
The driver cuts the input into chunks, keeps a bounded number in flight per
actor (back-pressure: the driver holds at most ``max_ahead`` chunks, so its
memory stays flat), and yields results in input order.

Faults: a chunk whose actor dies (or whose node dies) goes to another actor; a
dead actor is replaced on a live node while ``max_replacements`` allows. A
chunk is accepted once, and only when its results name exactly its completion
ids, so every completion appears exactly once in the output. When no actor is
left, :class:`IncompleteScoring` names the completions that were not scored.

What it needs: Ray (extra ``[ray]``) and the same ``grpo_wb`` version on every
node (checked when an actor starts), bubblewrap on every node for the full
isolation (each node's achieved isolation is recorded separately). What it does
not do: share the verdict cache across nodes (each actor caches its own), or
ship code to the nodes.

Ray's own traffic: usage statistics are off (``RAY_USAGE_STATS_ENABLED=0``),
the dashboard is off unless asked for, and a local instance binds 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grpo_wb.errors import UserError, exception_line, require
from grpo_wb.scoring.feed import Feed
from grpo_wb.scoring.rewards import RewardConfig
from grpo_wb.scoring.sandbox import SandboxLimits
from grpo_wb.scoring.scorer import ScoredCompletion, Scorer, ScoreRequest
from grpo_wb.version import __version__

CHUNK_SIZE = 32
"""Completions per chunk: small enough that a retry re-runs little, large enough to amortise a call."""
INFLIGHT_PER_ACTOR = 4
"""Chunks running at once on one node: a chunk waiting on a completion at its deadline leaves the others going."""


class IncompleteScoring(UserError):
    """The cluster could not score everything; ``missing`` holds the completion ids without a result."""

    def __init__(self, missing: list[str], reason: str):
        self.missing = list(missing)
        shown = ", ".join(self.missing[:10]) + (" ..." if len(self.missing) > 10 else "")
        super().__init__(f"Ray executor: {len(self.missing)} completions were not scored ({reason}); missing: {shown}")


def _import_ray():
    return require("ray", "--executor ray needs Ray: pip install 'grpo_wb[ray]'")


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def _check_reachable(address: str) -> None:
    """Fail fast (one line) on an address nobody listens on; Ray itself retries for a minute."""
    if address == "auto" or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(
            f"--ray-address {address!r}: expected HOST:PORT of the cluster's head (GCS), e.g. 127.0.0.1:6379, or 'auto'"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5.0):
            pass
    except OSError as e:
        raise UserError(f"--ray-address {address}: no Ray head answers there ({e.strerror or e})") from None


def _token_source() -> str:
    """Where Ray reads its auth token from, in its own order (for messages)."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"RAY_AUTH_TOKEN_PATH={os.environ['RAY_AUTH_TOKEN_PATH']}"
    return str(Path.home() / ".ray" / "auth_token")


_SET_TOKEN = (
    "copy the head's token (`ray get-auth-token` on the head prints it) into ~/.ray/auth_token, "
    "or set RAY_AUTH_TOKEN (the token) or RAY_AUTH_TOKEN_PATH (a file holding it)"
)


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 (C++ logging bypasses ``sys.stderr``) for a short call."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _check_auth(address: str) -> None:
    """Use the cluster's token auth as ``ray start`` set it up, and fail in one line, fast, when it refuses us.

    ``ray start --head`` turns token auth on whenever a token exists on the head (Ray 2.60). A driver
    joining with an explicit address sends the token only in token mode, which Ray enables by itself only
    for ``address="auto"``. So one GetClusterId call (no retries: Ray's own connect retries an auth failure
    for ~20 s and ends with "cannot connect") asks the cluster; when it wants a token and one is found
    where Ray looks (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``), token mode is turned
    on and the call repeated; a refusal is one line naming what to set. ``RAY_AUTH_MODE`` set by the user
    wins. Uses Ray's private auth classes (``tests/test_ray_cli.py`` pins the behaviour); without them (an
    older Ray) nothing is checked.
    """
    if address == "auto" or address.startswith("ray://"):
        return  # Ray's own rule applies ("auto"), or the client protocol carries its own
    try:
        from ray._raylet import AuthenticationTokenLoader, Config, InnerGcsClient  # type: ignore[attr-defined]  # private classes Ray's _raylet.pyi leaves out
        from ray.exceptions import AuthenticationError, RpcError
    except ImportError:
        return

    def probe() -> None:
        with _quiet_stderr():  # Ray's C++ client logs each refusal to fd 2; the messages below say it once
            InnerGcsClient.standalone(address, None, 5000)

    token_mode = os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
    if token_mode and not AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
        # (connecting now would abort the process inside Ray's C++ token loader)
        raise UserError(
            f"--ray-address {address}: RAY_AUTH_MODE=token but no Ray auth token was found "
            f"({_token_source()}); {_SET_TOKEN}"
        )
    try:
        try:
            probe()
        except AuthenticationError:
            if token_mode or os.environ.get("RAY_AUTH_MODE") is not None:
                raise
            if not AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True):
                raise UserError(
                    f"--ray-address {address}: the Ray cluster requires token authentication and no "
                    f"token was found here; {_SET_TOKEN}"
                ) from None
            # The cluster wants a token and one is here: token mode, as ray.init(address="auto") would set it
            # (only now: a token-mode driver cannot create actors on a cluster without auth).
            os.environ["RAY_AUTH_MODE"] = "token"
            Config.initialize("")  # Ray caches its config at import: make this process see token mode
            token_mode = True
            probe()
    except AuthenticationError:
        if token_mode:
            raise UserError(
                f"--ray-address {address}: the Ray cluster rejected the auth token from {_token_source()}; {_SET_TOKEN}"
            ) from None
        raise UserError(
            f"--ray-address {address}: the Ray cluster requires token authentication, which "
            f"RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE')} turns off here; unset it"
        ) from None
    except RpcError as e:
        raise UserError(f"--ray-address {address}: no Ray head answers there ({exception_line(e)})") from None


def connect(address: str | None = None, *, num_cpus: int | None = None, dashboard: bool = False):
    """Connect to the cluster at ``address`` (or start a local instance on 127.0.0.1); return ``ray``.

    Reuses an existing connection. A loopback address stays loopback: Ray would
    otherwise rewrite 127.0.0.1 to the machine's outward address.
    """
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = _import_ray()
    if ray.is_initialized():
        return ray
    remote = None if address in (None, "", "local") else address  # a cluster's address; None: a local instance
    local = remote is None
    if remote is None or _is_loopback(remote.rpartition(":")[0].strip("[]")):
        # Ray's "cluster mode" resolves a loopback bootstrap address to the host's outward IP;
        # with it off (as Ray does on macOS/Windows) the driver keeps 127.0.0.1. Nodes are unaffected.
        from ray._private import ray_constants

        ray_constants.ENABLE_RAY_CLUSTER = False
    if remote is not None:
        _check_reachable(remote)
        _check_auth(remote)
    kwargs: dict[str, Any] = dict(logging_level=logging.WARNING, log_to_driver=False, configure_logging=True)
    if local:
        # "local": always a new instance, never a cluster that `ray start` left running here. Ray gives its raylet
        # a fixed 30 s to register and raises a bare Exception past it (a busy machine): twice more, then one line.
        for attempt in (1, 2, 3):
            try:
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=dashboard, **kwargs)
                return ray
            except Exception as e:  # noqa: BLE001 - Ray's startup timeout is a plain Exception
                ray.shutdown()
                if attempt == 3:
                    raise UserError(
                        f"could not start a local Ray instance ({exception_line(e)}); is the machine "
                        "overloaded? retry, or start one with `ray start --head` and pass "
                        "--ray-address"
                    ) from None
    try:
        ray.init(address=address, **kwargs)
    except (ConnectionError, ValueError, RuntimeError, TimeoutError) as e:
        raise UserError(f"--ray-address {address}: cannot connect to Ray ({exception_line(e)})") from None
    return ray


def _node_scorer_class(ray):
    """The per-node actor (defined lazily: Ray is an optional extra)."""

    class NodeScorer:
        """One node's warm sandbox pool; scores chunks, several at once."""

        def __init__(
            self,
            limits: dict[str, Any],
            reward: dict[str, Any],
            workers: int,
            cache: bool,
            early_stop: bool | None,
            driver_version: str,
        ):
            if driver_version != __version__:
                raise RuntimeError(f"grpo_wb {__version__} on this node, {driver_version} on the driver")
            self.scorer = Scorer(
                SandboxLimits(**limits), RewardConfig(**reward), workers=workers, cache=cache, early_stop=early_stop
            )

        def info(self) -> dict[str, Any]:
            return {
                "node_id": ray.get_runtime_context().get_node_id(),
                "hostname": socket.gethostname(),
                "pid": os.getpid(),
                "workers": self.scorer.workers,
                "isolation": self.scorer.isolation(),
            }

        def score_chunk(self, requests: list[ScoreRequest]) -> list[ScoredCompletion]:
            # each chunk arrives with fresh Task objects: the scorer's plan cache is keyed by content
            return list(self.scorer.score(requests))

        def shutdown(self) -> None:
            self.scorer.close()

    return ray.remote(NodeScorer)


@dataclass
class _Actor:
    handle: Any
    info: dict[str, Any]
    """What the actor reported when it started (its node, host, workers and isolation)."""
    inflight: int = 0
    alive: bool = True

    @property
    def node_id(self) -> str:
        return self.info["node_id"]

    @property
    def workers(self) -> int:
        return self.info["workers"]


class RayScorer:
    """Scores on a Ray cluster: one actor per node, chunked, bounded, ordered, retried."""

    def __init__(
        self,
        limits: SandboxLimits = SandboxLimits(),
        reward: RewardConfig = RewardConfig(),
        *,
        address: str | None = None,
        workers: int | None = None,
        cache: bool = True,
        chunk_size: int = CHUNK_SIZE,
        inflight_per_actor: int = INFLIGHT_PER_ACTOR,
        max_replacements: int | None = None,
        max_attempts: int = 3,
        dashboard: bool = False,
        start_timeout: float = 180.0,
        early_stop: bool | None = None,
    ):
        self.limits = limits
        self.reward = reward
        self.address = address
        self.workers_per_node = workers
        self.cache_enabled = cache
        self.early_stop = early_stop
        self.chunk_size = chunk_size
        self.read_ahead = 2 * chunk_size
        """Requests read from the input ahead of the chunks (the Feed's buffer; its thread holds one more)."""
        self.inflight_per_actor = inflight_per_actor
        self.max_attempts = max_attempts
        self.start_timeout = start_timeout
        self.ray = connect(address, num_cpus=workers, dashboard=dashboard)
        self._cls = _node_scorer_class(self.ray)
        self.actors: list[_Actor] = []
        nodes = self._usable_nodes()
        if not nodes:
            raise UserError("the Ray cluster has no alive node with a CPU to run sandboxes on")
        self._start(nodes, first=True)
        self.max_replacements = 2 * len(self.actors) if max_replacements is None else max_replacements
        self.replacements = 0
        self.retried_chunks = 0
        self.executed = 0
        self.cache_hits = 0

    # -------------------------------------------------------------- actors

    def _usable_nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]

    def _start(self, nodes: list[dict[str, Any]], first: bool = False) -> list[_Actor]:
        """Start one actor per node; wait until each answers (its worker pool is then warm)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        pending = []
        for n in nodes:
            w = self.workers_per_node or max(1, int(n["Resources"]["CPU"]))
            h = self._cls.options(
                num_cpus=0,
                max_restarts=0,
                max_concurrency=self.inflight_per_actor + 1,
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False),
            ).remote(asdict(self.limits), asdict(self.reward), w, self.cache_enabled, self.early_stop, __version__)
            pending.append((n, h, h.info.remote()))
        started, errors = [], []
        for n, h, ref in pending:
            try:
                info = self.ray.get(ref, timeout=self.start_timeout)
            except Exception as e:  # an actor that cannot start on that node: use the others
                errors.append(f"node {n['NodeID'][:8]}: {exception_line(e)}")
                self.ray.kill(h, no_restart=True)
                continue
            a = _Actor(handle=h, info=info)
            self.actors.append(a)
            started.append(a)
        if first and not started:
            raise UserError("no sandbox actor could start on the Ray cluster: " + "; ".join(errors[:3]))
        return started

    def _replace(self) -> bool:
        """Start a replacement actor on a live node without one; False when the budget or the nodes ran out.

        (The driver waits for it: a few seconds in which the other actors finish what they hold.)
        """
        if self.replacements >= self.max_replacements:
            return False
        busy = {a.node_id for a in self.actors if a.alive}
        for n in [n for n in self._usable_nodes() if n["NodeID"] not in busy]:
            self.replacements += 1
            if self._start([n]):
                return True
            if self.replacements >= self.max_replacements:
                break
        return False

    def _retire(self, actor: _Actor) -> None:
        if actor.alive:
            actor.alive = False
            try:
                self.ray.kill(actor.handle, no_restart=True)
            except Exception:
                pass

    def _live(self) -> list[_Actor]:
        return [a for a in self.actors if a.alive]

    # -------------------------------------------------------------- Scorer interface

    def isolation(self) -> dict[str, Any]:
        """The first node's isolation report (each node's is in :meth:`executor_info`)."""
        live = self._live()
        return live[0].info["isolation"] if live else {"mode": "unavailable", "error": "no actor"}

    def executor_info(self) -> dict[str, Any]:
        live = self._live()
        return {
            "executor": "ray",
            "ray_address": self.address or "local",
            "nodes": len(live),
            "workers": sum(a.workers for a in live),
            "actor_replacements": self.replacements,
            "retried_chunks": self.retried_chunks,
            "per_node": [
                {
                    "node_id": a.node_id,
                    "hostname": a.info["hostname"],
                    "workers": a.workers,
                    "isolation": a.info["isolation"],
                }
                for a in live
            ],
        }

    def score(self, requests: Iterable[ScoreRequest]) -> Iterator[ScoredCompletion]:
        """Score on the cluster; yield in input order; retry chunks of dead actors elsewhere."""
        # read on a thread of its own: a streamed input that pauses holds back no chunk that is ready
        feed: Feed[ScoreRequest] = Feed(requests, self.read_ahead)
        try:
            yield from self._score(feed)
        finally:
            feed.close()

    def _score(self, feed: Feed[ScoreRequest]) -> Iterator[ScoredCompletion]:
        ray = self.ray
        chunks: dict[int, list[ScoreRequest]] = {}
        attempts: dict[int, int] = {}
        done: dict[int, list[ScoredCompletion]] = {}
        running: dict[Any, tuple[int, _Actor]] = {}
        retry: deque[int] = deque()
        next_read = next_out = 0
        exhausted = False

        def max_ahead() -> int:
            return 2 * self.inflight_per_actor * max(1, len(self._live()))

        def submit(idx: int) -> None:
            actor = min(self._live(), key=lambda a: a.inflight)
            actor.inflight += 1
            attempts[idx] = attempts.get(idx, 0) + 1
            running[actor.handle.score_chunk.remote(chunks[idx])] = (idx, actor)

        def missing(reason: str) -> IncompleteScoring:
            # results leave in input order: everything not yet yielded is missing from the output
            ids = [r.id for i in sorted(chunks) for r in chunks[i]]
            ids += [r.id for r in feed.rest()]
            return IncompleteScoring(ids, reason)

        while True:
            # fill: retries first, then new chunks, as long as actors have room and the driver's buffer allows
            while self._live():
                room = any(a.inflight < self.inflight_per_actor for a in self._live())
                if not room:
                    break
                if retry:
                    submit(retry.popleft())
                    continue
                if exhausted or len(chunks) >= max_ahead():
                    break
                # wait for input only when nothing is running and no result is waiting to be yielded
                chunk = feed.take(self.chunk_size, block=not running and next_out not in done)
                if not chunk:
                    exhausted = feed.ended
                    break
                chunks[next_read] = chunk
                submit(next_read)
                next_read += 1
            while next_out in done:
                results = done.pop(next_out)
                del chunks[next_out]
                next_out += 1
                for r in results:
                    self.executed += int(not r.cached and r.status != "parse_failure")
                    self.cache_hits += int(r.cached)
                    yield r
            if exhausted and not chunks:
                feed.raise_error()
                return
            if not running:
                if not self._live() and not self._replace():
                    raise missing("no live actor is left on the cluster")
                continue
            # with input still to come, look back at it now and then
            ready, _ = ray.wait(list(running), num_returns=1, timeout=None if exhausted else 0.05)
            if not ready:
                continue
            idx, actor = running.pop(ready[0])
            actor.inflight -= 1
            try:
                results = ray.get(ready[0])
                want = [r.id for r in chunks[idx]]
                if [r.completion_id for r in results] != want:
                    raise RuntimeError("the actor returned results for other completions")
            except Exception as e:
                fault = exception_line(e)
                if isinstance(
                    e,
                    (
                        ray.exceptions.RayActorError,
                        ray.exceptions.NodeDiedError,
                        ray.exceptions.WorkerCrashedError,
                        ray.exceptions.ObjectLostError,
                    ),
                ):
                    self._retire(actor)
                    self._replace()  # on the same node when only the actor died
                if attempts[idx] >= self.max_attempts:
                    raise missing(f"chunk failed {attempts[idx]} times, last: {fault}") from None
                self.retried_chunks += 1
                retry.append(idx)
                continue
            done[idx] = results  # only a failed chunk is sent again, so each is accepted once
            del attempts[idx]

    def close(self) -> None:
        for a in self._live():
            try:
                self.ray.get(a.handle.shutdown.remote(), timeout=30)
            except Exception:
                pass
            self._retire(a)

    def __enter__(self) -> RayScorer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
