"""Fault-schedule campaigns: many random fault schedules against named settings, as a sweep.

A campaign spec (``data/campaigns/<name>.yaml``, read by ``spec``) names a
base scenario, a fault vocabulary (``vocabulary``: kinds, targets, gaps,
durations, power loss) and settings, each with what it promises
(``properties``). ``plan`` turns it into a sweep the study kit's engines
run (papermill or Spark, resumable); ``verdicts`` reads the runs back and
checks every property per setting; ``shrink`` reduces a schedule that breaks
a property to a small scenario file (``counterexample``); ``report`` and
``analysis`` make its HTML page. ``command.run_campaign`` does all of it, for
``python -m kafkamodel campaign SPEC``.
"""
