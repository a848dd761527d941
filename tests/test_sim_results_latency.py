"""latency: the streamed latencies take the batches a chunk at a time, read a block of the batch table at a time;
the chunks are the ones one pass over every selected row's running record count gives (each chunk as many rows
as fit in its records, a row past them alone), whatever the block size, so the histograms' sums come out alike."""

from __future__ import annotations

import numpy as np
import pytest

from kafkamodel.sim.results import accounting, latency


def _whole_pass(counts: np.ndarray, size: int) -> list[slice]:
    """The chunks over all selected rows at once: from each chunk's start, the rows whose running count stays
    within `size` of the records before it, at least one."""
    reach = np.cumsum(counts)
    out, start = [], 0
    while start < len(counts):
        base = int(reach[start - 1]) if start else 0
        stop = start + 1
        while stop < len(counts) and reach[stop] - base <= size:
            stop += 1
        if reach[start] - base > size:
            stop = start + 1
        out.append(slice(start, stop))
        start = stop
    return out


@pytest.mark.parametrize("seed", range(40))
def test_chunks_read_a_block_at_a_time_are_the_whole_passes(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(accounting, "BLOCK", int(rng.choice([1, 3, 64, 1 << 20])))
    nb = int(rng.integers(0, 2000))
    count = rng.integers(1, int(rng.choice([2, 10, 300])), nb).astype(np.int16)
    mask = rng.random(nb) < rng.random()
    size = int(rng.choice([1, 5, 50, 500]))
    rows = np.flatnonzero(mask)
    want = [(rows[s].tolist(), count[rows][s].tolist()) for s in _whole_pass(count[rows], size)]
    got = [(r.tolist(), n.tolist()) for r, n in latency._chunks(lambda a, b: mask[a:b], count, size)]
    assert got == want
    assert sum(len(r) for r, _ in want) == len(rows)
