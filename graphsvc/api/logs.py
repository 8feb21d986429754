"""The server process's log: one JSON object per line on stderr (:class:`JsonFormatter`), for
graphsvc, uvicorn and every other logger, with repeated warnings and errors rate-limited
(:class:`RepeatLimit`); :func:`configure_logging` sets it up (``graphsvc serve`` calls it once,
at start)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from graphsvc.api.middleware import access_logger


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the record's ``fields`` extra,
    and the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(entry, default=str, ensure_ascii=False)


class RepeatLimit(logging.Filter):
    """Lets at most ``burst`` records of one kind (logger, level, message template) through per
    ``window`` seconds, and says on the next one let through how many were held back
    (``suppressed``). Warnings and errors only, the access log aside (one line per request is its
    point).

    A failure that repeats as fast as the event loop turns (``socket.accept() out of system
    resource`` while descriptors are exhausted) would otherwise fill the disk with one traceback
    per turn, and the disk filling is then a second outage.

    Args:
        burst: records of one kind let through per window.
        window: seconds.
        clock: monotonic seconds (tests pass their own).
    """

    #: Kinds remembered; past this the counts start again (a message formatted before logging
    #: makes a kind per value).
    MAX_KINDS = 1024

    def __init__(
        self, burst: int = 5, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._kinds: dict[tuple[str, int, str], list[float]] = {}  # start, let through, held
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.name == access_logger.name:
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None:
                if len(self._kinds) >= self.MAX_KINDS:
                    self._kinds.clear()
                kind = self._kinds[key] = [now, 0.0, 0.0]
            held = 0
            if now - kind[0] >= self.window:
                held = int(kind[2])
                kind[:] = [now, 0.0, 0.0]
            if kind[1] >= self.burst:
                kind[2] += 1
                return False
            kind[1] += 1
        if held:
            fields = getattr(record, "fields", None)
            extra = dict(fields) if isinstance(fields, dict) else {}
            extra["suppressed"] = held  # like records held back in the last window
            record.__dict__["fields"] = extra
        return True


#: The coroutines graphql-core and strawberry leave unawaited when a request's task is cancelled
#: (its deadline, its rows, a stop): each resolver's coroutine made but never started. Python
#: warns of each when it is collected, once per location, without saying which request; the
#: request itself was answered and logged. Only these are silenced (graphsvc's own code is
#: checked for unused coroutines by mypy).
ABANDONED_COROUTINES = (
    r"coroutine '(Executor|GraphQLCoreConverter|StrawberryGraphQLCoreExecutionContext)\."
    r"[\w.<>]+' was never awaited"
)


def configure_logging(level: str) -> None:
    """JSON lines on stderr for graphsvc, uvicorn and everything else (the server process);
    repeated warnings and errors are rate-limited (:class:`RepeatLimit`); the warnings of
    coroutines abandoned by a cancelled request are dropped (:data:`ABANDONED_COROUTINES`)."""
    warnings.filterwarnings("ignore", ABANDONED_COROUTINES, RuntimeWarning)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


__all__ = ["ABANDONED_COROUTINES", "JsonFormatter", "RepeatLimit", "configure_logging"]
