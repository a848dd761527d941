"""Configuration: a scenario from YAML to typed, frozen settings, checked once.

``schema`` declares every key and its rule, ``versions`` what each Kafka release
has, ``version_checks`` what a version decides and refuses, ``scenario`` loads
and validates, ``settings`` derives the frozen records the model reads. Nothing
here imports the model (``kafkamodel.sim``).
"""
