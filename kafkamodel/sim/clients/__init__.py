"""Clients: the producer (``producer``, ``accumulator``, ``partitioner``, ``workload``) and consumer groups
(``consumer``, ``assignors``)."""
