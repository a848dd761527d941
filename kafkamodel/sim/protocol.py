"""Names every actor shares: node ids, connection kinds, batch states, error codes (acks: ``config.settings``),
and the messages brokers answer with.

Error codes are one family, named as Kafka's ``Errors``; the first seven are
the ones a producer's batch can end with (``ERRORS`` is the records table's
``error`` category list, so their order is fixed).

Messages that cross modules have their fields named as Kafka's request and
response schemas name them, here, once. The rarer ones are named tuples
(their readers may still unpack them). The ones every produced batch and
every replica fetch build and read are plain tuples with their fields listed
below, unpacked into those names where they are read: as with log entries
(``storage.log``), a named tuple or a slotted record there costs the bench
more than the 3% it may lose (CPython 3.11 specialises neither a named
tuple's attribute reads, indexing nor unpacking; a record's ``__init__`` is
a Python call).
"""

from __future__ import annotations

from typing import NamedTuple

# ---- nodes: brokers are 0..n-1; the rest are negative ------------------------------------------------
CLIENT = -1  # producers and consumers (clients never fail)
CONTROLLER = -2  # ZooKeeper / the metadata quorum: reachable unless a broker is cut from it; never fails
COORDINATOR = CONTROLLER  # the consumer group coordinator shares that reliable node

# ---- connections: each kind has its own TCP connections and its own latency stream ---------------------
DATA_CONN = 0  # produce requests, replication and controller traffic
CONSUMER_CONN = 1  # consumers and their group coordinator

# ---- a producer batch's state --------------------------------------------------------------------------
PENDING, INFLIGHT, ACKED, FAILED = 0, 1, 2, 3

# ---- error codes, named as Kafka's Errors ----------------------------------------------------------------
NONE = 0
NOT_LEADER_OR_FOLLOWER = 1
NOT_ENOUGH_REPLICAS = 2
REQUEST_TIMED_OUT = 3
NETWORK_EXCEPTION = 4  # the client's own: the connection was refused or reset
DELIVERY_TIMEOUT = 5  # the client's own: delivery.timeout.ms passed
OUT_OF_ORDER_SEQUENCE_NUMBER = 6
OFFSET_OUT_OF_RANGE = 7
# the model's own split of OFFSET_OUT_OF_RANGE for a follower below the leader's log start offset (Kafka's fetcher
# tells the two apart by asking the leader's offsets): it restarts its log there
LOG_START_MOVED = 8
# a consumer's fetch at a follower (KIP-392) names the leader epoch of its metadata: a follower told of an older epoch
# answers UNKNOWN_LEADER_EPOCH (the consumer retries), one told of a newer answers FENCED_LEADER_EPOCH
FENCED_LEADER_EPOCH = 9
UNKNOWN_LEADER_EPOCH = 10
ERRORS = ("NONE", "NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
          "DELIVERY_TIMEOUT", "OUT_OF_ORDER_SEQUENCE_NUMBER")  # what a batch can end with (records.error)


# ---- produce (ProduceResponse) ----------------------------------------------------------------------------
# one batch of a produce request answered (the model's requests carry one batch per partition): a plain tuple of
PRODUCE_PARTITION_RESPONSE = (
    "batch",  # the batch's id in the batch table
    "attempt",  # which send of the batch this answers
    "error_code",
    "base_offset",  # where the batch was written (-1 with an error or an old duplicate)
)


# ---- replica fetches (FetchRequest / FetchResponse) ------------------------------------------------------------
# a partition in a follower's (incremental, KIP-227) fetch request: a plain tuple of
FETCH_PARTITION = (
    "partition",
    "fetch_offset",  # the follower's LEO: where it wants records from
    "current_leader_epoch",  # the epoch it follows (the leader refuses another: FENCED_LEADER_EPOCH)
)
# a partition in a fetch response to a follower: a plain tuple of
FETCH_RESPONSE_PARTITION = (
    "partition",
    "error_code",
    "high_watermark",  # -1 with an error
    "records",  # the log entries given (whole batches; none with an error or only a new HW)
    "log_start_offset",  # with LOG_START_MOVED: where the follower's log restarts (else -1)
    "log_end_offset",  # with OFFSET_OUT_OF_RANGE: the leader's LEO, where the follower truncates (else -1)
)


# ---- OffsetsForLeaderEpoch ---------------------------------------------------------------------------------------
class OffsetForLeaderPartition(NamedTuple):
    """A partition in an OffsetsForLeaderEpoch request: where does `leader_epoch` end in the leader's log?"""

    partition: int
    leader_epoch: int  # the follower's last epoch


class EpochEndOffset(NamedTuple):
    """A partition in an OffsetsForLeaderEpoch response."""

    partition: int
    error_code: int
    asked_epoch: int  # the epoch the request asked for (KIP-279: the follower asks again if the answer is older)
    leader_epoch: int  # the largest epoch <= the asked one in the leader's log (-1: UNDEFINED)
    end_offset: int  # where that epoch ends there (-1: UNDEFINED)


# ---- consumer fetches -----------------------------------------------------------------------------------------------
class ConsumerFetchPartition(NamedTuple):
    """A partition in a fetch response to a consumer."""

    partition: int
    fetch_offset: int  # the offset asked (or the one auto.offset.reset chose)
    records: list  # (batch, first record, end record, offset of the first) slices below the HW
    next_offset: int  # where the next fetch starts
    error_code: int
    preferred_read_replica: int = -1  # KIP-392: the leader's answer names the replica to fetch from (-1: none);
    # with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH (3.7+, KIP-951) the current leader the broker's metadata
    # cache names (CurrentLeader.LeaderId; -1: none)
    current_leader_epoch: int = -1  # KIP-951: that leader's epoch (CurrentLeader.LeaderEpoch)
