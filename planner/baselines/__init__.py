"""The baseline policies the simulator runs Hops against.

Data flow: :func:`planner.policies.make_policy` builds them by name for the simulator and the
benchmarks, which call ``plan`` each round (and for fragment plans where the policy supports them)
exactly as they call the Hops planner; each returns node-exact placements (:class:`planner.views.Plan`).

- :class:`GavelPolicy` (``gavel``; ``gavel-lr`` weighted by the Hops latency-ratio priority, as the Hops
  paper ran Gavel): Gavel's heterogeneity-aware max-min fairness LP and round mechanism, rigid median
  request.
- :class:`SiaPolicy` (``sia``; ``sia-lr``: configs per requirement and LR weights, as the Hops paper ran
  Sia): Sia's goodput^p ILP over its own (type, nodes, GPUs) config space within the job's requests.
- :class:`ThemisPolicy` (``themis``): finish-time fairness with 10-minute leases and the
  partial-allocation auction, f = 0.8.
- :class:`SlurmBackfillPolicy` (``slurm-backfill``): Slurm's status quo: age priority, EASY backfill,
  rigid largest request, no preemption, type-blind placement.
- :class:`SlurmMultifactorPolicy` (``slurm-multifactor``): the same with Slurm's multifactor priority
  (age, fair share with PriorityDecayHalfLife, job size, partition, QOS), what sites configure.
- :class:`FifoGreedy` (``fifo-greedy``): first come, first served, never preempts.
"""

from __future__ import annotations

from planner.baselines.fifo_greedy import FifoGreedy
from planner.baselines.gavel import GavelPolicy, max_min_fairness_allocation
from planner.baselines.sia import SiaPolicy, sia_config_space
from planner.baselines.slurm_backfill import SlurmBackfillPolicy
from planner.baselines.slurm_multifactor import SlurmMultifactorPolicy
from planner.baselines.themis import ThemisPolicy

__all__ = [
    "FifoGreedy",
    "GavelPolicy",
    "SiaPolicy",
    "SlurmBackfillPolicy",
    "SlurmMultifactorPolicy",
    "ThemisPolicy",
    "max_min_fairness_allocation",
    "sia_config_space",
]
