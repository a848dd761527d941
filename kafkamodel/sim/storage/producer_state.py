"""The idempotent producer's state a log keeps (Kafka's ProducerStateManager): each producer's last five batches.

A leader checks every idempotent batch against it before appending
(ProducerAppendInfo's sequence check, and the duplicate lookup that answers a
resend with the offsets it was first written at). The state lives in
``Log.producers`` and travels with the log; a truncation drops it and it is
rebuilt from the entries when next needed, as a broker reloads its snapshot.
"""

from __future__ import annotations

from .log import Log

REMEMBERED = 5  # batches per producer (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN)

# what admit finds when a batch is not to be appended (the last two named as the errors Kafka answers with); it
# finds None for the next sequence number (or 0 for a producer or epoch it does not know): append it
DUPLICATE_BATCH = 1  # a resend of one of the producer's last five batches: answered with that batch's offsets
DUPLICATE_SEQUENCE_NUMBER = 2  # older than the five it remembers: the producer takes it as written
OUT_OF_ORDER_SEQUENCE_NUMBER = 3  # a gap, or a fenced older epoch: refused
_OUT_OF_ORDER = (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)


# One of a producer's remembered batches in this log: a plain tuple (read five at a time at every append), its
# fields at these positions
BATCH_METADATA = ("batch", "producer_epoch", "sequence", "base_offset", "end_offset")
_EPOCH, _SEQUENCE, _BASE, _END = (BATCH_METADATA.index(f) for f in BATCH_METADATA[1:])


class ProducerStateManager:
    """Reads the producer, epoch and sequence of batches from the batch table."""

    def __init__(self, batches):
        self.producer, self.epoch, self.seq = batches.producer, batches.epoch, batches.seq

    def track(self, log: Log, b: int, base: int, end: int) -> None:
        """Remember batch `b`, appended at offsets base..end-1, among its producer's last five in this log."""
        if log.producers is not None and b >= 0:  # (None: rebuilt lazily from the log when next needed)
            self.admit(log, b, base, end, False)

    def admit(self, log: Log, b: int, base: int, end: int, check: bool = True) -> tuple[int, int, int] | None:
        """Check batch b before the leader appends it at offsets base..end-1 (ProducerAppendInfo's sequence check):
        None when it is to be appended, and then it is remembered among its producer's last five at once (the
        check and `track` in one call, the leader's step for each batch); else (DUPLICATE_BATCH, its base, its
        end) for a resend of a remembered batch, or (DUPLICATE_SEQUENCE_NUMBER or OUT_OF_ORDER_SEQUENCE_NUMBER,
        -1, -1). Without `check` it only remembers the batch (`track`)."""
        producers = log.producers
        if producers is None:  # after a truncation: scan the log back, as a broker reloads its snapshot
            producers = log.producers = {}
            for at, upto, _, held in log.entry_list():
                self.track(log, held, at, upto)
        producer = self.producer[b]
        epoch, seq = self.epoch[b], self.seq[b]
        tail = producers.get(producer)
        if tail is None:  # a producer it does not know: the sequence must start at 0
            if check and seq:
                return _OUT_OF_ORDER
            producers[producer] = [(b, epoch, seq, base, end)]  # BATCH_METADATA
            return None
        if check:
            m = tail[-1]
            # the next in sequence (the usual case): no remembered batch is a resend of it, as a log holds a
            # producer's batches of one epoch in sequence order (each was appended only as the next after the last)
            if m[_SEQUENCE] != seq - 1 or m[_EPOCH] != epoch:
                found = _not_next(tail, epoch, seq)
                if found is not None:
                    return found
        tail.append((b, epoch, seq, base, end))  # BATCH_METADATA
        if len(tail) > REMEMBERED:
            del tail[0]
        return None


def _not_next(tail: list, epoch: int, seq: int) -> tuple[int, int, int] | None:
    """What a batch that is not the next after its producer's last remembered one (`tail`, not empty) is: None (a
    new epoch starting at 0: append it), a resend of a remembered batch, or an error."""
    for m in tail:  # (fields read by position: unpacking five per remembered batch cost more)
        if m[_SEQUENCE] == seq and m[_EPOCH] == epoch:
            return DUPLICATE_BATCH, m[_BASE], m[_END]
    _, last_epoch, last, _, _ = tail[-1]
    if epoch > last_epoch:  # a new epoch: the sequence must start at 0
        return None if seq == 0 else _OUT_OF_ORDER
    if epoch < last_epoch:
        return _OUT_OF_ORDER  # a fenced (older) epoch: the client resends it in the new one
    if seq <= last:
        return DUPLICATE_SEQUENCE_NUMBER, -1, -1  # older than the five it remembers
    return _OUT_OF_ORDER  # an earlier batch is missing
