"""The run's latencies streamed into histograms (``histogram``), a bounded chunk of records at a time, for a run
that does not keep its per-record table (``results.records: sample | none``).

A batch's records share its acknowledgement and its visibility (below a leader's HW): each record's produce
latency is its batch's ack_ms less its own send_ms, its end-to-end latency its batch's visible_ms less its send_ms.
The batches are taken a chunk of about ``CHUNK`` records at a time, so the temporaries stay that size whatever
the run's length; a consumer group's latencies (its own per-record first_processed_ms) likewise.

A run that can (``workload.fold_possible``: no records table, no consumer group, no operations, open-loop
producers) folds its settled batches into the histograms as it goes (``Fold``), the same chunks and so the same
numbers, and gives back the pages of the records it folded (``workload.RecordPages``): the records' times and keys
are then held only while their batches are in the accumulator, in flight or not yet visible.
"""

from __future__ import annotations

import numpy as np

from ..protocol import ACKED, FAILED
from . import accounting
from .histogram import LatencyHistogram, exact_top

CHUNK = 1 << 18  # records per chunk: 262,144 (a few MB of temporaries)


class _Packer:
    """``_chunks``' packing fed a block of selected rows at a time: runs of consecutive rows whose counts add up to at
    most `size` (a row larger than `size` alone), each as long as that allows. The chunk being filled is kept between
    blocks, so the chunks do not depend on where the blocks are cut (a run's folding feeds them as it goes,
    ``Fold``, and the end feeds the rest: the same chunks as one pass at the end)."""

    __slots__ = ("size", "pending", "filled")

    def __init__(self, size: int):
        self.size = size
        self.pending: list = []  # the chunk being filled: (rows, counts) pieces, their records `filled`
        self.filled = 0

    def feed(self, rows: np.ndarray, n: np.ndarray):
        """The chunks the rows `rows` (selected, in order, after every row fed before) with counts `n` complete."""
        size = self.size
        reach = np.cumsum(n, dtype=np.int64)
        i = 0
        while i < len(rows):
            before = int(reach[i - 1]) if i else 0
            j = max(int(np.searchsorted(reach, before + size - self.filled, side="right")), i)  # rows i..j-1 fit
            if j == i and not self.pending:
                j = i + 1  # a row larger than `size`: a chunk of its own
            if j > i:
                self.pending.append((rows[i:j], n[i:j]))
                self.filled += int(reach[j - 1]) - before
                i = j
            if i < len(rows):  # the next row does not fit: the chunk is done
                yield _joined(self.pending)
                self.pending, self.filled = [], 0

    def flush(self):
        """The last chunk (if any rows wait in it)."""
        if self.pending:
            yield _joined(self.pending)
            self.pending, self.filled = [], 0

    def first_pending(self) -> int:
        """The first row of the chunk being filled (-1: none)."""
        return int(self.pending[0][0][0]) if self.pending else -1


def _chunks(mask_of, count: np.ndarray, size: int, packer: _Packer | None = None, start: int = 0):
    """The rows `mask_of(a, b)` selects among rows [a, b), as (rows, their counts): runs of consecutive selected
    rows whose counts add up to at most `size` (a row larger than `size` alone), each as long as that allows.
    The batch table is read a block of rows at a time, so no index of every selected row is made. `packer`, `start`:
    go on with a packer fed the rows before `start` already (``Fold``)."""
    block = accounting.BLOCK
    index = np.int32 if len(count) <= 2**31 - block else np.int64
    packer = packer if packer is not None else _Packer(size)
    for a in range(start, len(count), block):
        rows = np.flatnonzero(mask_of(a, min(a + block, len(count)))).astype(index)
        rows += index(a)
        yield from packer.feed(rows, count[rows])
    yield from packer.flush()


def _joined(pieces: list) -> tuple:
    if len(pieces) == 1:
        return pieces[0]
    return np.concatenate([r for r, _ in pieces]), np.concatenate([n for _, n in pieces])


