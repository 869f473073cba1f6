"""Views the planner, the baselines and the simulator share: the contract between them and the engine.

The engine (live, from Slurm) and the simulator (virtual) build these plain, immutable views each
round; policies read them and return a :class:`Plan`. Nothing here touches Slurm or the wall clock:
times are seconds on whatever clock the caller uses, passed in explicitly (``now``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from planner.stages import StageTimer

#: A placement: node name -> number of GPUs on that node (all nodes of one job, one GPU type or mixed).
Config = Mapping[str, int]

#: Throughput of one job in one config, in samples/s for the whole job (0.0 = cannot run there).
ThroughputFn = Callable[[Config], float]


def freeze_config(config: Mapping[str, int]) -> Config:
    """A read-only copy of ``config`` with zero entries removed (equal configs compare equal)."""
    return MappingProxyType({node: int(g) for node, g in sorted(config.items()) if g > 0})


def config_gpus(config: Config) -> int:
    return sum(config.values())


@dataclass(frozen=True)
class NodeView:
    """One server as the planner sees it this round."""

    name: str
    gpu_type: str  # e.g. "v100"; what type-level schedulers see
    server_class: str  # entity class within the type, e.g. "v100-dgx"; what Hops can also learn
    total_gpus: int
    free_gpus: int  # GPUs not held by jobs outside this planning (running jobs being re-planned count as free)

    def __post_init__(self) -> None:
        if not 0 <= self.free_gpus <= self.total_gpus:
            raise ValueError(f"node {self.name}: free GPUs {self.free_gpus} outside 0..{self.total_gpus}")


@dataclass(frozen=True)
class ClusterView:
    """The nodes available to the policy, in a stable order (node order = adjacency for configs)."""

    nodes: tuple[NodeView, ...]

    # the view is immutable: what is derived from its nodes is computed once per view (the planner asks
    # for it per job; kept in the instance's __dict__, outside the fields that equality and repr see)
    def _derived(self, key: str, make: Callable[[], object]) -> Any:
        memo = self.__dict__.setdefault("_derived_values", {})
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def node(self, name: str) -> NodeView:
        by_name: dict[str, NodeView] = self._derived("by_name", lambda: {n.name: n for n in self.nodes})
        if name not in by_name:
            raise KeyError(name)
        return by_name[name]

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return self._derived("gpu_types", lambda: tuple(dict.fromkeys(n.gpu_type for n in self.nodes)))

    def nodes_of_type(self, gpu_type: str) -> tuple[NodeView, ...]:
        return self._derived(f"type:{gpu_type}", lambda: tuple(n for n in self.nodes if n.gpu_type == gpu_type))

    def largest_node(self, gpu_type: str) -> int:
        """The most GPUs one node of ``gpu_type`` has (0 when the view has none of that type)."""
        return self._derived(f"largest:{gpu_type}", lambda: max((n.total_gpus for n in self.nodes_of_type(gpu_type)),
                                                                default=0))

    @property
    def total_gpus(self) -> int:
        return self._derived("total_gpus", lambda: sum(n.total_gpus for n in self.nodes))

    @property
    def free_gpus(self) -> int:
        return self._derived("free_gpus", lambda: sum(n.free_gpus for n in self.nodes))


@dataclass(frozen=True)
class JobView:
    """One active job (pending or running) as the policy sees it this round.

    ``requirements`` is the user's acceptable GPU counts (ascending, distinct). ``throughput`` answers
    for any config (estimated by the estimator live; ground truth or estimate in simulation).
    """

    job_id: str
    requirements: tuple[int, ...]
    submit_time: float
    wait: float  # time queued (not running) since submission, summed over preemptions
    age: float  # expected run time without waiting (eq. 9), refined as throughput is measured
    sensitivity: float  # placement sensitivity (eq. 10)
    throughput: ThroughputFn = field(compare=False, repr=False)
    total_samples: float = 0.0
    done_samples: float = 0.0
    attained_gpu_seconds: float = 0.0  # GPU-seconds received so far (LAS)
    run_time: float = 0.0  # wall time spent running so far
    current: Config | None = None  # the config it runs in now, None if pending
    user: str = ""
    # what moving it costs (docs/design.md, "Moves that pay"); 0 = unknown or free
    restart_cost: float = 0.0  # seconds a requeue and restart cost it: notice + start to first progress, measured per model
    unsaved: float = 0.0  # seconds of its work a requeue now would lose (since its last checkpoint; 0 if it checkpoints on notice)
    placed_for: float = 0.0  # seconds it has run in its current config since it (re)started there; 0 if pending
    preemptions: int = 0  # times a round has preempted or moved it so far
    measured: bool = True  # False: no throughput data yet (probe in place: the fallback throughput until its records arrive)
    #: config -> an optimistic samples/s where no record measured the job yet, 0.0 where every node is
    #: measured (nothing to learn); None: no exploration (estimator.explore, planner.explore)
    explore: ThroughputFn | None = field(default=None, compare=False, repr=False)
    #: the owner's fair-share standing in [0, 1] (planner.fairshare: 1 = used nothing of late, 0.5 = their
    #: share); the queue priority adds ``fairshare_weight`` times it
    fair_share: float = 1.0
    #: seconds of its time limit (Slurm's ``--time``), when known: what Slurm's backfill plans with
    #: (planner.baselines.slurm_backfill); None: unknown (the backfill baseline uses its ``age``)
    time_limit: float | None = None
    #: the nodes it may be placed on (the live engine: the nodes of its own Hops partitions); None: every
    #: node of the view. Every policy step sees only these (planner.eligible)
    nodes: frozenset[str] | None = None

    def __post_init__(self) -> None:
        reqs = self.requirements
        if not reqs or any(r <= 0 for r in reqs) or list(reqs) != sorted(set(reqs)):
            raise ValueError(f"job {self.job_id}: requirements must be distinct positive ascending, got {reqs}")

    @property
    def remaining_samples(self) -> float:
        return max(self.total_samples - self.done_samples, 0.0)

    @property
    def reached_samples(self) -> bool:
        """Its processed samples have reached its declaration (it is finishing: never requeue it)."""
        return self.total_samples > 0.0 and self.done_samples >= self.total_samples


@dataclass
class Plan:
    """A policy's answer for one planning: job id -> config (None = not placed this time).

    ``diagnostics`` is free-form per policy (queue order, priorities, window, objective, bound, gap,
    solve time, which plan of the round, fallback used ...); keys are documented by each policy.
    """

    assignments: dict[str, Config | None]
    diagnostics: dict[str, object] = field(default_factory=dict)

    def placed(self) -> dict[str, Config]:
        return {j: c for j, c in self.assignments.items() if c}

    def gpus_used_on(self, node: str) -> int:
        return sum(c.get(node, 0) for c in self.placed().values())


class Policy:
    """What every scheduling policy (hops, the baselines, the ablations) implements.

    ``plan`` is called once at the start of every round (``fragment=False``: every active job, running
    or pending, with running jobs' GPUs counted as free) and, for policies with
    ``supports_fragment_plans``, again inside the round when GPUs fall idle (``fragment=True``: pending
    jobs to place, and nodes' ``free_gpus`` are the idle GPUs; running jobs keep what they have; a policy
    with ``fragment_context`` is handed them too, with ``current`` set, as context only, e.g. for when they
    end: it never places them).
    A running job left out of a round plan's placements (or given another config) is preempted.
    Policies may keep state across calls (rounds received, leases); they never read a clock: a policy
    that plans in named stages (:mod:`planner.stages`) times each with the caller's ``timer`` when one is set.
    """

    name: str = "abstract"
    supports_fragment_plans: bool = False
    fragment_context: bool = False
    timer: StageTimer | None = None

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        raise NotImplementedError
