"""Groups as each request returns: what lets generation overlap with scoring (``grpo-wb sample``, the smoke loop).

A backend's ``generate(requests)`` answers a whole batch at once; :func:`stream_calls` asks for one request at a
time, ``concurrency`` in flight (a model server), or one after the other (the in-process backends: mock, replay,
transformers, which share one model or file cursor), and yields each answer the moment it is back, tagged with
its position. Every backend derives a group from its request alone (seeds of ``(seed, task, step, occurrence)``,
replay's occurrence cursor), so a group asked for alone is the group a batch call returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from grpo_wb.rollouts.factory import BackendConfig

T = TypeVar("T")
R = TypeVar("R")


def request_concurrency(cfg: BackendConfig) -> int:
    """Requests in flight at once: ``max_concurrency`` for a model server, one for the in-process backends."""
    return cfg.max_concurrency if cfg.backend == "openai" else 1


def stream_calls(
    fn: Callable[[T], R],
    items: Iterable[T],
    concurrency: int,
    stop: Callable[[], bool] = lambda: False,
    ready: Callable[[T], bool] = lambda item: True,
) -> Iterator[tuple[int, R]]:
    """``(index, fn(item))`` as each call returns, at most ``concurrency`` running and as many queued (not the
    whole input: the input is read as room frees up). ``ready(item)`` false: that item (and all after it) waits
    until it turns true, looked at again every few milliseconds, while the calls already running go on and their
    answers are yielded. ``stop()`` true, a call that raised, or the caller closing the generator: the queued
    calls are cancelled and nothing new starts; the running ones are waited for and their answers still yielded.
    The first error is re-raised at the end."""
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="grpo-wb-generate") as pool:
        pending: dict[Future, int] = {}
        it = enumerate(items)
        held: tuple[int, T] | None = None
        error: BaseException | None = None

        def halt() -> None:
            for f in pending:
                f.cancel()  # only the ones not started yet

        def top_up() -> bool:
            """Start what may start; True when the next item waits for ``ready``."""
            nonlocal held
            if error is not None or stop():
                halt()
                return False
            while len(pending) < 2 * concurrency:
                nxt = held if held is not None else next(it, None)
                held = None
                if nxt is None:
                    return False
                if not ready(nxt[1]):
                    held = nxt
                    return True
                pending[pool.submit(fn, nxt[1])] = nxt[0]
            return False

        try:
            waiting = top_up()
            while pending or (waiting and not stop()):
                if not pending:
                    time.sleep(0.005)
                    waiting = top_up()
                    continue
                finished, _ = wait(pending, timeout=0.01 if waiting else None, return_when=FIRST_COMPLETED)
                for fut in sorted(finished, key=pending.__getitem__):
                    index = pending.pop(fut)
                    if fut.cancelled():
                        continue
                    if fut.exception() is not None:
                        error = error or fut.exception()
                        continue
                    yield index, fut.result()
                waiting = top_up()
        finally:
            halt()
        if error is not None:
            raise error
