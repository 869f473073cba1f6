"""The site's limits around any policy: never plan a job into a state Slurm refuses to start.

Where it sits: between the round loop (:func:`hops_slurm.core.interface.plan_once`) and a
:class:`planner.views.Policy`. The backend turns what Slurm says about associations, QOS and
partitions (live: :mod:`hops_slurm.slurm.assoc`; in simulation: none unless a test sets them) into a
:class:`Limits`: pure planner input, caps over groups of jobs ("these jobs together hold at most N
GPUs", or "at most N of them run") and a largest GPU count per job. :func:`governed_plan` then

1. trims each waiting job's requirement set to the counts its caps still allow (a 16-GPU choice of a
   job whose account may hold 8 more is dropped; ``MaxTRESPerJob`` likewise; a count no config of the
   job's :class:`Shape` holds, e.g. more than ``MaxNodes`` nodes give), blocks a waiting job that no
   count fits, or one of a group that runs as many jobs as it may, or one Slurm refuses whatever its
   placement (a time limit over the partition's ``MaxTime``), with Slurm's reason name; a job with a
   shape rates the configs outside it at throughput 0 (a policy that rates configs never picks one); a
   per-GPU-type cap (:attr:`Cap.nodes`: only GPUs on that type's nodes count) does not trim counts but
   bounds, as a :class:`Bound` of the job's shape, how many of its GPUs may be on those nodes, and a
   ``MinNodes`` trims counts too small to span that many nodes;
2. asks the policy for its plan over the jobs left;
3. checks every shape and cap on the plan: a waiting job placed in a config outside its shape is cut
   (``PartitionNodeLimit``, ``QOSMaxGRESPerNode``); where the placed jobs of a group hold more than the cap allows, the
   group's jobs are kept in the plan's own priority order (running jobs first and never cut: Slurm
   already runs them) and the rest are blocked by that cap; the policy then plans again without
   them so the GPUs they would have taken go to someone else (at most :data:`MAX_PASSES` plannings; the
   last one is cut to fit), so the plan that leaves here fits every cap.

Each step meets a job's own caps only (:func:`caps_by_job`; a cap walks its own members), so a planning
costs the jobs plus the caps' members, never jobs times caps (docs/governance.md, "Scale").

Blocked jobs are in the plan's diagnostics under ``limited`` (job id -> reason, e.g.
``AssocGrpGRES: account=physics gres/gpu=8``): ``hops-slurm queue`` shows it. Nothing here reads Slurm
or a clock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from planner.views import ClusterView, Config, JobView, Plan, Policy, config_gpus

#: plannings per governed planning at most (the first, then again without the jobs a cap cut)
MAX_PASSES = 3

UNITS = ("gpus", "jobs")


@dataclass(frozen=True)
class Cap:
    """A limit over a group of jobs: their placed GPUs (``unit="gpus"``) or their number of running
    jobs (``unit="jobs"``) together at most ``limit``. ``held`` is what jobs of the group hold now
    (job id -> GPUs; non-Hops jobs included): the part held by jobs this planning does not place
    counts against the cap as it is. ``nodes``: only GPUs on these nodes count (a per-GPU-type limit,
    ``gres/gpu:a100=N``: the nodes of that type); None: every GPU."""

    reason: str  # Slurm's reason name, e.g. "AssocGrpGRES", "QOSMaxGRESPerUser", "AssocMaxJobsLimit"
    scope: str  # what it limits, for people: "account=physics gres/gpu=8"
    jobs: frozenset[str]
    limit: int
    unit: str = "gpus"
    held: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    nodes: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"cap {self.scope}: unit must be one of {', '.join(UNITS)}, got {self.unit!r}")
        if self.limit < 0:
            raise ValueError(f"cap {self.scope}: limit must be 0 or more, got {self.limit}")
        if self.nodes is not None and self.unit != "gpus":
            raise ValueError(f"cap {self.scope}: only a GPU cap counts the GPUs of some nodes")

    @property
    def label(self) -> str:
        return f"{self.reason}: {self.scope}"

    def amount(self, config: Config | None) -> int:
        """What one job in ``config`` counts against the cap (0 when not placed, or none on its nodes)."""
        if not config:
            return 0
        if self.unit == "jobs":
            return 1
        if self.nodes is None:
            return config_gpus(config)
        return sum(g for n, g in config.items() if n in self.nodes and g > 0)

    def outside(self, planned: set[str]) -> int:
        """What the group holds that this planning does not place (jobs outside it)."""
        return sum(g if self.unit == "gpus" else 1 for j, g in self.held.items() if j not in planned and g > 0)


@dataclass(frozen=True)
class Bound:
    """At most ``limit`` GPUs of one job on ``nodes``: together (a per-job per-GPU-type limit,
    ``MaxTRES=gres/gpu:a100=2``), or on each of them with ``per_node`` (``MaxTRESPerNode`` of a type)."""

    nodes: frozenset[str]
    limit: int
    label: str
    per_node: bool = False

    def broken(self, config: Config) -> bool:
        if self.per_node:
            return any(g > self.limit for n, g in config.items() if n in self.nodes)
        return sum(g for n, g in config.items() if n in self.nodes and g > 0) > self.limit


@dataclass(frozen=True)
class Shape:
    """The configs a job may start in: at most ``max_nodes`` nodes (a partition's ``MaxNodes``), at least
    ``min_nodes`` (its ``MinNodes``), at most ``max_per_node`` GPUs on any one of them (a QOS's
    ``MaxTRESPerNode``), and within each of ``bounds`` (per-GPU-type limits); each limit with its label."""

    max_nodes: int | None = None
    nodes_label: str = ""
    max_per_node: int | None = None
    per_node_label: str = ""
    min_nodes: int | None = None
    min_label: str = ""
    bounds: tuple[Bound, ...] = ()

    def refusal(self, config: Config) -> str:
        """The label of the limit ``config`` breaks; "" when it fits."""
        used = sum(1 for g in config.values() if g > 0)
        if self.max_nodes is not None and used > self.max_nodes:
            return self.nodes_label
        if self.min_nodes is not None and used < self.min_nodes:
            return self.min_label
        if self.max_per_node is not None and any(g > self.max_per_node for g in config.values()):
            return self.per_node_label
        for bound in self.bounds:
            if bound.broken(config):
                return bound.label
        return ""

    def most_gpus(self, cluster: ClusterView) -> int | None:
        """The most GPUs a config of this shape can hold on ``cluster``; None: no bound from the shape."""
        if self.max_nodes is None:
            return None
        sizes = sorted((min(n.total_gpus, self.max_per_node) if self.max_per_node is not None else n.total_gpus
                        for n in cluster.nodes), reverse=True)
        return sum(sizes[:self.max_nodes])


@dataclass(frozen=True)
class Limits:
    """Every limit of one planning: group caps, a largest GPU count per job, the shape of the configs a
    job may start in (job id -> :class:`Shape`), and jobs Slurm will not start whatever their placement
    (job id -> reason)."""

    caps: tuple[Cap, ...] = ()
    per_job: Mapping[str, tuple[int, str]] = field(default_factory=lambda: MappingProxyType({}))
    blocked: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    shapes: Mapping[str, Shape] = field(default_factory=lambda: MappingProxyType({}))

    def __bool__(self) -> bool:
        return bool(self.caps or self.per_job or self.blocked or self.shapes)


NO_LIMITS = Limits()


def _order(plan: Plan, jobs: Sequence[JobView]) -> list[JobView]:
    """The plan's own priority order (running jobs first), else submission order."""
    prios = plan.diagnostics.get("priorities")
    prio: dict[str, float] = {}
    if isinstance(prios, Mapping):
        for k, v in prios.items():
            if isinstance(v, (int, float)):
                prio[str(k)] = float(v)
    return sorted(jobs, key=lambda j: (j.current is None, -prio.get(j.job_id, 0.0), j.submit_time, j.job_id))


def _shaped(job: JobView, shape: Shape) -> JobView:
    """``job`` whose throughput (and exploration value) is 0.0 in a config its shape forbids: a policy that
    rates configs by throughput never chooses one (the plan check still cuts one that a policy chose)."""
    rate, explore = job.throughput, job.explore

    def throughput(config: Config) -> float:
        return 0.0 if shape.refusal(config) else rate(config)

    def exploring(config: Config) -> float:
        return 0.0 if shape.refusal(config) or explore is None else explore(config)

    return _with(job, throughput=throughput, explore=exploring if explore is not None else None)


def _with(job: JobView, **changes: object) -> JobView:
    """``job`` with ``changes``: a copy of its fields (``dataclasses.replace`` would re-run the checks of
    fields that do not change, for every job of every planning; the requirements it is given are a subset
    of ones already checked)."""
    new = object.__new__(JobView)
    new.__dict__.update(job.__dict__)
    new.__dict__.update(changes)
    return new


def caps_by_job(caps: Sequence[Cap]) -> dict[str, list[Cap]]:
    """Job id -> the caps it is in (built once per step: each job meets only its own caps, so a step
    costs the jobs plus the caps' members, never jobs times caps)."""
    out: dict[str, list[Cap]] = {}
    for cap in caps:
        for job_id in cap.jobs:
            out.setdefault(job_id, []).append(cap)
    return out


class _Sizes:
    """What one trim asks of the cluster's shape, each answer computed once: GPUs outside a set of nodes,
    the most GPUs a shape of job may take (no cluster: no bound)."""

    def __init__(self, cluster: ClusterView | None) -> None:
        self.cluster = cluster
        self._outside: dict[frozenset[str], int] = {}
        self._most: dict[tuple[int | None, int | None], int | None] = {}  # once per shape, not per job

    def elsewhere(self, nodes: frozenset[str]) -> int:
        """GPUs on the cluster's nodes outside ``nodes``."""
        if self.cluster is None:
            return 1 << 30
        if nodes not in self._outside:
            self._outside[nodes] = sum(n.total_gpus for n in self.cluster.nodes if n.name not in nodes)
        return self._outside[nodes]

    def most_gpus(self, max_nodes: int | None, max_per_node: int | None) -> int | None:
        if self.cluster is None:
            return None
        if (max_nodes, max_per_node) not in self._most:
            self._most[(max_nodes, max_per_node)] = Shape(max_nodes=max_nodes, max_per_node=max_per_node).most_gpus(self.cluster)
        return self._most[(max_nodes, max_per_node)]


def _shape_counts(job: JobView, limits: Limits, sizes: _Sizes) -> tuple[list[int], str]:
    """The GPU counts of waiting ``job`` its per-job limits and its shape allow, and, when none, why."""
    allowed = list(job.requirements)
    why = ""
    top = limits.per_job.get(job.job_id)
    if top is not None:
        allowed = [r for r in allowed if r <= top[0]]
        why = why or (top[1] if not allowed else "")
    shape = limits.shapes.get(job.job_id)
    if shape is None:
        return allowed, why
    if shape.min_nodes is not None:
        kept = [r for r in allowed if r >= shape.min_nodes]  # each node of a config holds one GPU or more
        why = why or (shape.min_label if allowed and not kept else "")
        allowed = kept
    most = sizes.most_gpus(shape.max_nodes, shape.max_per_node)
    if most is not None:
        kept = [r for r in allowed if r <= most]
        if allowed and not kept:  # named by the limit that makes it too small: the per-node one, or the nodes'
            wide = sizes.most_gpus(shape.max_nodes, None) if shape.max_per_node else None
            why = why or (shape.per_node_label if wide is not None and allowed[0] <= wide else shape.nodes_label)
        allowed = kept
    for bound in shape.bounds:  # a per-job per-type limit: the rest elsewhere
        most = bound.limit + sizes.elsewhere(bound.nodes) if not bound.per_node else None
        if most is not None and allowed and allowed[-1] > most:
            kept = [r for r in allowed if r <= most]
            why = why or (bound.label if not kept else "")
            allowed = kept
    return allowed, why


def _cap_counts(allowed: list[int], why: str, caps: Sequence[Cap], room: Mapping[int, int],
                sizes: _Sizes) -> tuple[list[int], str, list[Bound]]:
    """``allowed`` less what the job's ``caps`` leave room for (``room``: id of a cap -> room left), why
    when nothing is left, and the bounds its per-GPU-type caps put on its shape."""
    typed: list[Bound] = []
    for cap in caps:
        left = room[id(cap)]
        if cap.unit == "jobs":
            if left < 1:
                allowed, why = [], why or cap.label
        elif cap.nodes is not None:  # at most ``left`` on the type's nodes, any number elsewhere
            typed.append(Bound(cap.nodes, max(left, 0), cap.label))
            most = max(left, 0) + sizes.elsewhere(cap.nodes)
            if allowed and allowed[-1] > most:
                kept = [r for r in allowed if r <= most]
                if not kept:
                    why = why or cap.label
                allowed = kept
        elif allowed and allowed[-1] > left:
            kept = [r for r in allowed if r <= left]
            if not kept:
                why = why or cap.label
            allowed = kept
    return allowed, why, typed


def trim(jobs: Sequence[JobView], limits: Limits,
         cluster: ClusterView | None = None) -> tuple[list[JobView], dict[str, str]]:
    """Step 1: waiting jobs with the counts their limits allow; the jobs no count fits (id -> reason). A
    per-GPU-type cap does not trim counts (the job may take other GPUs): it becomes a :class:`Bound` of
    the job's shape for this planning (at most the room left on that type's nodes)."""
    planned = {j.job_id for j in jobs}
    room = {id(c): c.limit - c.outside(planned) for c in limits.caps}
    mine = caps_by_job(limits.caps)
    for job in jobs:  # a per-type cap's room: less what running jobs hold of that type (they mostly stay)
        for cap in mine.get(job.job_id, ()) if job.current else ():
            if cap.nodes is not None:
                room[id(cap)] -= cap.amount(job.current)
    out: list[JobView] = []
    blocked: dict[str, str] = {}
    sizes = _Sizes(cluster)
    typed_shapes: dict[tuple[Shape | None, tuple[Bound, ...]], Shape] = {}  # shapes are shared values
    for job in jobs:
        shape = limits.shapes.get(job.job_id)
        if job.current:  # running: Slurm runs it; the plan check (step 3) keeps the caps; a move stays in shape
            out.append(_shaped(job, shape) if shape is not None else job)
            continue
        if job.job_id in limits.blocked:
            blocked[job.job_id] = limits.blocked[job.job_id]
            continue
        allowed, why = _shape_counts(job, limits, sizes)
        allowed, why, typed = _cap_counts(allowed, why, mine.get(job.job_id, ()), room, sizes)
        if not allowed:
            blocked[job.job_id] = why or "limit"
            continue
        if tuple(allowed) != job.requirements:
            job = _with(job, requirements=tuple(allowed))
        if typed:
            key = (shape, tuple(typed))
            if key not in typed_shapes:
                typed_shapes[key] = dataclasses.replace(shape or Shape(), bounds=(shape.bounds if shape else ()) + tuple(typed))
            shape = typed_shapes[key]
        out.append(_shaped(job, shape) if shape is not None else job)
    return out, blocked


def over_caps(plan: Plan, jobs: Sequence[JobView], limits: Limits) -> dict[str, str]:
    """Step 3: the placed jobs the caps cut from ``plan`` (id -> the cap's label); {} when it fits. Each
    cap walks its own placed members in the plan's order: linear in the jobs plus the caps' members."""
    planned = {j.job_id for j in jobs}
    placed = plan.placed()
    order = _order(plan, jobs)
    rank = {job.job_id: i for i, job in enumerate(order)}
    running = {job.job_id for job in order if job.current}
    cut: dict[str, str] = {}
    for job in order:  # a config of a shape Slurm refuses (never a running job's: Slurm runs it)
        shape = limits.shapes.get(job.job_id)
        why = shape.refusal(placed[job.job_id]) if shape is not None and job.job_id in placed and not job.current else ""
        if why:
            cut[job.job_id] = why
    ours = placed.keys() & rank.keys()  # placed jobs of this planning
    for cap in limits.caps:
        left = cap.limit - cap.outside(planned)
        inside = cap.jobs & ours
        if cut:
            inside -= cut.keys()
        if (len(inside) if cap.unit == "jobs" else sum(cap.amount(placed[i]) for i in inside)) <= left:
            continue  # the cap holds (most caps): nothing to order
        members = sorted(inside, key=rank.__getitem__)
        for job_id in members:
            if job_id in cut:
                continue
            need = cap.amount(placed[job_id])
            if need <= left or job_id in running:  # a running job is Slurm's already: counted, never cut
                left -= need
            else:
                cut[job_id] = cap.label
    return cut


def with_fair_share(jobs: tuple[JobView, ...], factors: Mapping[str, float]) -> tuple[JobView, ...]:
    """``jobs`` with each one's fair-share factor (job id -> [0, 1]; :mod:`planner.fairshare`) set."""
    return tuple(dataclasses.replace(j, fair_share=min(max(float(factors[j.job_id]), 0.0), 1.0))
                 if j.job_id in factors and factors[j.job_id] != j.fair_share else j for j in jobs)


def governed_plan(policy: Policy, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *,
                  fragment: bool, limits: Limits | None) -> Plan:
    """The policy's plan within ``limits`` (the module docstring); the policy's own plan when none."""
    if not limits:
        return policy.plan(cluster, jobs, now, fragment=fragment)
    # a fragment plan's running jobs are context (they hold what they hold: counted outside the planning)
    context = tuple(j for j in jobs if fragment and j.current)
    jobs = tuple(j for j in jobs if not (fragment and j.current))
    kept, limited = trim(jobs, limits, cluster)
    plan = Plan({}, {})
    for attempt in range(MAX_PASSES):
        plan = policy.plan(cluster, context + tuple(kept), now, fragment=fragment) if kept else Plan({}, {})
        cut = over_caps(plan, kept, limits)
        if not cut:
            break
        limited.update(cut)
        if attempt == MAX_PASSES - 1:  # the last planning: cut to fit
            for job_id in cut:
                plan.assignments[job_id] = None
            break
        kept = [j for j in kept if j.job_id not in cut]
    for job in jobs:
        plan.assignments.setdefault(job.job_id, None)
    plan.diagnostics["limited"] = dict(limited)
    return plan


__all__ = ["Bound", "Cap", "Shape", "caps_by_job", "Limits", "NO_LIMITS", "MAX_PASSES", "governed_plan", "trim", "over_caps", "with_fair_share"]
