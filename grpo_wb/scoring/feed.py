"""An executor's input read by a thread of its own, so results never wait for input that has not come yet.

``Scorer.score`` and the Ray executor yield results in input order. When the input is a stream (completions
arriving from a model server, a smoke run's next step still being generated), pulling the next request on the
consumer's thread would hold back results that are already decided until more input arrives. A :class:`Feed`
reads the input into a bounded buffer on its own thread; the executor takes what has arrived, and waits for
"a result is ready or more input came" in one place (:meth:`Feed.wait`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()
"""What :meth:`Feed.get` returns when no item is there (without blocking) or the input has ended."""


class Feed(Generic[T]):
    """``items`` read ahead (at most ``maxsize`` buffered) by a daemon thread; an error raised while reading is
    kept for :meth:`raise_error` once the items read before it are used."""

    def __init__(self, items: Iterable[T], maxsize: int):
        self.maxsize = max(1, maxsize)
        self._buf: deque[T] = deque()
        self._cond = threading.Condition()
        self._done = False
        self._closed = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(iter(items),), daemon=True, name="grpo_wb_feed")
        self._thread.start()

    def _run(self, it: Iterator[T]) -> None:
        try:
            for x in it:
                with self._cond:
                    self._cond.wait_for(lambda: len(self._buf) < self.maxsize or self._closed)
                    if self._closed:
                        return
                    self._buf.append(x)
                    self._cond.notify_all()
        except BaseException as e:  # re-raised on the consumer's side, after what came before it
            self.error = e
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def get(self, block: bool) -> T:
        """The next item; :data:`NOTHING` when there is none yet (``block=False``) or the input has ended."""
        with self._cond:
            if block:
                self._cond.wait_for(lambda: self._buf or self._done)
            if not self._buf:
                return NOTHING
            self._cond.notify_all()  # room for the reader
            return self._buf.popleft()

    def take(self, n: int, block: bool, linger: float = 0.01) -> list[T]:
        """Up to ``n`` items: what has arrived, after waiting ``linger`` seconds for a full ``n`` (and, with
        ``block``, as long as it takes for a first one)."""
        with self._cond:
            if block:
                self._cond.wait_for(lambda: self._buf or self._done)
            if self._buf:
                self._cond.wait_for(lambda: len(self._buf) >= n or self._done, linger)
            self._cond.notify_all()  # room for the reader
            return [self._buf.popleft() for _ in range(min(n, len(self._buf)))]

    @property
    def ended(self) -> bool:
        """Every item has been read and taken."""
        with self._cond:
            return self._done and not self._buf

    def wait(self, ready: Callable[[], bool], timeout: float | None = None) -> None:
        """Until ``ready()``, an item arrives or the input ends (:meth:`wake` re-checks ``ready``)."""
        with self._cond:
            self._cond.wait_for(lambda: ready() or self._buf or self._done, timeout)

    def wake(self, *_: Any) -> None:
        """Have :meth:`wait` look again (a future's done-callback)."""
        with self._cond:
            self._cond.notify_all()

    def rest(self, idle: float = 1.0) -> Iterator[T]:
        """The items not taken yet (naming what was never scored): to the end of the input, or until none has
        come for ``idle`` seconds (a stream that waits on the caller would never end)."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._buf or self._done, idle)
            x = self.get(block=False)
            if x is NOTHING:
                return
            yield x

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Stop reading: the thread ends at its next item (an input that never yields again keeps it, a daemon)."""
        with self._cond:
            self._closed = True
            self._buf.clear()
            self._cond.notify_all()
