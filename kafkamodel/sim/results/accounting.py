"""Loss, duplicates, order and delivery counted per batch: Kafka's unit of atomicity.

A producer batch is appended, replicated, truncated and read whole: every
record of a batch shares its fate (acknowledged, failed, committed, visible)
and its copies in the final log. So each count of records the summary gives
is a sum of batch record counts over the batches that qualify, exactly what
a walk over the records would give, at a cost that follows the batches:

* ``acked_records_lost``: acknowledged batches with no copy in the final log
  of the partition's last leader; ``committed_records_lost``: batches some
  leader's HW covered, with no copy; ``records_duplicated``: batches with
  more than one copy (retention's deleted segments count as present);
* ``records_out_of_order``: records (each copy) in the final log that come
  after a record their producer sent later to the same partition (Kafka keeps
  one producer's order per partition; without idempotence a resend breaks it:
  a batch overtaken by a later one, or a duplicate copy after the original's
  later records). A batch is a contiguous range of its producer's records for
  one partition (``batches``), in order within itself, so each copy's count is
  its records below the latest record logged before it;
* a consumer group's ``consumed_lost``: records in the final log from where
  the group started (``origin``) up to its committed offset, never processed
  and not in a poll a live member is still working on. A poll may end inside
  a batch (``max.poll.records``), so the group's per-record ``processed``
  counts are summed over each batch's offset range below the committed
  offset (a chunk of the group's own array at a time, no per-record table).

The per-record table (``result.records``), when kept, gives the same numbers
record by record (tests/test_sim_results_accounting.py checks both ways).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..protocol import ACKED, FAILED, INFLIGHT, NONE, PENDING



class FinalLogs:
    """Per batch: how many copies the last leaders' logs hold and, when asked for (the per-record table's offsets, a
    consumer group's delivery), the base offset of its first and last copy; and how many records of the copies are
    out of their producer's order (``records_out_of_order``: only the total is read, so only the total is kept)."""

    def __init__(self, end, lo: np.ndarray, count: np.ndarray, producer):
        """`lo`, `count`, `producer`: the batches' columns as ``BatchAccount`` holds them (`producer` read by index
        arrays)."""
        nb = self.rows = len(end.batches)
        self.presence = np.zeros(nb, dtype=np.int16)  # copies (the per-record table's `copies` type)
        self.out_of_order = 0  # records of the copies after a later one of their producer's
        self.finals = []  # each partition's final log (the last leader's) that holds anything
        self._bases = None  # (first_base, last_base), made when first asked for: 16 bytes a batch
        for part in end.partitions:
            final = end.replicas[part.index][part.last_leader].log
            if not final.rows and final.retired is None:
                continue  # a partition that never held a record (most, in a large idle cluster)
            self.finals.append(final)
            ids = _data_ids(final)
            np.add.at(self.presence, ids, 1)
            self._order(ids, lo, count, producer)

    @property
    def first_base(self) -> np.ndarray:
        """int64 per batch: the base offset of its first copy in the final log (-1: none)."""
        return self._base_offsets()[0]

    @property
    def last_base(self) -> np.ndarray:
        """int64 per batch: the base offset of its last copy in the final log (-1: none)."""
        return self._base_offsets()[1]

    def _base_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        if self._bases is None:
            first = np.full(self.rows, -1, dtype=np.int64)
            last = np.full(self.rows, -1, dtype=np.int64)
            for final in self.finals:
                ids, bases = _data_ids(final, with_bases=True)
                first[ids[::-1]] = bases[::-1]  # written in reverse: the first copy's base is written last
                last[ids] = bases
            self._bases = first, last
        return self._bases

    def _order(self, ids: np.ndarray, lo: np.ndarray, count: np.ndarray, producer) -> None:
        """Count the records of each copy that come after a record its producer sent later (a higher
        workload index: the workload holds records by producer, partition and send time). A copy's records are in
        order among themselves, so those of batch X after entries reaching up to record M are X's records below M:
        min(max(M - lo, 0), count). Sorted by (producer, log position), each producer's indexes lifted above the
        one's before, a running maximum compares each copy only with its own producer's before it."""
        if len(ids) < 2:
            return
        owner = producer[ids]
        order = np.lexsort((np.arange(len(ids)), owner))
        seq = ids[order]
        lift = owner[order].astype(np.int64) << 44
        starts = lo[seq] + lift
        sizes = count[seq].astype(np.int64)
        reach = np.maximum.accumulate(starts + sizes - 1)  # the latest record up to each copy, included
        behind = np.zeros(len(seq), dtype=np.int64)
        behind[1:] = np.clip(reach[:-1] - starts[1:], 0, sizes[1:])
        self.out_of_order += int(behind.sum())


