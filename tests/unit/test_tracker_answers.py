"""A tracker's answers are untrusted: every wait on it is a deadline (not a timeout per
read), and a frame or a summary that is not what a TVM RPC tracker sends is a clear
TrackerError naming the tracker, never a TypeError, ValueError or RecursionError. The fake
tracker listens on 127.0.0.1 (a free port), each socket with a bounded lifetime, and is
stopped by its own handle."""

from __future__ import annotations

import socket
import struct

import pytest
from fake_tracker import fake_tracker, frame, sends  # noqa: F401  (fake_tracker: a fixture)

from pytest_tvmperf.farm import tracker


def test_a_tracker_that_sends_a_byte_now_and_then_is_given_up_at_the_deadline(fake_tracker, monkeypatch):
    """The tracker announces an answer of 8 MiB and sends it slowly (bytes keep coming, so
    no single read waits long): the whole answer has a deadline. The clock is the test's:
    5 s pass at each read."""

    def trickle(conn: socket.socket) -> None:
        conn.sendall(struct.pack("<i", 8 << 20))
        for _ in range((8 << 20) // 4096):
            conn.sendall(b" " * 4096)

    now = [0.0]

    def clock() -> float:
        now[0] += 5.0
        return now[0]

    monkeypatch.setattr(tracker, "clock", clock, raising=False)
    address = fake_tracker(trickle)
    with pytest.raises(
        tracker.TrackerError,
        match=rf"^the RPC tracker at 127\.0\.0\.1:{address[1]} did not answer "
        rf"a summary request within 10 s$",
    ):
        tracker.summary(address)


@pytest.mark.parametrize(
    "answer, problem",
    [
        (frame({"queue_info": {}}), r"answered a summary request with \{\"queue_info\": \{\}\}, not \[code, value\]"),
        (frame(5), r"answered a summary request with 5, not \[code, value\]"),
        (frame([4]), r"answered a summary request with \[4\], not \[code, value\]"),
        (frame(["0", {}]), r"answered a summary request with \[\"0\", \{\}\], not \[code, value\]"),
        (frame(b"[" * 200_000 + b"]" * 200_000), "answered a summary request with a frame that is nested too deeply"),
        (frame(b"\xff\xfe"), "answered a summary request with a frame that is not JSON"),
        (struct.pack("<i", -5), r"answered a summary request with a frame of -5 bytes"),
    ],
)
def test_a_frame_that_is_not_code_and_value_is_a_clear_error(fake_tracker, answer, problem):
    address = fake_tracker(sends(answer))
    with pytest.raises(tracker.TrackerError, match=rf"^the RPC tracker at 127\.0\.0\.1:{address[1]} {problem}"):
        tracker.summary(address)


@pytest.mark.parametrize(
    "summary, field",
    [
        ([], r"\(the summary\): expected an object, got \[\]"),
        ({"queue_info": [], "server_info": []}, r"queue_info: expected an object, got \[\]"),
        ({"queue_info": {}, "server_info": 5}, "server_info: expected a list, got 5"),
        ({"queue_info": {"k": {"free": "x"}}, "server_info": []}, "queue_info.k.free: expected a count, got 'x'"),
        ({"queue_info": {"k": {"free": 1, "pending": 1e300}}}, "queue_info.k.pending: expected a count, got 1e"),
        ({"queue_info": {"k": 3}}, "queue_info.k: expected an object, got 3"),
        ({"server_info": [{"key": 7, "addr": []}]}, r"server_info\[0\]\.key: expected a string, got 7"),
        ({"server_info": [{"key": "server:k", "addr": {"a": 1}}]}, r"server_info\[0\]\.addr: expected a list of host "),
        ({"server_info": ["x"]}, r"server_info\[0\]: expected an object, got 'x'"),
    ],
)
def test_a_summary_with_fields_of_the_wrong_type_is_a_clear_error(fake_tracker, summary, field):
    address = fake_tracker(sends(frame([0, summary])))
    with pytest.raises(
        tracker.TrackerError,
        match=rf"^the RPC tracker at 127\.0\.0\.1:{address[1]} sent a summary that "
        rf"is not one \(field {field}",
    ):
        tracker.offers(tracker.summary(address), address)


def test_a_tracker_answer_with_newlines_prints_no_workflow_command(fake_tracker):
    address = fake_tracker(
        sends(
            frame(
                [
                    0,
                    {
                        "queue_info": {"k\n::error title=x::y": {"free": 1, "pending": 0}},
                        "server_info": [{"key": "server:k\n::error title=x::y", "addr": ["h\n::error::z", 1]}],
                    },
                ]
            )
        )
    )
    found = tracker.offers(tracker.summary(address), address)
    lines = "\n".join(tracker.offer_lines(found)) + "\n" + tracker.unknown_key_message("nope", address, found)
    assert not [line for line in lines.splitlines() if line.lstrip().startswith("::")]
