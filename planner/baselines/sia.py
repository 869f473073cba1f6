"""Sia (Jayaram Subramanya et al., SOSP '23) as a baseline policy: goodput^p ILP over (pool, nodes, GPUs).

Data flow: called by the simulator (or engine) once per round with every active job. For each job the
policy builds Sia's config space — a config is (GPU type, number of nodes, GPUs) in one *pool*, not a
placement — evaluates each config's throughput on a representative set of nodes of the pool (Sia is
type-level: it cannot see per-server differences), normalises it per job, and solves one ILP
(python-mip, CBC, relative gap 1e-4 as in Sia's artifact):

    minimise  Σ_j w_j · [ Σ_c X_jc · goodput_norm_jc ** p  +  λ_n · (1 − Σ_c X_jc) ]
    s.t.      Σ_c X_jc <= 1 for every job,   Σ_j Σ_c X_jc · gpus_c <= free GPUs of the pool of c,

with p = −0.5 and λ_n = 1.1 (Sia's defaults; ../shared/papers/sia-notes.md). With w_j = 1 this is
Sia's objective exactly; the weight multiplies both terms so a larger weight makes leaving the job out
costlier (our reading of how a queue priority enters; the Hops paper does not spell it out).

**Pools.** Sia models a cluster as GPU types whose nodes all have the same size (its artifact's
"clusters": 6 nodes of 4 T4, 3 of 8 RTX, ...; configs and capacities are per such group). A real fleet
mixes node sizes within a type (Alibaba's: V100 nodes of 1, 4 and 8 GPUs), so here Sia's group is a pool,
the nodes of one GPU type with one node size (:func:`type_pools`); on a cluster with uniform nodes per
type the pools are the types. A config's throughput is looked up on the pool's first nodes
(:func:`pool_config`), and the capacity rows are per pool.

**Configs** (see ``job_configs``):
- ``sia``, a job that accepts several GPU counts: Sia's config space for adaptive jobs — within one node,
  powers of two up to the node size; beyond one node, whole nodes only, capped by the pool's nodes —
  restricted to the counts the job accepts; goodput normalised by the job's minimum over its configs
  (so its smallest config is 1), clipped at 3000.
- ``sia``, a rigid job (one accepted count r): Sia's rigid jobs (the artifact's ``category == "rigid"``):
  r GPUs on ceil(r / node size) nodes in every pool with r GPUs, whether or not r is in the config
  space; goodput scaled so that its slowest config is r (the artifact: "slowest cluster has goodput =
  ngpus"; it scales the types' one-GPU speed ratios, here the configs' own throughputs, so that pools of
  one type with different node sizes differ by how the job spreads).
- ``sia-lr``: the Hops paper's setup (§4 "Baseline Settings"): configurations generated for each
  requirement of a job (r GPUs on ceil(r / node size) nodes), normalised as Sia's adaptive jobs, and the
  LR priority as weight w_j = (wait/age + bias)^λ (Hops eq. 8 and 11).

When every job's best config (its most negative term) fits the free GPUs of each pool together, the
capacity rows do not bind and that choice is the optimum: it is taken without building the model
(:func:`_unconstrained`; on a lightly loaded cluster most rounds, at no change to the plan).

Then the placement step (:mod:`planner.baselines.sia_place`, Sia's placer): unchanged configs keep their
nodes, the others are placed in decreasing GPU count, and a job that does not fit evicts single-node
jobs as Sia's placer does; one that still does not fit waits for the next round (diagnostics
``unplaced``; ``evicted`` lists the jobs moved to make room).

Left out: Sia's restart penalty λ_a (jobs carry no per-model restart times here) and its goodput
model's statistical efficiency (jobs here train with fixed batch sizes, so goodput = throughput).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import mip

from planner.baselines.common import lr_weights, solver_weights
from planner.baselines.gavel import SolverError
from planner.baselines.sia_place import place
from planner.eligible import confine
from planner.signatures import quiet_stdout
from planner.views import ClusterView, Config, JobView, NodeView, Plan, Policy, freeze_config

log = logging.getLogger(__name__)

#: a pool: (GPU type, GPUs per node), Sia's uniform group of nodes
Pool = tuple[str, int]


@dataclass(frozen=True, order=True)
class SiaConfig:
    """One Sia configuration: GPU type, number of nodes, total GPUs, and the node size of its pool."""

    gpu_type: str
    nodes: int
    gpus: int
    node_gpus: int = 0

    @property
    def pool(self) -> Pool:
        return (self.gpu_type, self.node_gpus)


def sia_config_space(node_gpus: int, num_nodes: int) -> list[tuple[int, int]]:
    """Sia's reduced config space for one pool as (nodes, GPUs) pairs (sia-notes.md).

    Within one node: powers of two up to the node size (and the node size itself); beyond one node:
    whole nodes only, (2, 2·node_gpus) … (num_nodes, num_nodes·node_gpus). 8-GPU nodes ×8 give 11
    configs up to (8, 64); 4-GPU nodes ×16 give 18 configs up to (16, 64).
    """
    if node_gpus <= 0 or num_nodes <= 0:
        return []
    single = []
    g = 1
    while g < node_gpus:
        single.append((1, g))
        g *= 2
    single.append((1, node_gpus))
    return single + [(k, k * node_gpus) for k in range(2, num_nodes + 1)]


def requirement_config_space(requirements: tuple[int, ...], node_gpus: int, num_nodes: int) -> list[tuple[int, int]]:
    """One config per requirement r, on ceil(r / node_gpus) nodes (if the pool has that many): the Hops
    paper's configs for Sia, and Sia's own for a rigid job (one requirement)."""
    out = []
    for r in requirements:
        n = math.ceil(r / node_gpus)
        if n <= num_nodes:
            out.append((n, r))
    return out


def type_pools(cluster: ClusterView) -> dict[Pool, tuple[NodeView, ...]]:
    """The view's pools (see the module docstring): per GPU type, per node size (largest first), the
    nodes in cluster order; computed once per view."""
    def make() -> dict[Pool, tuple[NodeView, ...]]:
        pools: dict[Pool, tuple[NodeView, ...]] = {}
        for t in cluster.gpu_types:
            nodes = cluster.nodes_of_type(t)
            for size in sorted({n.total_gpus for n in nodes}, reverse=True):
                pools[(t, size)] = tuple(n for n in nodes if n.total_gpus == size)
        return pools
    return cluster._derived("sia_pools", make)


def pool_config(nodes: tuple[NodeView, ...], n_nodes: int, gpus: int) -> Config | None:
    """The stand-in config of ``gpus`` GPUs on ``n_nodes`` nodes of a pool whose throughput Sia uses:
    the pool's first ``n_nodes`` nodes, the GPUs spread as evenly as possible; None when it has fewer."""
    if gpus <= 0 or n_nodes <= 0 or n_nodes > len(nodes) or n_nodes > gpus:
        return None
    base, extra = divmod(gpus, n_nodes)
    config = {}
    for i, n in enumerate(nodes[:n_nodes]):
        want = base + (1 if i < extra else 0)
        if want > n.total_gpus:
            return None
        config[n.name] = want
    return freeze_config(config)


