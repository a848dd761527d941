"""Durability in nines (issue 25): failure rates -> acknowledged records lost per year, per configuration.

``spec`` (the failure-rate spec), ``markov`` (the analytic cross-check), ``windows`` (the failure process over
years, with failure biasing), ``estimate`` (the detailed model inside the windows, combined), ``command`` (the
``durability`` verb). ``docs/durability.md`` says how and what is assumed.
"""
