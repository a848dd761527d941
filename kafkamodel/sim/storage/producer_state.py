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

# what check_sequence finds (the last two named as the errors Kafka answers with)
IN_SEQUENCE = 0  # the next sequence number (or 0 for a producer or epoch it does not know): append it
DUPLICATE_BATCH = 1  # a resend of one of the producer's last five batches: answered with that batch's offsets
DUPLICATE_SEQUENCE_NUMBER = 2  # older than the five it remembers: the producer takes it as written
OUT_OF_ORDER_SEQUENCE_NUMBER = 3  # a gap, or a fenced older epoch: refused
_APPEND = (IN_SEQUENCE, -1, -1)


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
        if log.producers is None:
            return  # rebuilt lazily from the log when next needed
        if b >= 0:
            producer = self.producer[b]
            tail = log.producers.get(producer)
            if tail is None:
                tail = log.producers[producer] = []
            tail.append((b, self.epoch[b], self.seq[b], base, end))  # BATCH_METADATA
            if len(tail) > REMEMBERED:
                del tail[0]

    def check_sequence(self, log: Log, b: int) -> tuple[int, int, int]:
        """(outcome, base offset, end offset) for batch b before it is appended: (IN_SEQUENCE, -1, -1) to append it;
        (DUPLICATE_BATCH, its base, its end) for a resend of a remembered batch; else (DUPLICATE_SEQUENCE_NUMBER
        or OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)."""
        if log.producers is None:  # after a truncation: scan the log back, as a broker reloads its snapshot
            log.producers = {}
            for base, end, _, held in log.entry_list():
                self.track(log, held, base, end)
        tail = log.producers.get(self.producer[b], ())
        epoch, seq = self.epoch[b], self.seq[b]
        if tail:
            m = tail[-1]
            # the next in sequence (the usual case): no remembered batch is a resend of it, as a log holds a
            # producer's batches of one epoch in sequence order (each was appended only as the next after the last)
            if m[_SEQUENCE] == seq - 1 and m[_EPOCH] == epoch:
                return _APPEND
        for m in tail:  # (fields read by position: unpacking five per remembered batch cost more, at every append)
            if m[_SEQUENCE] == seq and m[_EPOCH] == epoch:
                return DUPLICATE_BATCH, m[_BASE], m[_END]
        if tail:
            _, last_epoch, last, _, _ = tail[-1]
        if not tail or epoch > last_epoch:
            # a producer it does not know, or a new epoch: the sequence must start at 0
            return _APPEND if seq == 0 else (OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1)
        if epoch < last_epoch:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1  # a fenced (older) epoch: the client resends it in the new one
        if seq <= last:
            return DUPLICATE_SEQUENCE_NUMBER, -1, -1  # older than the five it remembers
        return OUT_OF_ORDER_SEQUENCE_NUMBER, -1, -1  # an earlier batch is missing