def _log_column(final, name: str, retired: int) -> np.ndarray:
    """A final log's column (``Log.bases`` or ``Log.batch_ids``) as int64, the entries retention deleted first
    (`retired`: their column's position in ``Log.retired``; what retention deleted was there, not lost)."""
    column = getattr(final, name)
    out = np.frombuffer(column, dtype=column.typecode)[:final.rows]
    if final.retired is not None:
        kept = final.retired[retired]
        out = np.concatenate((np.frombuffer(kept, dtype=kept.typecode), out))
    return out.astype(np.int64)


def _data_ids(final, with_bases: bool = False):
    """The batch ids of a final log's entries that hold a producer batch, in log order (int64), retention's deleted
    ones first; `with_bases`: and their base offsets (int64), as a pair."""
    ids = _log_column(final, "batch_ids", 1)
    data = ids >= 0
    if not with_bases:
        return ids[data]
    return ids[data], _log_column(final, "bases", 0)[data]


def _view(cells, dtype=None) -> np.ndarray:
    """A batch table's column (an ``array.array``) as a NumPy array over the same memory (its own type, or `dtype`
    of the same width): no copy, so the account costs what the final logs add, not a second batch table. (While
    a view lives its column cannot grow: the account is made once the run has ended.)"""
    return np.frombuffer(cells, dtype=dtype or cells.typecode) if len(cells) else np.zeros(0, dtype or cells.typecode)


