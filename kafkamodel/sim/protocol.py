"""Names every actor shares: node ids, connection kinds, batch states, error codes (acks: ``config.settings``).

Error codes are one family, named as Kafka's ``Errors``; the first seven are
the ones a producer's batch can end with (``ERRORS`` is the records table's
``error`` category list, so their order is fixed).
"""

from __future__ import annotations

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
ERRORS = ("NONE", "NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
          "DELIVERY_TIMEOUT", "OUT_OF_ORDER_SEQUENCE_NUMBER")  # what a batch can end with (records.error)
