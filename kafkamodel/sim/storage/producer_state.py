"""The idempotent producer's state a log keeps (Kafka's ProducerStateManager): each producer's last five batches,
all of its current epoch (a batch of a new epoch forgets the old epoch's, as ProducerStateEntry does).

A leader checks every idempotent batch against it before appending
(ProducerAppendInfo's sequence check, and the duplicate lookup that answers a
resend with the offsets it was first written at). The state lives in
``Log.producers`` and travels with the log; a truncation drops it and it is
rebuilt from the entries when next needed, as a broker reloads its snapshot.
"""

from __future__ import annotations

from array import array
from struct import Struct

from .log import Log

REMEMBERED = 5  # batches per producer (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN)

# what admit finds when a batch is not to be appended (the last two named as the errors Kafka answers with); it
# finds None for the next sequence number (or 0 for a producer or epoch it does not know): append it
DUPLICATE_BATCH = 1  # a resend of one of the producer's last five batches: answered with that batch's offsets
DUPLICATE_SEQUENCE_NUMBER = 2  # older than the five it remembers: the producer takes it as written
OUT_OF_ORDER_SEQUENCE_NUMBER = 3  # a gap, or a fenced older epoch: refused
_OUT_OF_ORDER = (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)


# A producer's remembered batches in this log: one flat array.array of int64, five fields per batch (oldest first),
# at these positions within a batch's five. Flat, so that a batch remembered holds no object of its own: reading a
# producer's last batch touches the array's end alone, and forgetting the oldest frees nothing (the leader does both
# for each batch of a 3,000-partition request, where every partition's state is out of the CPU's caches).
BATCH_METADATA = ("batch", "producer_epoch", "sequence", "base_offset", "end_offset")
_FIELDS = len(BATCH_METADATA)
_EPOCH, _SEQUENCE, _BASE, _END = (BATCH_METADATA.index(f) for f in BATCH_METADATA[1:])
_LAST_EPOCH, _LAST_SEQUENCE = _EPOCH - _FIELDS, _SEQUENCE - _FIELDS  # the last batch's, from the array's end
_KEPT = REMEMBERED * _FIELDS
_PACKED = Struct(f"{_FIELDS}q").pack  # a batch's fields as the array's bytes: one C call (array.extend parses each)


class ProducerStateManager:
    """Reads the producer, epoch and sequence of batches from the batch table."""

    def __init__(self, batches):
        self.batches = batches  # (its epoch and seq columns read from it each time: they widen, Batches.widen)
        self.producer_of = batches.producer_of

    def track(self, log: Log, b: int, base: int, end: int, producer: int = -1) -> None:
        """Remember batch `b`, appended at offsets base..end-1, among its producer's last five in this log
        (`producer`: the batch's, if the caller knows it)."""
        if log.producers is not None and b >= 0:  # (None: rebuilt lazily from the log when next needed)
            self.admit(log, b, base, end, False, producer)

    def admit(self, log: Log, b: int, base: int, end: int, check: bool = True,
              producer: int = -1) -> tuple[int, int, int] | None:
        """Check batch b before the leader appends it at offsets base..end-1 (ProducerAppendInfo's sequence check):
        None when it is to be appended, and then it is remembered among its producer's last five at once (the
        check and `track` in one call, the leader's step for each batch); else (DUPLICATE_BATCH, its base, its
        end) for a resend of a remembered batch, or (DUPLICATE_SEQUENCE_NUMBER or OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1, -1). Without `check` it only remembers the batch (`track`). `producer`: the batch's (a produce
        request's batches are its producer's, so the leader passes it), else (-1) read from the batch table, whose
        producers are runs (``Batches.producer_of``: a search where a column read was a cell)."""
        producers = log.producers
        if producers is None:  # after a truncation: scan the log back, as a broker reloads its snapshot
            producers = log.producers = {}
            for at, upto, _, held in log.entry_list():
                self.track(log, held, at, upto)
        if producer < 0:
            producer = self.producer_of(b)
        epoch, seq = self.batches.epoch[b], self.batches.seq[b]
        tail = producers.get(producer)
        if tail is None:  # a producer it does not know: the sequence must start at 0
            if check and seq:
                return _OUT_OF_ORDER
            producers[producer] = array("q", (b, epoch, seq, base, end))  # BATCH_METADATA
            return None
        # the next in sequence (the usual case): no remembered batch is a resend of it, as a log holds a producer's
        # batches of one epoch in sequence order (each was appended only as the next after the last)
        if check and (tail[_LAST_SEQUENCE] != seq - 1 or tail[_LAST_EPOCH] != epoch):
            found = _not_next(tail, epoch, seq)
            if found is not None:
                return found
        if tail[_LAST_EPOCH] != epoch:  # a new epoch forgets the old one's batches (maybeUpdateProducerEpoch)
            del tail[:]
        elif len(tail) == _KEPT:
            del tail[:_FIELDS]
        tail.frombytes(_PACKED(b, epoch, seq, base, end))  # BATCH_METADATA
        return None


def _not_next(tail: array, epoch: int, seq: int) -> tuple[int, int, int] | None:
    """What a batch that is not the next after its producer's last remembered one (`tail`, not empty) is: None (a
    new epoch starting at 0: append it), a resend of a remembered batch, or an error."""
    for k in range(0, len(tail), _FIELDS):
        if tail[k + _SEQUENCE] == seq and tail[k + _EPOCH] == epoch:
            return DUPLICATE_BATCH, tail[k + _BASE], tail[k + _END]
    last_epoch, last = tail[_LAST_EPOCH], tail[_LAST_SEQUENCE]
    if epoch > last_epoch:  # a new epoch: the sequence must start at 0
        return None if seq == 0 else _OUT_OF_ORDER
    if epoch < last_epoch:
        return _OUT_OF_ORDER  # a fenced (older) epoch: the client resends it in the new one
    if seq <= last:
        return DUPLICATE_SEQUENCE_NUMBER, -1, -1  # older than the five it remembers
    return _OUT_OF_ORDER  # an earlier batch is missing
