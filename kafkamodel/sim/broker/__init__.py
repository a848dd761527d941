"""The broker, split as Kafka's own code is: its request threads and costs (``server``); the leader replica
(``leader``: BecomeLeader, the HW, the ISR, OffsetsForLeaderEpoch); the requests it serves (``produce``,
``consumer_fetch``, ``sessions`` for followers); the follower (``fetcher``'s threads and requests,
``follower``'s processing of answers and truncation); LeaderAndIsr and periodic tasks (``replica_manager``)."""