def _ack_runs(batches) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch table's acknowledgement runs (``Batches.acked``) ordered by their first batch (they never overlap:
    a batch is acknowledged once): (first, end, time)."""
    first = _view(batches.acks_first).astype(np.int64)
    order = np.argsort(first, kind="stable")
    first = first[order]
    return first, first + _view(batches.acks_count)[order], _view(batches.acks_ms)[order]


@dataclass(frozen=True)
class BatchAccount:
    """Every batch's fate and its copies, a row per batch (the batch table's columns themselves, read in place),
    and ``undrained``: the records no batch took (still in the accumulator at the end: never sent). Sums of
    ``count`` over rows give the summary's record counts."""

    count: np.ndarray  # records in the batch (the batch table's type: int8, int16 or int32)
    partition: np.ndarray  # global partition index (int16 or int32)
    producer: object  # int16, read by slices or index arrays (the batch table's runs: ``batches.RunColumn``)
    lo: np.ndarray  # its first record (workload index): the batch table's type
    state: np.ndarray  # int8: PENDING, INFLIGHT, ACKED, FAILED
    # when acknowledged (read through ``ack_ms_of``): the batch table's runs of batches acknowledged at one time
    # (``Batches.acked``), ordered by their first batch: (first, end: int64, time: float64), no column a batch
    acks: tuple[np.ndarray, np.ndarray, np.ndarray]
    # when some leader's HW first covered it (read through ``visible_ms_of``): the batch table's index of that
    # instant (int32; 0: none has, so not committed) and the instants (float64, NaN first: ``Batches.visible_at``)
    visible_at: np.ndarray
    visible_instants: np.ndarray
    errors: dict  # batch -> its last error (Kafka's error codes), for the batches that have one (``error``)
    undrained: int  # records no batch took
    logs: FinalLogs

    @classmethod
    def of(cls, end) -> "BatchAccount":
        b = end.batches
        count, lo, producer = _view(b.count), _view(b.lo), b.producer_column()
        undrained = end.workload.records - int(count.sum(dtype=np.int64))
        return cls(count=count, partition=_view(b.partition), producer=producer, lo=lo, state=_view(b.state),
                   acks=_ack_runs(b), visible_at=_view(b.visible_at), visible_instants=_view(b.visible_instants),
                   errors=b.error, undrained=undrained, logs=FinalLogs(end, lo, count, producer))

    def ack_ms_of(self, rows: np.ndarray) -> np.ndarray:
        """The acknowledgement times of the batches `rows` (a new array): NaN where not acknowledged."""
        first, end, at = self.acks
        if not len(first):
            return np.full(len(rows), np.nan)
        k = np.searchsorted(first, rows, side="right") - 1  # the run starting at or before each row
        k[k < 0] = 0
        return np.where((self.state[rows] == ACKED) & (rows >= first[k]) & (rows < end[k]), at[k], np.nan)

    def visible_ms_of(self, rows) -> np.ndarray:
        """When some leader's HW first covered the batches `rows` (indexes or a slice; a new float64 array): NaN
        where none has."""
        return self.visible_instants[self.visible_at[rows]]

    @property
    def visible_ms(self) -> np.ndarray:
        """Every batch's visible time (a new float64 array; NaN where not committed)."""
        return self.visible_instants[self.visible_at]

    @property
    def error(self) -> np.ndarray:
        """Every batch's last error (a new int16 array; NONE where it has none)."""
        out = np.full(len(self.state), NONE, dtype=np.int16)
        if self.errors:
            out[np.fromiter(self.errors.keys(), dtype=np.int64)] = np.fromiter(self.errors.values(), dtype=np.int16)
        return out

    @property
    def ack_ms(self) -> np.ndarray:
        """Every batch's acknowledgement time (a new float64 array; NaN where not acknowledged)."""
        return self.ack_ms_of(np.arange(len(self.state)))

    # ---- masks over the rows ----------------------------------------------------------------------------------
    # Each mask is a method of the rows it covers (a slice or indexes; every row by default): the record counts take
    # it a block of rows at a time (``records``, ``per_partition``, ``per_producer``), so no mask of every batch
    # (a byte a batch each) is made beside the batch table.

    def acked(self, rows=slice(None)) -> np.ndarray:
        return self.state[rows] == ACKED

    def waiting(self, rows=slice(None)) -> np.ndarray:
        """Sent by the application, not answered yet (in the accumulator or in flight)."""
        state = self.state[rows]
        return (state == PENDING) | (state == INFLIGHT)

    def committed(self, rows=slice(None)) -> np.ndarray:
        """Some leader's HW covered it (``visible_at`` is set)."""
        return self.visible_at[rows] != 0

    def failed(self, rows=slice(None)) -> np.ndarray:
        return self.state[rows] == FAILED

    def absent(self, rows=slice(None)) -> np.ndarray:
        return self.logs.presence[rows] == 0

    def acked_lost(self, rows=slice(None)) -> np.ndarray:
        """Acknowledged and absent."""
        return self.acked(rows) & self.absent(rows)

    def committed_lost(self, rows=slice(None)) -> np.ndarray:
        """Committed and absent."""
        return self.committed(rows) & self.absent(rows)

    def duplicated(self, rows=slice(None)) -> np.ndarray:
        return self.logs.presence[rows] > 1

    # ---- record counts ----------------------------------------------------------------------------------------

    def records(self, mask) -> int:
        """Records in the rows `mask` selects (one of the masks above), BLOCK rows at a time."""
        count = self.count
        return sum(int(count[rows][mask(rows)].sum(dtype=np.int64)) for rows in _blocks(len(count)))

    def per_partition(self, mask, partitions: int) -> np.ndarray:
        """Records in the rows `mask` selects (one of the masks above; None: every row), per global partition (the
        records no batch took are not in any: ``undrained_per_partition``)."""
        return _sums(self.partition, self.count, mask, partitions)

    def per_producer(self, mask, producers: int) -> np.ndarray:
        return _sums(self.producer, self.count, mask, producers)

    def out_of_order(self) -> int:
        """Records of the final logs' copies that come after a record their producer sent later."""
        return self.logs.out_of_order


