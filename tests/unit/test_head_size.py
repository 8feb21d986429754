"""The httptools protocol's count of a request head (graphsvc.api.protocol.HeadSize), alone: what
is counted while headers are incomplete, what the parser saw, and that a body is never counted.
tests/e2e/test_httptools.py checks the same bounds against a real server."""

from __future__ import annotations

from graphsvc.api.protocol import HeadSize

BOUND = 100


def test_bytes_of_an_incomplete_head_past_the_bound_are_refused() -> None:
    head = HeadSize(BOUND)
    head.arrived(BOUND)
    assert not head.incomplete_too_large()  # at the bound: still read
    head.arrived(1)
    assert head.incomplete_too_large()


def test_a_head_parsed_from_one_read_is_measured_as_parsed() -> None:
    head = HeadSize(BOUND)
    head.arrived(4 * BOUND)  # one read: the head and a body; the parser runs inside it
    head.begin()
    head.add(BOUND // 2)
    head.add(BOUND // 2)
    assert head.complete()  # exactly the bound: accepted, and the body is not counted
    assert not head.incomplete_too_large()
    head.arrived(10 * BOUND)  # more of the body
    assert not head.incomplete_too_large()

    over = HeadSize(BOUND)
    over.begin()
    over.add(BOUND + 1)
    assert not over.complete()
    assert over.in_head  # refused: its bytes are still a head's


def test_each_request_on_a_kept_alive_connection_is_counted_afresh() -> None:
    head = HeadSize(BOUND)
    for _ in range(3):
        head.arrived(BOUND)
        head.begin()
        head.add(BOUND)
        assert head.complete()
        head.arrived(5 * BOUND)  # the body
        head.message_complete()
        assert not head.incomplete_too_large()
    head.arrived(BOUND + 1)  # the next request's head, still incomplete
    assert head.incomplete_too_large()
