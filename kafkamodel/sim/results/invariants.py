"""Safety properties, each a named function over the state, named for what it states.

The TLA+ specification of Kafka's replication (hachikuji/kafka-specification,
``KafkaReplication.tla``) names two invariants, ``WeakIsr`` and ``StrongIsr``;
these properties are not those, but close to them:

* ``leader_in_isr``: the controller's leader is in the controller's ISR (in the
  spec, ``ControllerElectLeader`` chooses from the ISR, so it holds there by
  construction; here an unclean or last-known-leader election keeps it by
  setting the ISR to the new leader);
* ``committed_prefixes_agree``: any two replicas hold the same batches below
  both their high watermarks (what ``WeakIsr`` states for a presumed leader and
  its ISR, here for every pair of replicas);
* ``no_committed_record_lost``: what ``StrongIsr`` is for ("any data which has
  been exposed to consumers will be present on any broker that becomes
  leader"): every batch a leader's HW covered is in the log of a replica
  that can still lead the partition: its leader while it runs, else one the
  controller may elect without an unclean election (ISR, ELR, last known
  leader).

Each takes a running (or finished) simulation (its ``partitions``,
``replicas``, ``batches`` and replication ``mode``) and returns its violations as
strings; an empty list means the property holds. They are measured and
reported at the end of every run (and after every event with
``debug.invariants: true``), never asserted away.
"""

from __future__ import annotations

import numpy as np

from . import accounting


def _common_prefix(a: list, b: list) -> int:
    """Number of leading entries two logs share."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual case, compared at C speed: one log is a prefix of the other
        return n
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_rows(a, b) -> int:
    """Number of leading entries two logs (``Log``) share, read from their columns (``_common_prefix`` of their
    entry lists): the rows alike in base, epoch and batch, less the last of them if it ends differently."""
    n = min(a.rows, b.rows)
    k = n
    for x, y in ((a.bases, b.bases), (a.row_epochs(), b.row_epochs()), (a.batch_ids, b.batch_ids)):
        if x[:k] != y[:k]:  # (compared at C speed: the usual case is one log a prefix of the other)
            k = next(i for i in range(k) if x[i] != y[i])
    return k if k == 0 or a.end_of(k - 1) == b.end_of(k - 1) else k - 1


def log_diverging_ranges(a, b, upto: int) -> list[tuple[int, int]]:
    """``diverging_ranges`` of two logs (``Log``), their entries made only past their common prefix."""
    if a.log_end_offset == b.log_end_offset and a.rows == b.rows and (a.table is b.table or _common_rows(a, b) == a.rows):
        return []  # the same entries (the usual case at a run's end)
    start = _common_rows(a, b)
    return diverging_ranges(a.entry_list(start), b.entry_list(start), upto, 0)


def diverging_ranges(a: list, b: list, upto: int, start: int | None = None) -> list[tuple[int, int]]:
    """The offset ranges [lo, hi) below `upto` where two logs (their entry lists, ``Log.entry_list``) hold
    different batches, in order, merged; `start`: how many leading entries they share, if known."""
    if start is None:
        start = _common_prefix(a, b)
    i, j = start, start
    ranges: list[tuple[int, int]] = []
    while i < len(a) and j < len(b):
        a0, a1, _, ab = a[i]
        b0, b1, _, bb = b[j]
        lo, hi = max(a0, b0), min(a1, b1, upto)
        if lo >= upto:
            break
        if hi > lo and (ab != bb or a0 != b0):
            if ranges and ranges[-1][1] == lo:
                ranges[-1] = (ranges[-1][0], hi)
            else:
                ranges.append((lo, hi))
        if a1 <= b1:
            i += 1
        else:
            j += 1
    return ranges


def diverging_offsets(a, b, upto: int) -> int:
    """Offsets below `upto` where two logs (``Log``) hold different batches."""
    return sum(hi - lo for lo, hi in log_diverging_ranges(a, b, upto))


def leader_in_isr(sim) -> list[str]:
    """The controller's leader is a member of the controller's ISR."""
    if not sim.mode.keeps_isr:
        return []
    return [
        f"{part.name}: leader {part.leader} not in isr {list(part.isr)}"
        for part in sim.partitions
        if part.leader >= 0 and part.leader not in part.isr
    ]


def committed_prefixes_agree(sim) -> list[str]:
    """Any two replicas agree on every offset below both their high watermarks."""
    problems = []
    for part in sim.partitions:
        reps = [sim.replicas[part.index][b] for b in part.replicas]
        if not any(rep.log.rows for rep in reps):
            continue  # no entries: nothing to differ on
        for x in range(len(reps)):
            for y in range(x + 1, len(reps)):
                a, b = reps[x], reps[y]
                upto = min(a.high_watermark, b.high_watermark)
                n = diverging_offsets(a.log, b.log, upto)
                if n:
                    problems.append(f"{part.name}: brokers {a.broker} and {b.broker} differ on {n} committed offsets")
    return problems


def electable(part) -> tuple[int, ...]:
    """The replicas the controller may elect without an unclean election, in assignment order: the leader, the
    ISR (every replica in quorum mode), KIP-966's eligible leader replicas and, while those are empty, its last
    known leader. Kafka's promise is about these: "a committed message will not be lost, as long as there is at
    least one in sync replica alive" (the documentation's Replicated Logs section)."""
    can = {part.leader, *part.isr, *part.elr, *part.last_known_elr}
    return tuple(r for r in part.replicas if r in can)


