"""dro simulate: a trace replayed through the scheduler, step by step, for several policies.

`series` reads a trace's usage and replicas series (CSV, Prometheus range-query exports).

Called by no module of the package: an entry point.
"""
