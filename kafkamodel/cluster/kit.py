"""What the cluster report takes from the study kit and the durability estimator, in one place: those packages
are moving (kafkamodel.study -> kafkamodel.kit, kafkamodel.campaign.durability -> kafkamodel.durability), and
this module is the one to change when they do."""

from __future__ import annotations

from ..campaign.durability.estimate import estimate as durability_estimate  # noqa: F401
from ..campaign.durability.spec import Configuration, DurabilitySpec, parse_failures, zones_of  # noqa: F401
from ..study.present import interval, number  # noqa: F401
from ..study.report import STYLE, provenance  # noqa: F401
