"""estimator: the 3-layer SQLite throughput store and the Hops iteration-time model.

Sits between the profiler (which hands over measurements) and the planner/simulator (which ask for
per-GPU and configuration throughputs, sensitivity and expected age). Pure apart from the store.

Modules: ``store`` (SQLite, the only impure part), ``snapshot`` (immutable views + in-memory source),
``model`` (eq. 1-5), ``mixture`` (EM for eq. 3), ``estimate`` (top-down lookup, eq. 9, eq. 10,
:class:`~estimator.estimate.Estimator`), ``extrapolate`` (a job measured in place, carried to the types
and counts it has not run on), ``progress`` (configs where a job makes no progress answer 0), ``explore``
(uncertainty and optimistic bounds of unmeasured configs), ``calibration`` (B_link >= B_net, within what
was measured), ``signature`` (job keys), ``errors``.
"""
