"""The run's latencies streamed into histograms (``histogram``), a bounded chunk of records at a time, for a run
that does not keep its per-record table (``results.records: sample | none``).

A batch's records share its acknowledgement and its visibility (below a leader's HW): each record's produce
latency is its batch's ack_ms less its own send_ms, its end-to-end latency its batch's visible_ms less its send_ms.
The batches are taken a chunk of about ``CHUNK`` records at a time, so the temporaries stay that size whatever
the run's length; a consumer group's latencies (its own per-record first_processed_ms) likewise.
"""

from __future__ import annotations

import numpy as np

from ..protocol import ACKED
from . import accounting
from .histogram import LatencyHistogram, exact_top

CHUNK = 1 << 18  # records per chunk: 262,144 (a few MB of temporaries)


def _chunks(mask_of, count: np.ndarray, size: int):
    """The rows `mask_of(a, b)` selects among rows [a, b), as (rows, their counts): runs of consecutive selected
    rows whose counts add up to at most `size` (a row larger than `size` alone), each as long as that allows.
    The batch table is read a block of rows at a time, so no index of every selected row is made."""
    block = accounting.BLOCK
    index = np.int32 if len(count) <= 2**31 - block else np.int64
    pending: list = []  # the chunk being filled: (rows, counts) pieces, their records `filled`
    filled = 0
    for a in range(0, len(count), block):
        rows = np.flatnonzero(mask_of(a, min(a + block, len(count)))).astype(index)
        rows += index(a)
        n = count[rows]
        reach = np.cumsum(n, dtype=np.int64)
        i = 0
        while i < len(rows):
            before = int(reach[i - 1]) if i else 0
            j = max(int(np.searchsorted(reach, before + size - filled, side="right")), i)  # rows i..j-1 fit
            if j == i and not pending:
                j = i + 1  # a row larger than `size`: a chunk of its own
            if j > i:
                pending.append((rows[i:j], n[i:j]))
                filled += int(reach[j - 1]) - before
                i = j
            if i < len(rows):  # the next row does not fit: the chunk is done
                yield _joined(pending)
                pending, filled = [], 0
    if pending:
        yield _joined(pending)


def _joined(pieces: list) -> tuple:
    if len(pieces) == 1:
        return pieces[0]
    return np.concatenate([r for r, _ in pieces]), np.concatenate([n for _, n in pieces])


def stream_batches(end, account) -> dict:
    """Histograms of the produce latency (acknowledged records), the end-to-end latency (records some leader's HW
    covered) and, with operations, the produce latency of the acknowledged records sent in their window."""
    w = end.workload
    acked = account.records(account.acked)
    produce = LatencyHistogram(exact_top(acked))
    e2e = LatencyHistogram(exact_top(account.records(account.committed)))
    window = end.operations["window"]
    # (its p99.9 and maximum exact: as many top values kept as the p99.9 of every acknowledged record needs)
    during = LatencyHistogram(exact_top(acked)) if window is not None else None
    state, visible_at = account.state, account.visible_at

    def taken(a: int, b: int) -> np.ndarray:  # acknowledged, or some leader's HW covered it
        return (state[a:b] == ACKED) | (visible_at[a:b] != 0)

    for chunk, n in _chunks(taken, account.count, CHUNK):
        total = int(n.sum())
        firsts = np.repeat(account.lo[chunk] - (np.cumsum(n) - n), n)
        firsts += np.arange(total)  # each record's workload index
        send = w.send_ms[firsts]
        del firsts
        ack = np.repeat(account.ack_ms_of(chunk), n)
        ack -= send
        took = ~np.isnan(ack)
        produce.add(ack[took])
        if during is not None:
            start, stop = window[0], window[1]  # (its third: whether every operation finished)
            during.add(ack[took & (send >= start) & (send <= stop)])
        del ack, took
        seen = np.repeat(account.visible_ms_of(chunk), n)
        seen -= send
        e2e.add(seen[~np.isnan(seen)])
    return {"produce": produce, "e2e": e2e, "during": during}


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
