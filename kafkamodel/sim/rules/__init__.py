"""The swappable rules, each named after its KIP: replication modes (``modes``), follower truncation
(``truncation``), ISR lag rules (``lag``). The Kafka version chooses them (``kafkamodel.config.versions``). Also
the partition assignors (``assignors``, ``sticky``), run by a classic group's leader and by the KIP-848 coordinator."""