def may_lead(sim, part) -> tuple[int, ...]:
    """The replicas that can still lead the partition: its leader alone while that broker runs (it keeps the
    partition until it fails: what its log lacks, no consumer will read); once it is down (or there is none),
    every replica the controller may elect without an unclean election (``electable``); with none of those, the
    partition's last leader (its log is final)."""
    if part.leader >= 0 and sim.brokers[part.leader].up:
        return (part.leader,)
    return electable(part) or (part.last_leader,)


def no_committed_record_lost(sim) -> list[str]:
    """Every batch some leader's HW covered is in the log of a replica that can still lead the partition
    (``may_lead``), or was deleted from it by retention: what StrongIsr states. A leader that has just lost power
    is down, though the controller keeps it as leader until its session expires: its unflushed tail is gone, and
    that loses nothing while an ISR member holds the batches (the controller elects one of them). An unclean
    election, which sets the ISR to the new leader alone, loses what that leader lacks; so does KIP-966's election
    of a last known leader whose log a power loss shortened, and so does a leader that truncated them away.

    Read as a mask over the batch table (a byte a batch: a log holds only its partition's batches, so one mask
    serves every partition), marked from the logs of the partitions that hold a committed batch; the problems come
    in order of each partition's first committed batch."""
    batches = sim.batches
    n = len(batches)
    fold = accounting.folded_account(sim.workload)  # the rows below its base were folded: its sums say for them
    start = 0 if fold is None else fold.base
    # committed: visible_at set (Batches.committed), a block at a time
    visible = np.frombuffer(batches.visible_at, dtype=np.int32) if n else np.zeros(0, dtype=np.int32)  # (a view)
    part_of = np.frombuffer(batches.partition, dtype=batches.partition.typecode) if n else np.zeros(0, dtype=np.int32)
    wanted = np.zeros(len(sim.partitions), dtype=bool)  # partitions with a committed batch
    block = accounting.BLOCK
    for a in range(start, n, block):
        wanted[part_of[a:a + block][visible[a:a + block] != 0]] = True
    held = np.zeros(n, dtype=bool)
    holders_of = {}
    for p in np.flatnonzero(wanted).tolist():
        part = sim.partitions[p]
        holders = holders_of[p] = may_lead(sim, part)
        for r in holders:
            log = sim.replicas[p][r].log
            ids = np.frombuffer(log.batch_ids, dtype=np.int32)[:log.rows]
            held[ids[ids >= start]] = True
            if log.retired is not None:
                held[np.frombuffer(log.retired[1], dtype=np.int32)] = True
    blocks = [np.flatnonzero((visible[a:a + block] != 0) & ~held[a:a + block]) + a for a in range(start, n, block)]
    missing = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)  # committed, in no holder's log
    records = np.bincount(part_of[missing], weights=np.frombuffer(batches.count, dtype=batches.count.typecode)[missing],
                          minlength=len(sim.partitions)).astype(np.int64)
    if fold is not None:  # (the folded rows' final log is the leader's, the one holder in such a run)
        records += fold.partitions["committed_lost"]
    if not records.any():
        return []
    first = np.full(len(sim.partitions), n, dtype=np.int64)  # each partition's first committed batch
    covered = np.flatnonzero(visible[start:] != 0) + start
    np.minimum.at(first, part_of[covered], covered)
    if fold is not None:
        np.minimum(first, fold.first_committed, out=first)
        for p in np.flatnonzero(fold.partitions["committed_lost"]).tolist():
            holders_of[p] = may_lead(sim, sim.partitions[p])
    lacking = np.flatnonzero(records)
    problems = []
    for p in lacking[np.argsort(first[lacking], kind="stable")].tolist():
        part = sim.partitions[p]
        problems.append(f"{part.name}: {int(records[p])} committed records missing from {_named(holders_of[p], part)}")
    return problems


def _named(holders: tuple[int, ...], part) -> str:
    """'leader 2' (the running leader alone, as the message always read), else 'brokers [1, 2], which may lead'."""
    if holders == (part.leader,) or holders == (part.last_leader,):
        return f"leader {holders[0]}"
    return f"brokers {list(holders)}, which may lead"


PROPERTIES = {
    "leader_in_isr": leader_in_isr,
    "committed_prefixes_agree": committed_prefixes_agree,
    "no_committed_record_lost": no_committed_record_lost,
}


def check_all(sim) -> dict[str, list[str]]:
    return {name: prop(sim) for name, prop in PROPERTIES.items()}
