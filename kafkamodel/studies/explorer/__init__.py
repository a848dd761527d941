"""The explorer: one run of a scenario, explained, and the panel that edits a scenario and runs it again.

``explore`` (a run's table, figure and finding, for ``notebooks/00_explore.ipynb``), ``summary`` (a run's
summary in words), ``runfigure`` (a run's timeline figure), ``panel_model`` (what the panel's controls edit,
without widgets) and ``widgets`` (the panel itself: ``explorer_panel``, and ``study_panel`` on a study's parts).
"""
