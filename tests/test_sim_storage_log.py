"""``Log.read`` as Kafka's Log.read reads: whole batches from the one holding the offset, none starting at or past
the bound (the HW for a consumer, the LEO for a follower), up to the byte cap, and with minOneMessage the first
batch even past the cap ("the first message will be returned even if it exceeds maxLength", Kafka's LocalLog.read)."""

from __future__ import annotations

from kafkamodel.sim.storage.log import CONTROL, AppendTable, Log

SIZES = [300, 200, 500, 100]  # bytes of batches 0..3


def log_of(counts: list[int]) -> Log:
    """Batch b holds counts[b] records; a control record (no bytes) after the second batch."""
    log = Log(segment_bytes=1 << 30, batch_bytes=SIZES)
    offset = 0
    for b, n in enumerate(counts):
        log.append(offset, offset + n, 0, b, 0.0)
        offset += n
        if b == 1:
            log.append(offset, offset + 1, 0, CONTROL, 0.0)
            offset += 1
    return log


def batches_read(log: Log, *args) -> tuple[list[int], int]:
    first, end, size = log.read(*args)
    return list(log.batch_ids[first:end]), size


def test_whole_batches_under_the_cap_from_the_one_holding_the_offset():
    log = log_of([10, 10, 10, 10])  # offsets: batch 0 [0, 10), 1 [10, 20), control 20, 2 [21, 31), 3 [31, 41)
    assert batches_read(log, 0, 41, 500, True) == ([0, 1, CONTROL], 500)  # 300 + 200; batch 2 would pass 500
    assert batches_read(log, 15, 41, 10_000, True) == ([1, CONTROL, 2, 3], 800)  # from the batch holding 15
    assert batches_read(log, 41, 41, 10_000, True) == ([], 0)  # at the LEO: nothing


def test_the_first_batch_past_the_cap_only_with_min_one():
    log = log_of([10, 10, 10, 10])
    assert batches_read(log, 0, 41, 100, True) == ([0], 300)
    assert batches_read(log, 0, 41, 100, False) == ([], 0)  # a response that already gave bytes: nothing more


def test_nothing_starting_at_or_past_the_bound():
    log = log_of([10, 10, 10, 10])
    assert batches_read(log, 0, 21, 10_000, True) == ([0, 1, CONTROL], 500)  # HW 21: batch 2 starts there
    assert batches_read(log, 0, 25, 10_000, True) == ([0, 1, CONTROL, 2], 1000)  # a batch straddling the HW is read


# ---- the columns: an entry's end is the next one's base (the LEO for the last), a follower copies the leader's rows --

def test_entries_read_back_as_appended():
    log = log_of([10, 5, 7, 3])
    assert log.entry_list() == [(0, 10, 0, 0), (10, 15, 0, 1), (15, 16, 0, CONTROL), (16, 23, 0, 2), (23, 26, 0, 3)]
    assert log.entry_list(3) == [(16, 23, 0, 2), (23, 26, 0, 3)]
    assert log.entry(4) == (23, 26, 0, 3) and log.end_of(1) == 15
    assert [log.entry_index(o) for o in (0, 9, 10, 15, 25, 26)] == [0, 0, 1, 2, 4, 5]  # 26: the LEO, past the last


def test_a_follower_extended_with_the_leaders_chunks_holds_the_same_entries_at_its_own_times():
    leader = log_of([10, 5, 7, 3])
    follower = Log(segment_bytes=1 << 30, batch_bytes=SIZES)
    several = leader.chunk(0, 3)  # batches 0, 1 and the control record, read at 1 ms
    follower.extend(several, 1.0)
    assert follower.log_end_offset == 16 and list(follower.append_times()) == [1.0, 1.0, 1.0]
    for i in (3, 4):  # then one batch at a time, as a follower's usual answer carries it (its fields)
        base, end, epoch, b = leader.entry(i)
        follower.append(base, end, epoch, b, 1.0 + i)
    assert follower.entry_list() == leader.entry_list()
    assert list(follower.append_times()) == [1.0, 1.0, 1.0, 4.0, 5.0] and list(leader.append_times()) == [0.0] * 5
    assert follower.durable_offset(4.0) == 16  # written back: what reached the page cache before 4 ms