def _add_chunk(h: dict, window, chunk: np.ndarray, n: np.ndarray, lo: np.ndarray, send_of, ack_of, visible_of) -> None:
    """A chunk of batches (`chunk`, their record counts `n`, first records `lo`) into the histograms `h`: each
    record's produce latency (its batch's ack time, `ack_of(chunk)`, less its send() call, `send_of(records)`), the
    ones sent in the operations' `window` too, and its end-to-end latency (`visible_of(chunk)` less its send())."""
    total = int(n.sum())
    firsts = np.repeat(lo - (np.cumsum(n) - n), n)
    firsts += np.arange(total)  # each record's workload index
    send = send_of(firsts, chunk, n)
    del firsts
    ack = np.repeat(ack_of(chunk), n)
    ack -= send
    took = ~np.isnan(ack)
    h["produce"].add(ack[took])
    if h["during"] is not None:
        start, stop = window[0], window[1]  # (its third: whether every operation finished)
        h["during"].add(ack[took & (send >= start) & (send <= stop)])
    del ack, took
    seen = np.repeat(visible_of(chunk), n)
    seen -= send
    h["e2e"].add(seen[~np.isnan(seen)])


def stream_batches(end, account) -> dict:
    """Histograms of the produce latency (acknowledged records), the end-to-end latency (records some leader's HW
    covered) and, with operations, the produce latency of the acknowledged records sent in their window. A run that
    folded its settled batches as it went (``Fold``) goes on from where it stopped."""
    w = end.workload
    acked = account.records(account.acked)
    committed = account.records(account.committed)
    window = end.operations["window"]
    fold = w.fold
    if fold is None:
        h = {"produce": LatencyHistogram(exact_top(acked)), "e2e": LatencyHistogram(exact_top(committed)),
             # (its p99.9 and maximum exact: as many top values kept as the p99.9 of every acknowledged record needs)
             "during": LatencyHistogram(exact_top(acked)) if window is not None else None}
        packer, start = None, 0
    else:
        if window is not None:
            raise ValueError("latency: a run with operations does not fold its batches as it goes")
        h = {"produce": fold.produce, "e2e": fold.e2e, "during": None}
        packer, start = fold.packer, fold.upto
    state, visible_at = account.state, account.visible_at

    def taken(a: int, b: int) -> np.ndarray:  # acknowledged, or some leader's HW covered it
        return (state[a:b] == ACKED) | (visible_at[a:b] != 0)

    send_ms = w.send_ms

    def send_of(records: np.ndarray, chunk, n) -> np.ndarray:
        return send_ms[records]

    for chunk, n in _chunks(taken, account.count, CHUNK, packer, start):
        _add_chunk(h, window, chunk, n, account.lo[chunk], send_of, account.ack_ms_of, account.visible_ms_of)
    if fold is not None:  # (the top values kept for the bound on the records, trimmed to what the counts need)
        h["produce"].trim(exact_top(acked))
        h["e2e"].trim(exact_top(committed))
    return h


FOLD_MS = 200.0  # simulated ms between two sweeps of the batch table that fold its settled batches (``Fold``)


