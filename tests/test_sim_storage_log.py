"""``Log.read`` as Kafka's Log.read reads: whole batches from the one holding the offset, none starting at or past
the bound (the HW for a consumer, the LEO for a follower), up to the byte cap, and with minOneMessage the first
batch even past the cap ("the first message will be returned even if it exceeds maxLength", Kafka's LocalLog.read)."""

from __future__ import annotations

from kafkamodel.sim.storage.log import CONTROL, Log

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
