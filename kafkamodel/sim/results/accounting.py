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

from dataclasses import dataclass, replace

import numpy as np

from ..protocol import ACKED, FAILED, INFLIGHT, NONE, PENDING



class FinalLogs:
    """Per batch: how many copies the last leaders' logs hold and, when asked for (the per-record table's offsets, a
    consumer group's delivery), the base offset of its first and last copy; and how many records of the copies are
    out of their producer's order (``records_out_of_order``: only the total is read, so only the total is kept)."""

    def __init__(self, end, lo: np.ndarray, count: np.ndarray, producer, fold: "AccountFold | None" = None):
        """`lo`, `count`, `producer`: the batches' columns as ``BatchAccount`` holds them (`producer` read by index
        arrays); `fold`: the account a run folded as it went (``AccountFold``), which this goes on from: each final
        log read from where the fold's reading stopped, the copies of the rows it has not folded and each
        producer's latest record per partition carried over."""
        nb = self.rows = len(end.batches)
        self.presence = np.zeros(nb, dtype=np.int16)  # copies (the per-record table's `copies` type)
        self.out_of_order = 0 if fold is None else fold.out_of_order  # records of the copies after a later one
        self.finals = []  # each partition's final log (the last leader's) that holds anything
        self._bases = None  # (first_base, last_base), made when first asked for: 16 bytes a batch
        self.fold = fold
        producers = len(end.settings.producers)
        if fold is not None:
            self.presence[fold.base:fold.base + len(fold.presence)] = fold.presence
        for part in end.partitions:
            final = end.replicas[part.index][part.last_leader].log
            start = 0
            if fold is not None:
                start = fold.resume(part.index, final)
            if not final.rows and final.retired is None:
                continue  # a partition that never held a record (most, in a large idle cluster)
            self.finals.append(final)
            ids = _data_ids(final, start=start)
            if fold is not None and len(ids) and int(ids.min()) < fold.base:
                raise RuntimeError("accounting: a copy of a folded batch was appended after its account was folded")
            np.add.at(self.presence, ids, 1)
            reach = fold.reach[part.index] if fold is not None else np.full(producers, -1, dtype=np.int64)
            self.out_of_order += order_behind(ids, producer[ids], lo, count, reach)

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
            if self.fold is not None and self.fold.base:
                raise RuntimeError("accounting: a run that folded its account keeps no copies' offsets")
            first = np.full(self.rows, -1, dtype=np.int64)
            last = np.full(self.rows, -1, dtype=np.int64)
            for final in self.finals:
                ids, bases = _data_ids(final, with_bases=True)
                first[ids[::-1]] = bases[::-1]  # written in reverse: the first copy's base is written last
                last[ids] = bases
            self._bases = first, last
        return self._bases

def order_behind(ids: np.ndarray, keys: np.ndarray, lo: np.ndarray, count: np.ndarray, reach: np.ndarray) -> int:
    """Records of the copies `ids` (batch ids, in log order) that come after a record their producer sent later (a
    higher workload index: the workload holds records by producer, partition and send time). `keys`: each copy's
    (producer, log) key, an index into `reach`, the latest record each key's copies before these reached (-1: none),
    updated here. A copy's records are in order among themselves, so those of batch X after copies reaching up to
    record M are X's records below M: min(max(M - lo, 0), count). Sorted by (key, log position), each key's records
    lifted above the key's before, a running maximum compares each copy only with its own key's before it, from
    the key's carried reach on."""
    if not len(ids):
        return 0
    keys = np.asarray(keys, dtype=np.int64)
    order = np.lexsort((np.arange(len(ids)), keys))
    seq, key = ids[order], keys[order]
    lift = key << _LIFT
    starts = lo[seq] + lift
    sizes = count[seq].astype(np.int64)
    carried = reach[key]
    carried = np.where(carried >= 0, carried + lift, lift - 1)  # below every record of the key's: nothing behind
    reached = np.maximum.accumulate(starts + sizes - 1)  # the latest record up to each copy, included
    before = carried.copy()
    before[1:] = np.maximum(before[1:], reached[:-1])  # (a lower key's records are all below this key's lift)
    behind = np.clip(before - starts, 0, sizes)
    last = np.flatnonzero(np.append(key[1:] != key[:-1], True))  # each key's last copy
    reach[key[last]] = np.maximum(reached[last], carried[last]) - lift[last]
    return int(behind.sum())


