"""estimator: the 3-layer SQLite throughput store and the Hops iteration-time model.

Sits between the profiler (which hands over measurements) and the planner/simulator (which ask for
per-GPU and configuration throughputs, sensitivity and expected age). Pure apart from the store.
"""