def test_truncation_removes_whole_batches_and_retention_keeps_what_it_deleted():
    log = log_of([10, 5, 7, 3])
    assert log.truncate_to(20) == 10 and log.log_end_offset == 16  # batch 2 [16, 23) straddles 20: it goes whole
    assert log.entry_list() == [(0, 10, 0, 0), (10, 15, 0, 1), (15, 16, 0, CONTROL)]
    log = log_of([10, 5, 7, 3])
    log.segment_bytes = 400  # segments: [batch 0], [batch 1, control], [batch 2], [batch 3]
    # retention.bytes 600 of 1,100: a segment goes while the rest still holds 600 (Kafka's size - segment >= limit)
    assert log.apply_retention(0.0, 26, None, 600) == 2  # 300 and 200 go; 600 left, and 100 without batch 2
    assert log.log_start_offset == 16 and log.entry_list() == [(16, 23, 0, 2), (23, 26, 0, 3)]
    assert [list(c) for c in log.retired] == [[0, 10, 15], [0, 1, CONTROL]]


# ---- the partition's append table: replicas that agree share its rows; a log that diverges keeps its own ----------

def test_a_follower_taking_its_leaders_rows_shares_them_and_keeps_only_its_times():
    table = AppendTable()
    leader, follower = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(2))
    for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22))):
        leader.append(base, end, 1, i, 0.0)
    follower.append(0, 10, 1, 0, 2.0)
    follower.extend(leader.chunk(1, 3), 3.0)
    assert len(table.bases) == 3 and follower.table is table  # one copy of the rows for both
    assert follower.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 22, 1, 2)] == leader.entry_list()
    assert list(follower.append_times()) == [2.0, 3.0, 3.0]


def test_an_untimed_follower_holds_the_same_rows_and_keeps_no_append_times():
    table = AppendTable()
    leader, timed, untimed = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(3))
    untimed.append(0, 1, 1, CONTROL, 0.5)  # kept before: dropped with the times
    untimed.untimed()
    assert not untimed.timed and timed.timed and len(untimed.append_at) == 0
    for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22), (22, 30))):
        leader.append(base, end, 1, i, 1.0)
    instants = len(timed.instants)
    for log in (timed, untimed):
        log.truncate_to(0)
        log.append(0, 10, 1, 0, 2.0)
        log.extend(leader.chunk(1, 3), 3.0)
        base, epoch, b, end = leader.chunk(3, 4)  # one batch, as the usual answer carries it
        log.append(base, end, epoch, b, 4.0)
    assert len(untimed.instants) == instants + 3  # (the timed follower's instants: the untimed one adds none)
    assert untimed.entry_list() == timed.entry_list() == leader.entry_list()
    assert untimed.log_end_offset == timed.log_end_offset == 30 and untimed.rows == 4
    assert list(timed.append_times()) == [2.0, 3.0, 3.0, 4.0] and len(untimed.append_at) == 0
    try:
        untimed.appended_ms(0)
    except IndexError:
        pass
    else:
        raise AssertionError("an untimed log's append time was read")


