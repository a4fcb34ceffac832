"""The executors' input reader (grpo_wb.scoring.feed): items in order, errors after them, and no lost wake-ups."""

import threading

import pytest

from grpo_wb.scoring.feed import NOTHING, Feed


def test_a_reader_waiting_for_room_is_woken_by_takes():
    """The Ray executor takes chunks from a Feed whose buffer is smaller than the input: each take must make
    room for the reading thread, or the two wait on each other forever."""
    feed = Feed(range(1000), maxsize=8)
    got: list[int] = []

    def consume():
        while chunk := feed.take(5, block=True):
            got.extend(chunk)

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "the consumer and the Feed's reader wait on each other"
    assert got == list(range(1000)) and feed.ended


def test_get_gives_each_item_once_then_nothing():
    one = Feed(iter([1, 2, 3]), maxsize=1)
    assert [one.get(block=True) for _ in range(4)] == [1, 2, 3, NOTHING]


def test_an_error_while_reading_comes_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("line 3 is bad")

    feed = Feed(items(), maxsize=4)
    assert list(feed.rest()) == [1, 2]
    with pytest.raises(ValueError, match="line 3"):
        feed.raise_error()


def test_a_paused_stream_does_not_block_a_non_blocking_take():
    """A take that blocked would wait for the gate, which opens only after it: it would never return []."""
    gate = threading.Event()

    def items():
        yield "first"
        gate.wait(60)
        yield "second"

    feed = Feed(items(), maxsize=4)
    assert feed.take(10, block=True) == ["first"]
    assert feed.take(10, block=False) == []
    gate.set()
    assert feed.take(10, block=True) == ["second"]
    feed.close()


def test_rest_names_what_is_left_without_waiting_for_a_stream_that_never_ends():
    """Both items are buffered before rest() starts (the producer says so when it reaches the gate); a rest()
    that waited for the stream's end would get 3 only once the gate opens, after it."""
    gate, parked = threading.Event(), threading.Event()

    def items():
        yield 1
        yield 2
        parked.set()  # 2 is in the buffer: the feed asked for the next item
        gate.wait(60)  # a producer that waits on the caller (the overlapped smoke loop's next step)
        yield 3

    feed = Feed(items(), maxsize=8)
    assert parked.wait(60)
    assert list(feed.rest(idle=0.2)) == [1, 2]
    gate.set()
    feed.close()
