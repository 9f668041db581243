"""Retrieval evaluation: BEIR data sets and golden files, metrics, runs, reports and gates.

``beir`` / ``golden`` read the inputs, ``sets`` turns them into judged queries, ``runner``
indexes and searches through an App-like object, ``metrics`` scores, ``report`` / ``html``
write report.json/.md/.html, and ``gate`` checks the configured minimums.
"""
