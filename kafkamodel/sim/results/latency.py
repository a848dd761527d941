"""The run's latencies streamed into histograms (``histogram``), a bounded chunk of records at a time, for a run
that does not keep its per-record table (``results.records: sample | none``).

A batch's records share its acknowledgement and its visibility (below a leader's HW): each record's produce
latency is its batch's ack_ms less its own send_ms, its end-to-end latency its batch's visible_ms less its send_ms.
The batches are taken a chunk of about ``CHUNK`` records at a time, so the temporaries stay that size whatever
the run's length; a consumer group's latencies (its own per-record first_processed_ms) likewise.
"""

from __future__ import annotations

import numpy as np

from .histogram import LatencyHistogram, exact_top

CHUNK = 1 << 18  # records per chunk: 262,144 (a few MB of temporaries)


def _chunks(counts: np.ndarray, size: int):
    """Slices of consecutive rows whose counts add up to about `size` (a row larger than `size` alone)."""
    if not len(counts):
        return
    # (int32 while the rows' records fit it and a chunk past the last: half the bytes of int64)
    reach = np.cumsum(counts, dtype=np.int32 if counts.sum(dtype=np.int64) < 2**31 - size else np.int64)
    start = 0
    while start < len(counts):
        base = int(reach[start - 1]) if start else 0
        stop = max(int(np.searchsorted(reach, base + size, side="right")), start + 1)
        yield slice(start, stop)
        start = stop


def stream_batches(end, account) -> dict:
    """Histograms of the produce latency (acknowledged records), the end-to-end latency (records some leader's HW
    covered) and, with operations, the produce latency of the acknowledged records sent in their window."""
    w = end.workload
    acked, visible = account.acked, ~np.isnan(account.visible_ms)
    produce = LatencyHistogram(exact_top(account.records(acked)))
    e2e = LatencyHistogram(exact_top(account.records(visible)))
    window = end.operations["window"]
    # (its p99.9 and maximum exact: as many top values kept as the p99.9 of every acknowledged record needs)
    during = LatencyHistogram(exact_top(account.records(acked))) if window is not None else None
    acked |= visible
    del visible
    rows = _nonzero(acked)
    del acked
    counts = account.count[rows]
    for part in _chunks(counts, CHUNK):
        chunk, n = rows[part], counts[part]
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
        seen = np.repeat(account.visible_ms[chunk], n)
        seen -= send
        e2e.add(seen[~np.isnan(seen)])
    return {"produce": produce, "e2e": e2e, "during": during}


def _nonzero(mask: np.ndarray) -> np.ndarray:
    """``np.flatnonzero(mask)``, int32 while the mask is shorter than 2^31, found a block at a time (a production
    run has millions of batches: the int64 indexes of all of them at once would cost twice the result)."""
    if len(mask) >= 2**31:
        return np.flatnonzero(mask)
    block = 1 << 20
    parts = [np.flatnonzero(mask[a:a + block]).astype(np.int32) + np.int32(a) for a in range(0, len(mask), block)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


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
