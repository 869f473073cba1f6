"""profiler: short PyTorch probes, the running-mode recorder and bandwidth calibration.

Produces measurement records (JSON files) that the engine ingests into the estimator's store.
"""
