"""Progress bars that suit where they are read: a live bar on a terminal, whole lines in a file or a CI log.

tqdm redraws its bar with carriage returns, which a terminal turns into one
line that moves; in a file or a CI log every redraw piles up on one very
long line (a 576-point sweep wrote about 250 of them). ``progress_bar``
returns the usual tqdm bar when the stream is a terminal and otherwise a
``LineBar``: the same bar text, written as a whole line at most every
``every_s`` seconds or every ``every_pct`` percent of the work, and once at
the end.
"""

from __future__ import annotations

import sys
import time
from typing import IO

from tqdm import tqdm

EVERY_S = 10.0  # a log line at least this often while work completes
EVERY_PCT = 10.0  # ... and at each such step of the total
# the time left from the mean pace since the start: work completes in bursts (a batch of points, a Spark task's
# points), and tqdm's default moving average of the recent pace swung a study's estimate from 00:00 to an hour
SMOOTHING = 0.0
LOG_FORMAT = "{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} {unit}s [{elapsed} elapsed, {remaining} left{postfix}]"


class _Lines:
    """The stream a LineBar writes to: whole lines pass, tqdm's own carriage returns and blank endings do not."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def write(self, s: str) -> None:
        if s.strip("\r\n"):
            self.stream.write(s)

    def flush(self) -> None:
        self.stream.flush()


class LineBar(tqdm):
    """tqdm for a non-terminal: one whole line every `every_s` seconds or `every_pct` percent, and the last state."""

    def __init__(self, *args, every_s: float = EVERY_S, every_pct: float = EVERY_PCT, file: IO[str] | None = None,
                 **kwargs):
        self.every_s, self.every_pct = float(every_s), float(every_pct)
        self._printed_at: float | None = None  # when the last line was written
        self._printed_n = -1  # the count it showed
        self._printed_total = None  # and the total (a caller may correct it once it knows)
        kwargs.update(mininterval=0, miniters=1, bar_format=LOG_FORMAT, smoothing=SMOOTHING)
        super().__init__(*args, file=_Lines(file or sys.stderr), **kwargs)

    def _step(self, n: float) -> int:
        return int(n * 100.0 / self.total // self.every_pct) if self.total else 0

    def display(self, msg=None, pos=None):  # tqdm's documented hook for where a bar is shown
        if msg == "":  # a request to clear the bar: a log keeps its lines
            return True
        now = time.monotonic()
        due = (self._printed_at is None
               or now - self._printed_at >= self.every_s
               or self._step(self.n) > self._step(max(self._printed_n, 0))
               or (self.total and self.n >= self.total)
               or getattr(self, "_closing", False))
        if not due or (self.n == self._printed_n and self.total == self._printed_total
                       and not getattr(self, "_closing", False)):
            return True
        self.fp.write(str(self) + "\n")
        self.fp.flush()
        self._printed_at, self._printed_n, self._printed_total = now, self.n, self.total
        return True

    def close(self):
        if not self.disable and self.n != self._printed_n:
            self._closing = True  # the final count, whatever the pace
        super().close()


def progress_bar(total: int, desc: str, *, unit: str = "run", disable: bool = False,
                 file: IO[str] | None = None) -> tqdm:
    """A tqdm bar on `file` (stderr): live on a terminal, whole lines every few seconds or percent elsewhere."""
    stream = file or sys.stderr
    is_tty = getattr(stream, "isatty", lambda: False)()
    if is_tty:
        return tqdm(total=total, desc=desc, unit=unit, file=stream, disable=disable, dynamic_ncols=True,
                    smoothing=SMOOTHING)
    return LineBar(total=total, desc=desc, unit=unit, file=stream, disable=disable)
