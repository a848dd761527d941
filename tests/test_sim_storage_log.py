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
    assert follower.log_end_offset == 16 and list(follower.append_ms) == [1.0, 1.0, 1.0]
    for i in (3, 4):  # then one batch at a time, as a follower's usual answer carries it (its fields)
        base, end, epoch, b = leader.entry(i)
        follower.append(base, end, epoch, b, 1.0 + i)
    assert follower.entry_list() == leader.entry_list()
    assert list(follower.append_ms) == [1.0, 1.0, 1.0, 4.0, 5.0] and list(leader.append_ms) == [0.0] * 5
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
    assert list(follower.append_ms) == [2.0, 3.0, 3.0]


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
    assert list(b.append_ms) == [1.0, 1.0, 3.0, 3.0] and b.log_end_offset == 21


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