class Fold:
    """The latencies of a run without a records table (results.records: none) folded into the histograms as the
    run goes, so the records' times can be given back (``workload.RecordPages``).

    A batch's latencies are final once it is settled: acknowledged (``Batches.acked`` runs once a batch: an acked
    batch is never sent again, an answer to another attempt is void) or failed for good (never acknowledged after),
    and visible (``visible_at`` is written once, the first time a leader's HW covers it; a duplicate copy changes
    nothing). Every ``FOLD_MS`` the batch table is read from ``upto``: the rows up to its first unsettled row (a
    prefix: the end goes on from there, feeding the same packer, so the chunks, the values and each chunk's sums are
    the ones one pass at the end makes) are fed to the packer, and the chunks it completes go into the histograms.
    An unsettled row stops the sweep there (a batch acknowledged and never covered, with acks=1 after a leader's
    loss, stops it for the rest of the run: the end folds the rest, as before). The top values are kept for the
    bound of every record of the run, and trimmed at the end (``stream_batches``)."""

    def __init__(self, records: int):
        self.produce = LatencyHistogram(exact_top(records))
        self.e2e = LatencyHistogram(exact_top(records))
        self.packer = _Packer(CHUNK)
        self.upto = 0  # the rows below this are fed to the packer
        self.done = 0  # the rows below this are in the histograms (the packer's chunk being filled starts here)
        self.runs = 0  # the batch table's acknowledgement runs read so far
        self.base = 0  # the row ``ack[0]`` is
        self.ack = np.empty(0, dtype=np.float64)  # rows base.. : their acknowledgement time (NaN: none yet)
        self.account = None  # the account folded beside the latencies, where the run allows it (accounting.AccountFold)

    def sweep(self, batches, times: np.ndarray, send_calls) -> tuple[int, int]:
        """Fold the settled rows from ``upto``: each record's send() call is `send_calls(times, records, producers)`
        (``Workload.send_calls``, the rule the end's send() calls are made by) of its time in the accumulator
        (`times`). Returns the rows newly in the histograms, [first, last)."""
        rows = len(batches)
        first = self.done
        if rows <= self.upto or batches.state[self.upto] not in (ACKED, FAILED) or not batches.visible_at[self.upto]:
            return first, first  # (the prefix stops at its first row: no read of the rest, nor of the new runs)
        state = np.frombuffer(batches.state, dtype=batches.state.typecode)[self.upto:rows]
        visible_at = np.frombuffer(batches.visible_at, dtype=batches.visible_at.typecode)[self.upto:rows]
        settled = ((state == ACKED) | (state == FAILED)) & (visible_at != 0)
        del state, visible_at  # (no view of a column outlives the sweep: the columns grow)
        stop = self.upto + (int(np.argmin(settled)) if not settled.all() else len(settled))
        del settled
        # the acknowledgement times of the rows still to fold, from the runs made since the last sweep
        keep = self.done if self.packer.pending else self.upto
        ack = np.full(rows - keep, np.nan)
        ack[:len(self.ack) - (keep - self.base)] = self.ack[keep - self.base:]
        self.base, self.ack = keep, ack
        runs = len(batches.acks_first)
        if runs > self.runs:
            starts = np.frombuffer(batches.acks_first, dtype=batches.acks_first.typecode)[self.runs:runs].astype(np.int64)
            counts = np.frombuffer(batches.acks_count, dtype=batches.acks_count.typecode)[self.runs:runs].astype(np.int64)
            at = np.frombuffer(batches.acks_ms, dtype=np.float64)[self.runs:runs]
            each = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
            ack[each - keep] = np.repeat(at, counts)
            del starts, counts, at, each
            self.runs = runs
        if stop > self.upto:
            lo = np.frombuffer(batches.lo, dtype=batches.lo.typecode)
            count = np.frombuffer(batches.count, dtype=batches.count.typecode)
            instants = np.frombuffer(batches.visible_instants, dtype=np.float64)
            visible = np.frombuffer(batches.visible_at, dtype=batches.visible_at.typecode)
            h = {"produce": self.produce, "e2e": self.e2e, "during": None}
            base = self.base
            producer = batches.producer_column()

            def send_of(records: np.ndarray, chunk: np.ndarray, n: np.ndarray) -> np.ndarray:
                return send_calls(times, records, np.repeat(producer[chunk], n))

            def ack_of(chunk: np.ndarray) -> np.ndarray:
                return ack[chunk - base]

            def visible_of(chunk: np.ndarray) -> np.ndarray:
                return instants[visible[chunk]]

            fed = np.arange(self.upto, stop, dtype=np.int64)
            for chunk, n in self.packer.feed(fed, count[fed]):
                _add_chunk(h, None, chunk, n, lo[chunk], send_of, ack_of, visible_of)
            del lo, count, instants, visible, fed, ack_of, visible_of, send_of, producer
            self.upto = stop
            pending = self.packer.first_pending()
            self.done = pending if pending >= 0 else stop
        return first, self.done


def stream_group(g, send_ms: np.ndarray) -> LatencyHistogram:
    """A group's send -> first processed latencies, CHUNK records at a time."""
    done = g.first_processed_ms
    n = 0
    for i in range(0, len(done), CHUNK):
        n += int(np.count_nonzero(~np.isnan(done[i:i + CHUNK])))
    h = LatencyHistogram(exact_top(n))
    for i in range(0, len(done), CHUNK):
        part = done[i:i + CHUNK]
        took = ~np.isnan(part)
        h.add(part[took] - send_ms[i:i + CHUNK][took])
    return h