_LIFT = 40  # a key's records are lifted by key << _LIFT: above every record index of the keys below it


def _log_column(final, name: str, retired: int, start: int = 0) -> np.ndarray:
    """A final log's column (``Log.bases`` or ``Log.batch_ids``) as int64, the entries retention deleted first
    (`retired`: their column's position in ``Log.retired``; what retention deleted was there, not lost); `start`:
    from this row of the log on (a log retention never touched)."""
    column = getattr(final, name)
    out = np.frombuffer(column, dtype=column.typecode)[start:final.rows]
    if final.retired is not None:
        kept = final.retired[retired]
        out = np.concatenate((np.frombuffer(kept, dtype=kept.typecode), out))
    return out.astype(np.int64)


def _data_ids(final, with_bases: bool = False, start: int = 0):
    """The batch ids of a final log's entries that hold a producer batch, in log order (int64), retention's deleted
    ones first; `with_bases`: and their base offsets (int64), as a pair; `start`: from this row of the log on."""
    ids = _log_column(final, "batch_ids", 1, start)
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
    # the account of the rows below ``fold.base``, folded as the run went (``AccountFold``; None: nothing folded):
    # those rows are not read here (their cells may have been given back: ``Batches.give_back``), their sums are
    # the fold's
    fold: "AccountFold | None" = None

    @classmethod
    def of(cls, end) -> "BatchAccount":
        b = end.batches
        fold = folded_account(end.workload)
        count, lo, producer = _view(b.count), _view(b.lo), b.producer_column()
        account = cls(count=count, partition=_view(b.partition), producer=producer, lo=lo, state=_view(b.state),
                      acks=_ack_runs(b), visible_at=_view(b.visible_at), visible_instants=_view(b.visible_instants),
                      errors=b.error, undrained=0, logs=FinalLogs(end, lo, count, producer, fold), fold=fold)
        return replace(account, undrained=end.workload.records - account.records(None))

    @property
    def base(self) -> int:
        """The first row this account reads (those below are the fold's)."""
        return 0 if self.fold is None else self.fold.base

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
        """Records in the rows `mask` selects (one of the masks above; None: every row), BLOCK rows at a time."""
        count = self.count
        folded = 0 if self.fold is None else int(self.fold.partitions[_named(mask)].sum())
        return folded + sum(int((count[rows] if mask is None else count[rows][mask(rows)]).sum(dtype=np.int64))
                            for rows in _blocks(len(count), self.base))

    def per_partition(self, mask, partitions: int) -> np.ndarray:
        """Records in the rows `mask` selects (one of the masks above; None: every row), per global partition (the
        records no batch took are not in any: ``undrained_per_partition``)."""
        out = _sums(self.partition, self.count, mask, partitions, self.base)
        if self.fold is not None:
            out += self.fold.partitions[_named(mask)]
        return out

    def per_producer(self, mask, producers: int) -> np.ndarray:
        out = _sums(self.producer, self.count, mask, producers, self.base)
        if self.fold is not None:
            out += self.fold.producers[_named(mask)]
        return out

    def out_of_order(self) -> int:
        """Records of the final logs' copies that come after a record their producer sent later."""
        return self.logs.out_of_order


MASKS = ("acked", "waiting", "committed", "failed", "acked_lost", "committed_lost", "duplicated")  # BatchAccount's


def _named(mask) -> str:
    """The name a mask of ``BatchAccount`` (one of ``MASKS``; None: every row, "drained") has in ``AccountFold``."""
    return "drained" if mask is None else mask.__name__


def folded_account(workload) -> "AccountFold | None":
    """The account a run folded as it went (``AccountFold``), if it did."""
    fold = workload.fold
    return None if fold is None else fold.account


