"""Sweep progress: a live bar on a terminal, whole lines every few seconds or percent in a file or a CI log."""

from __future__ import annotations

import io

from tqdm import tqdm

from kafkamodel.kit import progress
from kafkamodel.kit.progress import LineBar, progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_line_per_tenth_not_one_per_update():
    log = io.StringIO()
    bar = progress_bar(576, "sweep", file=log)
    bar.set_postfix_str("3 already done")
    for i in range(576):
        bar.update(1)
        if i == 100:
            bar.set_postfix_str("3 already done, 1 failed")
    bar.close()
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    # the start, each 10 % step, nothing else (the 576 updates took well under EVERY_S)
    assert [line.split("%")[0].split(":")[1].strip() for line in lines] == [str(p) for p in range(0, 101, 10)]
    assert lines[-1].startswith("sweep: 100% 576/576 runs") and lines[-1].endswith("1 failed]")
    assert all(line.strip() for line in lines)


def test_a_slow_sweep_gets_a_line_every_few_seconds(monkeypatch):
    clock = {"now": 1000.0}
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock["now"])
    log = io.StringIO()
    bar = progress_bar(10_000, "sweep (spark)", file=log)  # one update is 0.01 %: only the clock can trigger a line
    for _ in range(65):
        clock["now"] += 1.0  # a point a second
        bar.update(1)
    lines_before_close = log.getvalue().splitlines()
    bar.close()
    lines = log.getvalue().splitlines()
    assert len(lines_before_close) == 1 + 65 // int(progress.EVERY_S)  # the start, then one per EVERY_S seconds
    assert lines_before_close[-1].startswith("sweep (spark):   1% 60/10000 runs")
    assert lines[-1].startswith("sweep (spark):   1% 65/10000 runs")  # closing prints the last count once
    assert len(lines) == len(lines_before_close) + 1


def test_a_terminal_gets_tqdms_live_bar_and_disabled_means_silent():
    tty = Terminal()
    bar = progress_bar(5, "sweep", file=tty)
    assert type(bar) is tqdm
    bar.update(5)
    bar.close()
    assert "\r" in tty.getvalue()  # redrawn in place
    quiet = io.StringIO()
    bar = progress_bar(5, "sweep", file=quiet, disable=True)
    assert isinstance(bar, LineBar)
    bar.update(5)
    bar.close()
    assert quiet.getvalue() == ""


def test_the_time_left_follows_the_mean_pace_not_the_last_burst():
    """Points complete in bursts (a batch's 20 at once): after 10 runs in 10 s then 10 more in the next second,
    100 - 20 = 80 runs are left at the mean pace of 20 runs in 11 s: 44 s, not the burst's 8 s."""
    for file in (io.StringIO(), Terminal()):
        clock = {"now": 0.0}
        bar = progress_bar(100, "sweep", file=file)
        bar._time = lambda: clock["now"]  # tqdm's own clock
        bar.start_t = bar.last_print_t = 0.0
        for at in (10.0, 11.0):
            clock["now"] = at
            bar.update(10)
        pace = bar.format_dict
        left = (pace["total"] - pace["n"]) / (pace["n"] / pace["elapsed"])
        assert pace["rate"] is None and round(left) == 44  # no moving average: tqdm takes n / elapsed
        assert "00:44" in tqdm.format_meter(**pace)
        bar.close()
