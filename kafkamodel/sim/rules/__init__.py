"""The swappable rules, each named after its KIP: replication modes (``modes``), follower truncation
(``truncation``), ISR lag rules (``lag``). The Kafka version chooses them (``kafkamodel.config.versions``)."""