def test_a_log_that_forgot_its_first_rows_times_answers_for_the_others_as_before(monkeypatch):
    from kafkamodel.sim.storage import log as logs

    monkeypatch.setattr(logs, "FORGET_AT_LEAST", 2)
    table = AppendTable()
    kept, forgetting = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(2))
    for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22), (22, 30))):
        for log in (kept, forgetting):  # (time never goes back: both append at each instant in turn)
            log.append(base, end, 1, i, 1.0 + i)
    forgetting.forget_times_below(1)  # (fewer than FORGET_AT_LEAST rows: kept)
    assert forgetting.forgotten == 0
    forgetting.forget_times_below(2)
    assert forgetting.forgotten == 2 and list(forgetting.append_times()) == [3.0, 4.0]
    for i in (2, 3):
        assert forgetting.appended_ms(i) == kept.appended_ms(i)
        for cut in (2.5, 3.0, 3.5, 4.0, 9.0):
            assert forgetting.written_before(cut, i) == kept.written_before(cut, i)
            assert forgetting.bytes_written_before(i, 4, cut) == kept.bytes_written_before(i, 4, cut)
    for read in (lambda: forgetting.appended_ms(1), lambda: forgetting.written_before(9.0)):
        try:
            read()
        except IndexError:
            continue
        raise AssertionError("a forgotten row's time was read")
    for log in (kept, forgetting):  # a truncation into the kept rows, then an append: the same times from row 2 on
        log.truncate_to(22)
        log.append(22, 25, 2, 3, 7.0)
    assert list(forgetting.append_times()) == list(kept.append_times())[2:] == [3.0, 7.0]


def test_a_new_leader_writing_where_the_old_one_has_other_rows_leaves_the_old_ones_rows_to_it():
    # KIP-101's case: the old leader A wrote batch 2 at offset 15 in epoch 1; B, the follower that had only batches 0
    # and 1, leads epoch 2 and writes batch 3 there. A keeps its batch 2 until it truncates (it answers reads, and
    # the epoch comparison reads its epochs), then takes B's rows.
    table = AppendTable()
    a, b = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(2))
    for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22))):
        a.append(base, end, 1, i, 0.0)
    b.extend(a.chunk(0, 2), 1.0)
    b.append(15, 19, 2, 3, 5.0)
    assert a.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 22, 1, 2)]
    assert b.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 19, 2, 3)]
    assert a.end_offset_for_epoch(1, a.log_end_offset) == (1, 22) and b.end_offset_for_epoch(1, 19) == (1, 15)
    assert a.truncate_to(15) == 7
    base, end, epoch, batch = b.entry(2)
    a.append(base, end, epoch, batch, 6.0)
    assert a.entry_list() == b.entry_list() and a.log_end_offset == b.log_end_offset == 19


def test_a_follower_extended_with_other_rows_than_its_table_holds_leaves_those_rows_to_the_old_leader():
    # the old leader A and its follower B share rows 0-1; A also has batch 2 at offset 15 (epoch 1). B then follows
    # C, which leads epoch 2 and wrote batches 3 and 4 from offset 15: B's extend with C's two rows replaces the
    # table's row 2 for itself, and A keeps its batch 2 (its own copy) until it truncates
    table = AppendTable()
    a, b = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(2))
    c = Log(segment_bytes=1 << 30, batch_bytes=SIZES)
    for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22))):
        a.append(base, end, 1, i, 0.0)
    b.extend(a.chunk(0, 2), 1.0)
    for base, end, epoch, batch in ((0, 10, 1, 0), (10, 15, 1, 1), (15, 19, 2, 3), (19, 21, 2, 4)):
        c.append(base, end, epoch, batch, 2.0)
    b.extend(c.chunk(2, 4), 3.0)
    assert b.entry_list() == c.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 19, 2, 3), (19, 21, 2, 4)]
    assert a.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 22, 1, 2)] and a.table is not b.table
    assert list(b.append_times()) == [1.0, 1.0, 3.0, 3.0] and b.log_end_offset == 21


def test_a_truncated_shared_log_writes_its_own_rows_without_changing_the_others():
    table = AppendTable()
    a, b = (Log(segment_bytes=1 << 30, batch_bytes=SIZES, table=table) for _ in range(2))
    for log in (a, b):
        log.append(0, 10, 1, 0, 0.0)
        log.append(10, 15, 1, 1, 0.0)
    assert b.truncate_to(10) == 5 and len(table.bases) == 2  # a still holds row 1
    b.append(10, 12, 2, CONTROL, 1.0)  # b leads epoch 2: its marker where a has batch 1
    assert a.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1)]
    assert b.entry_list() == [(0, 10, 1, 0), (10, 12, 2, CONTROL)]