class _Copies:
    """What ``BatchAccount`` reads of a ``FinalLogs``: each row's copies (``AccountFold``'s rows)."""

    __slots__ = ("presence",)

    def __init__(self, presence: np.ndarray):
        self.presence = presence


class AccountFold:
    """The account (``BatchAccount``'s record counts, the copies' order, the rows ``no_committed_record_lost``
    reads) of the batches a run has settled, folded as it goes, so that their rows of the batch table need not be
    kept to the end (``Batches.give_back``).

    Only a run where no log loses a row and no leader moves can fold so: no fault, no operation, no consumer
    group and no retention within the run (``replica_manager.follower_append_times_read`` false), and no records
    table (``latency.Fold``). There each partition's log at the end is the log of its leader at the start, and
    it only grows. A batch's copies are then all in it once the batch has settled (acknowledged or failed for good)
    and become visible, which is when the latencies fold it: every send of it was answered before it settled, and
    nothing sends it after. Except for a request still at a broker when its connection closed (request.timeout.ms,
    a reset): the broker may append it after the producer resent it and settled, so the fold stops for the rest
    of the run at the first such close (``stop``), before it can fold a batch that was in flight then.

    Every sweep (``latency.FOLD_MS``) reads the leaders' logs from where it stopped: each copy counted for its row
    (``presence``, the rows not folded yet) and its records checked against its producer's latest before it in the
    log (``order_behind``, the latest carried per partition and producer: ``reach``). Then the rows up to the
    latencies' fold (``latency.Fold.upto``: a prefix of settled, visible batches) are folded: their records summed
    per partition and per producer under each of ``BatchAccount``'s masks, by the same masks over those rows. The
    end goes on from there (``FinalLogs``, ``BatchAccount``): it reads the rows from ``base`` on and adds these
    sums. A copy of a folded batch found in a log later would break that premise: it raises."""

    def __init__(self, parts, replicas, producers: int):
        """`parts`, `replicas`: the simulation's partitions and replicas; `producers`: how many."""
        n = len(parts)
        self.parts, self.replicas, self.producer_count = parts, replicas, producers
        self.leaders: list[int] | None = None  # each partition's leader at the first sweep: its log is the final one
        self.scanned = [0] * n  # each leader log's rows read so far
        self.presence = np.zeros(0, dtype=np.int16)  # copies read so far of the rows base.. (FinalLogs' type)
        self.reach = np.full((n, producers), -1, dtype=np.int64)  # each producer's latest record in each log so far
        self.out_of_order = 0  # records of the copies read so far after a later one of their producer's
        self.base = 0  # the rows below are folded
        self.partitions = {name: np.zeros(n, dtype=np.int64) for name in MASKS + ("drained",)}
        self.producers = {name: np.zeros(producers, dtype=np.int64) for name in MASKS + ("drained",)}
        self.first_committed = np.full(n, _NONE, dtype=np.int64)  # each partition's first committed folded batch
        self.stopped = ""  # why the fold stopped, once it has

    def stop(self, why: str) -> None:
        """Fold nothing more (the end reads the rest)."""
        if not self.stopped:
            self.stopped = why

    def resume(self, p: int, log) -> int:
        """The first row of partition p's final log `log` not read yet (the end goes on from there)."""
        if self.leaders is None:
            return 0
        if log is not self.replicas[p][self.leaders[p]].log:
            raise RuntimeError(f"accounting: partition {p}'s final log is not its first leader's, in a run that folded"
                               " its account")
        return self.scanned[p]

    def sweep(self, batches, stop: int) -> None:
        """Read the logs' new copies, then fold the rows below `stop` (settled and visible)."""
        if self.stopped:
            return
        if self.leaders is None:
            self.leaders = [part.leader for part in self.parts]
            if min(self.leaders, default=0) < 0:
                self.leaders = None
                self.stop("a partition without a leader")
                return
        rows = len(batches)
        taken, owners, sizes = [], [], []
        scanned = self.scanned
        for p, part in enumerate(self.parts):
            log = self.replicas[p][self.leaders[p]].log
            n = log.rows
            if n > scanned[p]:
                if part.leader != self.leaders[p] or log.retired is not None:
                    raise RuntimeError(f"accounting: partition {part.name} changed leader or deleted segments in a"
                                       " run that folds its account")
                column = log.batch_ids
                taken.append(np.frombuffer(column, dtype=column.typecode)[scanned[p]:n].copy())  # (no view kept)
                owners.append(p)
                sizes.append(n - scanned[p])
                scanned[p] = n
        grow = rows - self.base - len(self.presence)
        if grow > 0:
            self.presence = np.concatenate((self.presence, np.zeros(grow, dtype=np.int16)))
        count, lo = _view(batches.count), _view(batches.lo)
        if taken:
            ids = np.concatenate(taken).astype(np.int64)
            key = np.repeat(np.array(owners, dtype=np.int64), sizes)
            data = ids >= 0
            ids, key = ids[data], key[data]
            if len(ids) and int(ids.min()) < self.base:
                raise RuntimeError("accounting: a copy of a folded batch was appended after its account was folded")
            self.presence += np.bincount(ids - self.base, minlength=len(self.presence)).astype(np.int16)
            key *= self.producer_count
            key += batches.producer_column()[ids]
            self.out_of_order += order_behind(ids, key, lo, count, self.reach.reshape(-1))
            del ids, key, data
        if stop > self.base:
            a, k = self.base, stop - self.base
            span = slice(a, stop)
            sub = BatchAccount(count=count[span], partition=_view(batches.partition)[span],
                               producer=batches.producer_column()[span], lo=lo[span], state=_view(batches.state)[span],
                               acks=_NO_ACKS, visible_at=_view(batches.visible_at)[span],
                               visible_instants=_NO_INSTANTS, errors={}, undrained=0,
                               logs=_Copies(self.presence[:k]))
            n = len(self.parts)
            for name in MASKS + ("drained",):
                mask = None if name == "drained" else getattr(sub, name)
                self.partitions[name] += sub.per_partition(mask, n)
                self.producers[name] += sub.per_producer(mask, self.producer_count)
            committed = np.flatnonzero(sub.committed())
            part, first = np.unique(sub.partition[committed], return_index=True)
            new = self.first_committed[part] == _NONE
            self.first_committed[part[new]] = committed[first[new]] + a
            del sub, committed, part, first, new
            self.presence = self.presence[k:].copy()
            self.base = stop
        del count, lo  # (no view of a column outlives the sweep: the columns grow)


