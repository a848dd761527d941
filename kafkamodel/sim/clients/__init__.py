"""Clients: the producer (``producer``, ``accumulator``, ``partitioner``, ``workload``) and the consumers
(``consumer``: the poll loop and commits; ``fetcher``; ``assignors``). The group coordinator they talk to is
the broker's (``broker.group_coordinator``)."""
