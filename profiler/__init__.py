"""profiler: short PyTorch probes, the running-mode recorder and bandwidth calibration (Hops §3.2, §3.5).

Produces measurement records (JSON files) that the engine ingests into the estimator's store.

- :mod:`profiler.probe` — ``python -m profiler.probe``: profiling mode, one :class:`~profiler.records.ProbeResult`.
- :mod:`profiler.zoo` — built-in models (ResNet-18/-50, VGG-11, MobileNetV2, ViT, BERT, GPT-2), sizes tiny/default/full.
- :mod:`profiler.job` — :class:`~profiler.job.ProbeJob` and user entrypoints ``pkg.module:build``.
- :mod:`profiler.pattern` — which of eq. 1's two loop patterns a job follows.
- :mod:`profiler.runtime` — :class:`~profiler.runtime.Recorder`, the running-mode lines in a training loop.
- :mod:`profiler.calibrate` — all-reduce bandwidth (B_link, B_net), behind ``hops-slurm calibrate``.
- :mod:`profiler.ingest` — records -> store rows (the engine calls it; it is the store's only writer).
- :mod:`profiler.signature` — :func:`~profiler.signature.job_signature`, the store's job key.
- :mod:`profiler.ddp_run` — a real local DDP run, the benchmark's ground truth.
- :mod:`profiler.examples` — two example user jobs, one per loop pattern.
"""