def undrained_per_partition(total: np.ndarray, account: BatchAccount, partitions: int) -> np.ndarray:
    """Records still in the accumulator at the end, per partition: each partition's records (`total`, the
    workload's per partition) less those its batches took."""
    return total - account.per_partition(None, partitions)


BLOCK = 1 << 20  # batches the results' steps over the batch table read at a time (``_sums``, the streamed latencies,
#                 no_committed_record_lost): their temporaries stay this size whatever the run's length


def _blocks(n: int):
    """Slices of BLOCK rows covering rows 0..n-1."""
    return (slice(start, start + BLOCK) for start in range(0, n, BLOCK))


def _sums(index: np.ndarray, count: np.ndarray, mask, n: int) -> np.ndarray:
    """`count` summed by `index` (0..n-1) over the rows `mask` selects (a mask of ``BatchAccount``, called with a
    block's slice; None: all), int64, BLOCK rows at a time: a weighted bincount makes a float64 copy of its weights
    and an intp one of its index (16 bytes a batch, about 170 MB at the end of ten simulated seconds of the
    production case), here a chunk's."""
    out = np.zeros(n, dtype=np.int64)
    for rows in _blocks(len(index)):
        if mask is None:
            i, c = index[rows], count[rows]
        else:
            keep = mask(rows)
            i, c = index[rows][keep], count[rows][keep]
        out += np.bincount(i, weights=c, minlength=n).astype(np.int64)  # (whole numbers: exact in float64)
    return out


# ---- consumer groups ----------------------------------------------------------------------------------------

CHUNK = 1 << 18  # records of a group's per-record arrays read at a time (262,144)