def is_rigid(job: JobView, per_requirement: bool) -> bool:
    """Whether ``sia`` treats ``job`` as one of Sia's rigid jobs (one accepted count; never in ``sia-lr``)."""
    return not per_requirement and len(job.requirements) == 1


def job_configs(cluster: ClusterView, job: JobView, per_requirement: bool) -> list[SiaConfig]:
    """The configs Sia considers for ``job`` (see the module docstring for both variants)."""
    out = []
    accepted = set(job.requirements)
    for (t, node_gpus), nodes in type_pools(cluster).items():
        if per_requirement or is_rigid(job, per_requirement):
            pairs = requirement_config_space(job.requirements, node_gpus, len(nodes))
        else:
            pairs = [(n, g) for n, g in sia_config_space(node_gpus, len(nodes)) if g in accepted]
        out.extend(SiaConfig(t, n, g, node_gpus) for n, g in pairs)
    return out


@dataclass
class SiaPolicy(Policy):
    """Sia's goodput ILP plus placement (see the module docstring).

    Diagnostics keys: ``objective`` (ILP value), ``status`` (solver status), ``chosen`` (job ->
    (type, nodes, GPUs, GPUs per node of the pool)), ``unplaced`` (jobs chosen by the ILP that found no
    nodes), ``evicted`` (running jobs moved to make room), ``num_configs``.
    """

    p: float = -0.5
    lambda_n: float = 1.1
    goodput_clip: float = 3000.0
    per_requirement: bool = False
    lr_weighted: bool = False
    lr_exponent: float = 1.0
    max_gap: float = 1e-4
    max_seconds: float = 60.0
    name: str = "sia"
    supports_fragment_plans: bool = False

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        if fragment:
            return Plan({j.job_id: None for j in jobs}, {"fragment": "not supported by sia"})
        if self.lr_weighted:
            weights = solver_weights(lr_weights(jobs, self.lr_exponent))
        else:
            weights = {j.job_id: 1.0 for j in jobs}
        free_pool = {pool: sum(n.free_gpus for n in nodes) for pool, nodes in type_pools(cluster).items()}
        # each job's configs with their objective coefficient w·(g^p − λ_n) (the constant Σ w·λ_n is added
        # back for reporting)
        offers: dict[str, list[tuple[SiaConfig, float]]] = {}
        for job in jobs:
            goodput = {}
            view = confine(cluster, job)  # only its allowed nodes (planner.eligible)
            pools = type_pools(view)
            for c in job_configs(view, job, self.per_requirement):
                if c.gpus > free_pool[c.pool]:
                    continue
                rep = pool_config(pools[c.pool], c.nodes, c.gpus)
                thr = job.throughput(rep) if rep is not None else 0.0
                if thr > 0:
                    goodput[c] = thr
            if goodput:
                low = min(goodput.values())
                scale = job.requirements[0] if is_rigid(job, self.per_requirement) else 1
                offers[job.job_id] = [
                    (c, weights[job.job_id] * (min(scale * thr / low, self.goodput_clip) ** self.p - self.lambda_n))
                    for c, thr in sorted(goodput.items())]
        n_configs = sum(len(o) for o in offers.values())
        objective = sum(self.lambda_n * weights[j.job_id] for j in jobs)
        status = mip.OptimizationStatus.OPTIMAL
        current = {j.job_id: c for j in jobs if j.current and (c := _config_of(cluster, j.current)) is not None}
        chosen = _unconstrained(offers, free_pool, current)
        if chosen is not None:  # every job's own best config fits: that is the optimum, no solver needed
            objective += sum(coef for jid, c in chosen.items() for c2, coef in offers[jid] if c2 == c)
        else:
            chosen, status, value = self._solve(offers, free_pool, n_configs)
            objective += value
        by_id = {j.job_id: j for j in jobs}
        assignments, unplaced, evicted = place(
            cluster, by_id, {jid: (c.nodes, c.gpus) for jid, c in chosen.items()},
            pool_nodes=lambda jid: type_pools(confine(cluster, by_id[jid])).get(chosen[jid].pool, ()),
            keeps=lambda jid, cur: current.get(jid) == chosen[jid])
        if unplaced:
            log.debug("sia: %d jobs chosen by the ILP found no nodes: %s", len(unplaced), unplaced)
        diagnostics: dict[str, object] = {
            "objective": objective,
            "status": status.name,
            "chosen": {jid: (c.gpu_type, c.nodes, c.gpus, c.node_gpus) for jid, c in chosen.items()},
            "unplaced": unplaced,
            "evicted": evicted,
            "num_configs": n_configs,
        }
        return Plan(assignments, diagnostics)

    def _solve(self, offers: dict[str, list[tuple[SiaConfig, float]]], free_pool: dict[Pool, int],
               n_configs: int) -> tuple[dict[str, SiaConfig], mip.OptimizationStatus, float]:
        """The ILP of the module docstring over ``offers``: the chosen config per job, the status, the
        objective without its constant."""
        model = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
        model.verbose = 0
        model.max_mip_gap = self.max_gap
        terms = []
        choice: dict[str, list[tuple[SiaConfig, mip.Var]]] = {}
        per_pool: dict[Pool, list[tuple[int, mip.Var]]] = {pool: [] for pool in free_pool}
        for jid, offered in offers.items():
            options = []
            for c, coef in offered:
                v = model.add_var(var_type=mip.BINARY)
                terms.append(coef * v)
                options.append((c, v))
                per_pool[c.pool].append((c.gpus, v))
            model += mip.xsum(v for _, v in options) <= 1
            choice[jid] = options
        for pool, col in per_pool.items():
            if col:
                model += mip.xsum(g * v for g, v in col) <= free_pool[pool]
        chosen: dict[str, SiaConfig] = {}
        if not terms:
            return chosen, mip.OptimizationStatus.OPTIMAL, 0.0
        model.objective = mip.xsum(terms)
        with quiet_stdout(True):  # CBC/Clp log to the C stdout whatever the verbosity
            status = model.optimize(max_seconds=self.max_seconds)
        if status not in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE):
            raise SolverError(f"sia: ILP over {n_configs} configs returned {status.name}; raise max_seconds")
        for jid, options in choice.items():
            for c, v in options:
                if (v.x or 0.0) > 0.5:
                    chosen[jid] = c
        return chosen, status, float(model.objective_value)


