"""ISR lag rules: when a leader counts a follower as out of sync.

* ``TimeLagRule`` (Kafka >= 0.9, KIP-16): not caught up to the leader's LEO
  for more than replica.lag.time.max.ms; checked every half of that period.
* ``CountLagRule`` (Kafka 0.8): no fetch for replica.lag.time.max.ms, or
  more than replica.lag.max.messages behind; checked every period, as 0.8's
  isr-expiration task ran.
"""

from __future__ import annotations

from ..state import Replica


class TimeLagRule:
    name = "time"

    def __init__(self, broker_settings):
        self.max_lag_ms = broker_settings.replica_lag_time_max_ms
        self.check_every_ms = self.max_lag_ms / 2

    def out_of_sync(self, rep: Replica, f: int, now: float) -> bool:
        return now - rep.lead.caught_up_ms(f, rep.log.log_end_offset) > self.max_lag_ms


class CountLagRule(TimeLagRule):
    name = "count"

    def __init__(self, broker_settings):
        super().__init__(broker_settings)
        self.max_messages = broker_settings.replica_lag_max_messages
        self.check_every_ms = self.max_lag_ms  # 0.8 ran its isr-expiration task every replica.lag.time.max.ms

    def out_of_sync(self, rep: Replica, f: int, now: float) -> bool:
        lead = rep.lead
        if now - lead.fetched_ms(f) > self.max_lag_ms:
            return True
        return rep.log.log_end_offset - lead.follower_leo(f, 0) > self.max_messages


def make_lag_rule(broker_settings):
    return CountLagRule(broker_settings) if broker_settings.replica_lag_max_messages is not None else TimeLagRule(broker_settings)