def ranges_mask(records: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A per-record mask of disjoint ranges [start, end)."""
    steps = np.zeros(records + 1, dtype=np.int8)
    keep = ends > starts
    np.add.at(steps, starts[keep], 1)
    np.add.at(steps, ends[keep], -1)
    return np.cumsum(steps[:-1], dtype=np.int8).astype(bool)


def group_delivery(end, g, account: BatchAccount) -> dict:
    """A group's records_processed, consumed_lost and consumed_duplicates (``consumed_lost`` per batch: the
    records of each batch in the final log between the group's origin and its committed offset)."""
    processed = g.processed
    n = len(processed)
    P = len(end.partitions)
    origin = np.zeros(P, dtype=np.int64)
    reached = np.zeros(P, dtype=np.int64)  # the group resumes from its committed offsets: below them, what was
    for p in g.partitions:  # not processed never will be
        reached[p] = g.committed.get(p, 0)
    for p, start in g.origin.items():
        origin[p] = start
    logs = account.logs
    rows = np.flatnonzero(logs.presence > 0)
    part = account.partition[rows]
    rows = rows[reached[part] > origin[part]]
    part = account.partition[rows]
    base, count, lo = logs.first_base[rows], account.count[rows], account.lo[rows]
    first = np.clip(origin[part] - base, 0, count)  # the batch's positions in scope: [first, last)
    last = np.clip(reached[part] - base, 0, count)
    scope_lo, scope_hi = lo + first, lo + last  # the records in scope: disjoint ranges
    by_lo = np.argsort(scope_lo, kind="stable")
    starts, ends = scope_lo[by_lo], scope_hi[by_lo]
    lost = once = twice = 0
    for a in range(0, n, CHUNK):  # (a chunk of the group's per-record counts at a time)
        z = min(a + CHUNK, n)
        chunk = processed[a:z]
        once += int(np.count_nonzero(chunk > 0))
        twice += int(np.count_nonzero(chunk > 1))
        i, j = np.searchsorted(ends, a, side="right"), np.searchsorted(starts, z, side="left")
        if j > i:
            mine = ranges_mask(z - a, np.clip(starts[i:j], a, z) - a, np.clip(ends[i:j], a, z) - a)
            lost += int(np.count_nonzero(mine & (chunk == 0)))
    # less those in a poll a live member is still working on (its slices may overlap: each record once)
    working: set = set()
    for m in g.members:
        if m.alive and m.processing is not None:
            for b, s_first, s_last, _ in m.processing[1]:
                at = int(np.searchsorted(rows, b))
                if at == len(rows) or rows[at] != b:
                    continue  # not in the final log, or not in the group's scope
                start = end.batches.lo[b] + s_first
                working.update(range(max(int(lo[at] + first[at]), start),
                                     min(int(lo[at] + last[at]), start + s_last - s_first)))
    lost -= sum(1 for i in working if processed[i] == 0)
    return {"records_processed": once, "consumed_lost": lost, "consumed_duplicates": twice}


def group_lag(end_ms: float, g, account: BatchAccount) -> dict:
    """How long the group's partitions went unconsumed, and its lag: records of its topic visible (below the HW)
    and not yet processed, at its worst and at the end.

    A batch becomes visible whole (+ its count at its visible_ms); each record leaves the lag when first processed
    (at equal times, processed first). The lag only rises at a batch's visible time, so its worst is the largest
    of (records visible by then) - (records processed by then) over those times: the processed records are
    counted against the sorted visible times a chunk of records at a time, not sorted themselves."""
    paused = dict(g.paused_ms)
    for p, since in g.unowned_from.items():
        paused[p] += end_ms - since
    rows = np.flatnonzero(np.isin(account.partition, g.partitions) & account.committed())
    seen = account.visible_ms_of(rows)
    by_time = np.argsort(seen, kind="stable")
    seen = seen[by_time]
    visible = np.cumsum(account.count[rows][by_time], dtype=np.int64)  # records visible by each visible time
    lo = account.lo[rows]
    by_lo = np.argsort(lo, kind="stable")
    starts, ends = lo[by_lo], (lo + account.count[rows])[by_lo]
    reached = np.zeros(len(seen) + 1, dtype=np.int64)  # processed records whose next visible time is this one
    done = g.first_processed_ms
    for a in range(0, len(done), CHUNK):
        b = min(a + CHUNK, len(done))
        i, j = np.searchsorted(ends, a, side="right"), np.searchsorted(starts, b, side="left")
        if j <= i:
            continue  # no batch of the group's visible ones holds records here
        mine = ranges_mask(b - a, np.clip(starts[i:j], a, b) - a, np.clip(ends[i:j], a, b) - a)
        t = done[a:b][mine]
        t = t[~np.isnan(t)]
        reached += np.bincount(np.searchsorted(seen, t, side="left"), minlength=len(seen) + 1)
    processed = np.cumsum(reached[:-1])  # processed by each visible time (at it included)
    total = int(reached.sum())
    worst = int((visible - processed).max()) if len(seen) else None
    if total and (not len(seen) or processed[0] > 0):  # the walk starts with a record processed: lag -1
        worst = -1 if worst is None else max(worst, -1)
    return {"paused_partition_ms": float(sum(paused.values())), "paused_partition_ms_max": float(max(paused.values(), default=0.0)),
            "partitions_paused": sum(1 for v in paused.values() if v > 0),
            "lag_records_max": worst if worst is not None else 0,
            "lag_records_end": int(visible[-1] if len(seen) else 0) - total}
