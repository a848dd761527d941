"""``ProducerStateManager.admit``, the leader's idempotence check of a batch before it appends it, against what Kafka
documents and its ProducerStateManager does: a producer's batches are appended in sequence, a resend of one of its
last five (ProducerStateEntry.NUM_BATCHES_TO_RETAIN) is answered with the offsets it was first written at, a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER, a new producer epoch starts again at sequence 0 and an older (fenced) epoch is refused;
after a truncation the state is rebuilt from the log's batches, as a broker rebuilds it from its log."""

from __future__ import annotations

from array import array

from kafkamodel.sim.storage.log import Log
from kafkamodel.sim.storage.producer_state import (
    DUPLICATE_BATCH,
    DUPLICATE_SEQUENCE_NUMBER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    REMEMBERED,
    ProducerStateManager,
)

RECORDS = 10  # records per batch


class Table:
    """The batch table's producer, epoch and sequence columns, one row per batch made."""

    def __init__(self) -> None:
        self.producer, self.epoch, self.seq = array("h"), array("h"), array("i")

    def producer_of(self, b: int) -> int:
        return self.producer[b]

    def batch(self, producer: int, epoch: int, seq: int) -> int:
        self.producer.append(producer)
        self.epoch.append(epoch)
        self.seq.append(seq)
        return len(self.seq) - 1


def admitted(state: ProducerStateManager, log: Log, b: int):
    """What admit finds for batch b at the log's end; appended when it is to be."""
    base = log.log_end_offset
    found = state.admit(log, b, base, base + RECORDS)
    if found is None:
        log.append(base, base + RECORDS, 0, b, 0.0)
    return found


def fresh() -> tuple[Table, ProducerStateManager, Log]:
    table = Table()
    log = Log(segment_bytes=1 << 30, batch_bytes=None)
    log.producers = {}  # a leader's log: its producer state built (None: rebuilt from the log when next needed)
    return table, ProducerStateManager(table), log


def test_batches_in_sequence_are_appended_and_a_gap_is_out_of_order():
    table, state, log = fresh()
    assert [admitted(state, log, table.batch(0, 0, s)) for s in range(3)] == [None, None, None]
    assert admitted(state, log, table.batch(0, 0, 4)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)  # 3 is missing
    assert log.log_end_offset == 3 * RECORDS  # the refused batch is not in the log
    assert admitted(state, log, table.batch(1, 0, 0)) is None  # another producer: its own sequence
    assert admitted(state, log, table.batch(0, 0, 3)) is None


def test_a_producer_it_does_not_know_starts_at_sequence_zero():
    table, state, log = fresh()
    assert admitted(state, log, table.batch(0, 0, 7)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)
    assert admitted(state, log, table.batch(0, 0, 0)) is None


def test_a_resend_of_one_of_the_last_five_is_answered_with_its_offsets():
    table, state, log = fresh()
    made = [table.batch(0, 0, s) for s in range(REMEMBERED + 2)]  # sequences 0..6 at offsets 0, 10, .., 60
    for b in made:
        assert admitted(state, log, b) is None
    leo = log.log_end_offset
    for s in range(2, REMEMBERED + 2):  # the last five: 2..6
        assert admitted(state, log, table.batch(0, 0, s)) == (DUPLICATE_BATCH, s * RECORDS, (s + 1) * RECORDS)
    for s in (0, 1):  # older than the five remembered
        assert admitted(state, log, table.batch(0, 0, s)) == (DUPLICATE_SEQUENCE_NUMBER, -1, -1)
    assert log.log_end_offset == leo  # no resend was appended again
    assert REMEMBERED == 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN


def test_a_new_epoch_starts_at_zero_and_an_older_epoch_is_fenced():
    table, state, log = fresh()
    for s in range(3):
        admitted(state, log, table.batch(0, 0, s))
    assert admitted(state, log, table.batch(0, 1, 3)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)  # new epoch, not 0
    for s in range(REMEMBERED):
        assert admitted(state, log, table.batch(0, 1, s)) is None  # the bumped epoch starts again
    # the old epoch is refused, whatever its sequence (even one the new epoch has passed)
    assert admitted(state, log, table.batch(0, 0, 3)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)
    assert admitted(state, log, table.batch(0, 1, REMEMBERED)) is None


def test_a_new_epoch_forgets_the_old_epochs_batches():
    """Kafka's ProducerStateEntry.maybeUpdateProducerEpoch clears the remembered batches when a batch of another
    epoch is added: a resend of a batch of the old epoch, still among the last five written, is then fenced, not
    answered as a duplicate with the offsets it was written at."""
    table, state, log = fresh()
    for s in range(3):
        admitted(state, log, table.batch(0, 0, s))
    assert admitted(state, log, table.batch(0, 0, 2)) == (DUPLICATE_BATCH, 2 * RECORDS, 3 * RECORDS)  # remembered
    assert admitted(state, log, table.batch(0, 1, 0)) is None  # the bumped epoch's first batch
    assert admitted(state, log, table.batch(0, 0, 2)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)  # old epoch: fenced
    assert admitted(state, log, table.batch(0, 1, 0)) == (DUPLICATE_BATCH, 3 * RECORDS, 4 * RECORDS)


def test_the_state_is_rebuilt_from_the_log_after_a_truncation():
    table, state, log = fresh()
    made = [table.batch(0, 0, s) for s in range(4)]
    for b in made:
        admitted(state, log, b)
    log.truncate_to(3 * RECORDS)  # the last batch (sequence 3) goes; the state is dropped with it
    assert log.producers is None
    assert admitted(state, log, table.batch(0, 0, 1)) == (DUPLICATE_BATCH, RECORDS, 2 * RECORDS)  # from the log
    assert admitted(state, log, table.batch(0, 0, 3)) is None  # the truncated one is the next again


def test_track_remembers_without_the_check():
    table, state, log = fresh()
    b = table.batch(0, 0, 9)
    state.track(log, b, 0, RECORDS)  # a batch whose sequence the leader does not check is still remembered
    log.append(0, RECORDS, 0, b, 0.0)
    assert admitted(state, log, table.batch(0, 0, 9)) == (DUPLICATE_BATCH, 0, RECORDS)
    assert admitted(state, log, table.batch(0, 0, 10)) is None


def test_the_producer_given_by_the_leader_is_the_producer_read_from_the_batch_table():
    """The leader passes a produce request's producer (its batches are that producer's) instead of reading it from
    the batch table (its producers are runs: a search each); both give the same answers and the same state, for
    batches in sequence, gaps, resends and producers interleaved."""
    rng = __import__("numpy").random.default_rng(11)
    plan = [(int(rng.integers(0, 3)), int(rng.integers(0, 2)), int(rng.integers(0, 9))) for _ in range(200)]
    outcomes, states = [], []
    for given in (False, True):
        table, state, log = fresh()
        got = []
        for producer, epoch, seq in plan:
            b = table.batch(producer, epoch, seq)
            base = log.log_end_offset
            found = state.admit(log, b, base, base + RECORDS, True, producer if given else -1)
            if found is None:
                log.append(base, base + RECORDS, 0, b, 0.0)
            got.append(found)
        outcomes.append(got)
        states.append({p: tail.tolist() for p, tail in log.producers.items()})
    assert outcomes[0] == outcomes[1] and states[0] == states[1]
    assert sum(found is None for found in outcomes[0]) > 10  # some appended, some refused