def test_retention_on_one_replica_leaves_the_rows_of_the_others_sharing_its_table():
    table = AppendTable()
    a, b = (Log(segment_bytes=400, batch_bytes=SIZES, table=table) for _ in range(2))  # a segment per batch
    for log in (a, b):
        for i, (base, end) in enumerate(((0, 10), (10, 15), (15, 22))):
            log.append(base, end, 1, i, float(i))
            log.segment_append(base, i, float(i))
    assert a.apply_retention(now=10.0, high_watermark=22, retention_ms=None, retention_bytes=600) == 1
    assert a.log_start_offset == 10 and a.entry_list() == [(10, 15, 1, 1), (15, 22, 1, 2)]
    assert b.entry_list() == [(0, 10, 1, 0), (10, 15, 1, 1), (15, 22, 1, 2)]
    a.append(22, 30, 1, 3, 11.0)
    b.append(22, 30, 1, 3, 11.0)
    assert a.entry_list()[-1] == b.entry_list()[-1] == (22, 30, 1, 3)


# ---- the leader epochs as runs: one entry per epoch, as Kafka's LeaderEpochFileCache ---------------------------------

def log_of_epochs(epochs: list[int], table: AppendTable | None = None) -> Log:
    """Row i: batch i of 2 records (offsets 2i, 2i + 1), written in epochs[i]."""
    log = Log(segment_bytes=1 << 30, batch_bytes=[100] * len(epochs), table=table)
    for i, e in enumerate(epochs):
        log.append(2 * i, 2 * i + 2, e, i, float(i))
    return log


