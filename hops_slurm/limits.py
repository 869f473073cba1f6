"""Limits shared across the code base, so that one surface never accepts what another refuses.

Where it sits: a leaf (imports nothing of ours). :data:`MAX_JOB_GPUS` is the most GPUs one job may
hold anywhere in hops-slurm: the ``#HOPS gpus=`` grammar (:mod:`hops_slurm.directives`, mirrored by
``hooks/hops_directives.lua``), the runtime records a job's recorder writes (:mod:`profiler.records`) and
the rows ``hops-slurm whatif`` replays (:mod:`hops_slurm.whatif.history`). A what-if row of a larger job
is refused on its own line, before the simulator (whose jobs write runtime records) would refuse it.
"""

from __future__ import annotations

#: the most GPUs one job may hold (the submit hook's ``MAX_GPUS`` is the same number)
MAX_JOB_GPUS = 1024

__all__ = ["MAX_JOB_GPUS"]
