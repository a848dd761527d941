"""The model: a deterministic discrete-event simulation of Kafka replication.

Layers, each a package: ``engine`` (the event heap, transport, network),
``storage`` (a replica's log), ``broker`` (request handling, the leader and
follower sides of replication, fetch sessions, the replica manager),
``controller`` (liveness, elections, placement), ``rules`` (the swappable
KIP-named variants), ``clients`` (producers and consumers), ``results``
(measures, the outcome, invariants). ``simulation`` builds and runs them.
"""
