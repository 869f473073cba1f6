"""One planning on the live engine: :func:`hops_slurm.backend.plan_once` (the same step the simulator's
loop runs), re-exported here for the engine's modules."""

from hops_slurm.backend import Planning, plan_once

__all__ = ["Planning", "plan_once"]