_NONE = np.iinfo(np.int64).max  # no batch
_NO_ACKS = (np.zeros(0, dtype=np.int64),) * 2 + (np.zeros(0),)
_NO_INSTANTS = np.full(1, np.nan)


def undrained_per_partition(total: np.ndarray, account: BatchAccount, partitions: int) -> np.ndarray:
    """Records still in the accumulator at the end, per partition: each partition's records (`total`, the
    workload's per partition) less those its batches took."""
    return total - account.per_partition(None, partitions)


BLOCK = 1 << 20  # batches the results' steps over the batch table read at a time (``_sums``, the streamed latencies,
#                 no_committed_record_lost): their temporaries stay this size whatever the run's length


def _blocks(n: int, first: int = 0):
    """Slices of BLOCK rows covering rows first..n-1."""
    return (slice(start, start + BLOCK) for start in range(first, n, BLOCK))


def _sums(index: np.ndarray, count: np.ndarray, mask, n: int, first: int = 0) -> np.ndarray:
    """`count` summed by `index` (0..n-1) over the rows `mask` selects (a mask of ``BatchAccount``, called with a
    block's slice; None: all), int64, BLOCK rows at a time: a weighted bincount makes a float64 copy of its weights
    and an intp one of its index (16 bytes a batch, about 170 MB at the end of ten simulated seconds of the
    production case), here a chunk's; from row `first` on."""
    out = np.zeros(n, dtype=np.int64)
    for rows in _blocks(len(index), first):
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