def _config_of(cluster: ClusterView, config: Config) -> SiaConfig | None:
    """The Sia config a running job's placement is (its first node's pool), or None when its nodes are
    not all of one pool or not in the view."""
    try:
        nodes = [cluster.node(name) for name in config]
    except KeyError:
        return None
    first = nodes[0]
    if any((n.gpu_type, n.total_gpus) != (first.gpu_type, first.total_gpus) for n in nodes):
        return None
    return SiaConfig(first.gpu_type, len(nodes), sum(config.values()), first.total_gpus)


def _unconstrained(offers: dict[str, list[tuple[SiaConfig, float]]], free_pool: dict[Pool, int],
                   current: dict[str, SiaConfig] | None = None) -> dict[str, SiaConfig] | None:
    """The ILP's optimum when its capacity rows do not bind: each job on its own best config (the most
    negative coefficient; among equals the job's ``current`` config, else the first; none when no
    coefficient is negative), if these fit the free GPUs of every pool together; else None (the solver
    decides). A best config whose pool is full gives way to an equal one in another pool of the same
    GPU type (a one-GPU job on any node size of a mixed fleet). Exact: the objective is a sum of one
    term per job, each at its minimum."""
    chosen: dict[str, SiaConfig] = {}
    used: dict[Pool, int] = {}
    now = current or {}
    for jid, offered in offers.items():
        best, coef = min(offered, key=lambda ck: (ck[1], ck[0] != now.get(jid)))
        if coef >= 0:
            continue
        if used.get(best.pool, 0) + best.gpus > free_pool.get(best.pool, 0):
            best = next((c for c, k in offered if k == coef and c.gpu_type == best.gpu_type and c.pool != best.pool
                         and used.get(c.pool, 0) + c.gpus <= free_pool.get(c.pool, 0)), best)
        chosen[jid] = best
        used[best.pool] = used.get(best.pool, 0) + best.gpus
    return chosen if all(g <= free_pool.get(pool, 0) for pool, g in used.items()) else None