def epoch_cache_end_offset(epochs: list[int], epoch: int, leo: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor computed from its entries (epoch, start offset), independently: the largest
    epoch <= `epoch` and the start offset of the next entry (the LEO for the last one)."""
    entries = [(e, 2 * i) for i, e in enumerate(epochs) if i == 0 or epochs[i - 1] != e]
    if epoch < 0 or not entries or epoch > entries[-1][0]:
        return -1, -1
    below = [k for k, (e, _) in enumerate(entries) if e <= epoch]
    if not below:
        return epoch, entries[0][1]
    k = below[-1]
    return entries[k][0], entries[k + 1][1] if k + 1 < len(entries) else leo


def test_epochs_are_kept_as_one_run_each_and_read_back_per_row():
    epochs = [1, 1, 1, 3, 3, 4, 4, 4, 4, 7]
    log = log_of_epochs(epochs)
    assert list(log.leader_epochs) == [1, 3, 4, 7] and list(log.epoch_rows) == [0, 3, 5, 9]
    assert [log.epoch_at(i) for i in range(10)] == epochs == list(log.row_epochs())
    assert [e for _, _, e, _ in log.entry_list(4)] == epochs[4:] and log.last_epoch() == 7
    for epoch in range(-1, 9):  # every answer the cache would give, and where each epoch ends
        assert log.end_offset_for_epoch(epoch, log.log_end_offset) == epoch_cache_end_offset(epochs, epoch, 20)
        later = [2 * i for i, e in enumerate(epochs) if e > epoch and all(x > epoch for x in epochs[i:])]
        assert log.first_offset_after_epoch(epoch) == (later[0] if later else 20)


def test_a_truncation_and_a_follower_copying_chunks_keep_the_runs_of_what_is_left():
    epochs = [1, 1, 2, 2, 2, 5, 5]
    leader = log_of_epochs(epochs)
    follower = Log(segment_bytes=1 << 30, batch_bytes=[100] * 7)
    follower.extend(leader.chunk(0, 4), 1.0)  # two runs in one answer
    follower.extend(leader.chunk(4, 7), 2.0)  # epoch 2's run goes on, then epoch 5's
    assert follower.entry_list() == leader.entry_list()
    assert list(follower.leader_epochs) == [1, 2, 5] and list(follower.epoch_rows) == [0, 2, 5]
    assert follower.truncate_to(10) == 4  # rows 5 and 6 (epoch 5) go: so does their run
    assert list(follower.leader_epochs) == [1, 2] and follower.last_epoch() == 2
    follower.append(10, 12, 6, 9, 3.0)
    assert list(follower.row_epochs()) == [1, 1, 2, 2, 2, 6] and list(follower.epoch_rows) == [0, 2, 5]


def test_a_log_sharing_a_longer_table_reads_only_its_own_runs():
    table = AppendTable()
    a = log_of_epochs([1, 1, 2], table)
    b = Log(segment_bytes=1 << 30, batch_bytes=[100] * 3, table=table)
    b.extend(a.chunk(0, 2), 1.0)  # b holds rows 0-1 (epoch 1); the table's epoch-2 run is not b's
    assert b.last_epoch() == 1 and b.end_offset_for_epoch(1, b.log_end_offset) == (1, 4)
    assert a.end_offset_for_epoch(1, a.log_end_offset) == (1, 4) and a.last_epoch() == 2
    b.append(4, 6, 3, 7, 2.0)  # b leads epoch 3 where a has epoch 2's row: a keeps its own runs
    assert list(a.row_epochs()) == [1, 1, 2] and list(b.row_epochs()) == [1, 1, 3]


def test_retention_moves_the_runs_to_the_rows_left():
    log = Log(segment_bytes=150, batch_bytes=[100] * 6)  # a segment per batch
    for i, e in enumerate([1, 1, 2, 2, 3, 3]):
        log.append(2 * i, 2 * i + 2, e, i, float(i))
        log.segment_append(2 * i, i, float(i))
    assert log.apply_retention(now=10.0, high_watermark=12, retention_ms=None, retention_bytes=300) == 3
    assert log.log_start_offset == 6 and list(log.row_epochs()) == [2, 3, 3]
    assert list(log.leader_epochs) == [2, 3] and list(log.epoch_rows) == [0, 1]


def test_offsets_past_int32_widen_the_shared_table_for_every_log_holding_it():
    # Kafka's offsets are int64: a table's base offsets are int32 until an append passes 2^31 - 1
    table = AppendTable()
    leader, follower = (Log(segment_bytes=1 << 30, batch_bytes=[100] * 4, table=table) for _ in range(2))
    top = 2**31 - 1
    leader.log_start_offset = leader.log_end_offset = top - 2  # (as a restart at the leader's log start leaves it)
    leader.append(top - 2, top + 1, 1, 0, 0.0)
    assert table.bases.typecode == "i"
    leader.append(top + 1, top + 5, 1, 1, 1.0)  # its base passes int32
    assert table.bases.typecode == "q" and leader.bases is follower.bases is table.bases
    other = Log(segment_bytes=1 << 30, batch_bytes=[100] * 4)  # a log of its own, still int32, takes both rows
    other.log_start_offset = other.log_end_offset = top - 2
    other.extend(leader.chunk(0, 2), 2.0)
    assert other.entry_list() == leader.entry_list() == [(top - 2, top + 1, 1, 0), (top + 1, top + 5, 1, 1)]
    assert other.bases.typecode == "q"


# ---- append times: an index a row into the run's instants, read as the plain column of times each log kept before --

def test_append_times_kept_as_instants_read_back_as_a_column_of_every_time():
    """Three replicas sharing a table (and a fourth log with a table of its own sharing the instants) append,
    extend, truncate and retire in random order at nondecreasing times, several appends at one instant; each log's
    times read back (``append_times``, ``appended_ms``), and every search by time (``written_before``,
    ``durable_offset``, ``bytes_written_before``, ``recovery_point_at``, ``unrecovered``) answers as the same
    search over a plain list of each row's time, the layout before."""
    import random
    from bisect import bisect_left, bisect_right

    from kafkamodel.sim.storage.log import Instants
    from kafkamodel.sim.storage.recovery import recovery_point_at, segment_starts, unrecovered

    rng = random.Random(5)
    sizes = [rng.randrange(1, 400) for _ in range(4000)]
    clock = Instants()
    table = AppendTable(clock=clock)
    logs = [Log(segment_bytes=2000, batch_bytes=sizes, table=table) for _ in range(3)]
    logs.append(Log(segment_bytes=2000, batch_bytes=sizes, table=AppendTable(clock=clock)))
    times: list[list[float]] = [[] for _ in logs]  # the old column: each row's time
    now, batch, appended = 0.0, 0, 0
    for step in range(3000):
        if rng.random() < 0.25:
            now += rng.choice((0.5, 1.0, 0.001, 7.25))
        k = rng.randrange(len(logs))
        log, kept = logs[k], times[k]
        action = rng.random()
        if action < 0.5 or not log.rows:  # a leader's append (a new batch at this log's LEO)
            n = rng.randrange(1, 20)
            log.append(log.log_end_offset, log.log_end_offset + n, 0, batch, now)
            kept.append(now)
            appended += 1
            batch = (batch + 1) % len(sizes)
        elif action < 0.8:  # a follower's fetch of what another log holds past its LEO
            src = logs[rng.randrange(len(logs))]
            i = src.entry_index(log.log_end_offset)
            if src is not log and i < src.rows and src.bases[i] == log.log_end_offset:
                j = min(src.rows, i + rng.randrange(1, 4))
                chunk = src.chunk(i, j)
                if j == i + 1:
                    base, epoch, b, end = chunk
                    log.append(base, end, epoch, b, now)
                else:
                    log.extend(chunk, now)
                kept.extend([now] * (j - i))
                appended += j - i
        elif action < 0.95:  # a truncation
            i = rng.randrange(log.rows)
            log.truncate_to(log.bases[i])
            del kept[i:]
        else:  # retention of the oldest rows (the caller's cut, as apply_retention makes it)
            cut = rng.randrange(log.rows)
            log.retire(cut)
            log.detach()
            del log.bases[:cut], log.batch_ids[:cut], log.append_at[:cut]
            log.rows -= cut
            if log.rows:
                log.log_start_offset = log.bases[0]
            log.epoch_rows[0] = 0
            del kept[:cut]
        assert list(log.append_times()) == kept
        if step % 7:
            continue
        for log, kept in zip(logs, times):
            assert [log.appended_ms(i) for i in range(log.rows)] == kept
            for cut in (-1.0, 0.0, now / 3, now / 2, now, now + 1, *rng.sample(kept, min(3, len(kept)))):
                assert log.written_before(cut) == bisect_left(kept, cut)
                w = bisect_left(kept, cut)
                assert log.durable_offset(cut) == max(log.flushed_offset, log.end_of(w - 1) if w else 0)
                i = rng.randrange(log.rows + 1)
                j = rng.randrange(i, log.rows + 1)
                k = bisect_left(kept, cut, i, j)
                expect = sum(sizes[b] for b in log.batch_ids[i:k] if b >= 0) if i < j and kept[i] < cut else 0
                assert log.bytes_written_before(i, j, cut) == expect
                if log.rows:
                    r = bisect_right(kept, cut)  # the rows appended by `cut` (recovery_point_at over the list)
                    starts = segment_starts(log)
                    point = log.log_start_offset if r == 0 else max(
                        log.bases[starts[bisect_right(starts, r - 1) - 1]],
                        min(log.flushed_offset, log.end_of(r - 1)))
                    assert recovery_point_at(log, cut) == point
                    total = uncached = 0
                    for b, at in zip(log.batch_ids[:log.rows], kept):
                        total += sizes[b]
                        uncached += sizes[b] if at < cut else 0
                    assert unrecovered(log, log.log_start_offset, cut)[:2] == (total, uncached)
    assert len(clock.times) < appended / 2  # (one instant for several rows)
