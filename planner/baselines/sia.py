"""Sia (Jayaram Subramanya et al., SOSP '23) as a baseline policy: goodput^p ILP over (type, nodes, GPUs).

Data flow: called by the simulator (or engine) once per round with every active job. For each job the
policy builds Sia's config space — a config is (GPU type, number of nodes, GPUs), not a placement —
evaluates each config's throughput on a representative set of nodes of that type (Sia is type-level:
it cannot see per-server differences), normalises per job by the job's minimum over its configs
(clipped at 3000), and solves one ILP (python-mip, CBC, relative gap 1e-4 as in Sia's artifact):

    minimise  Σ_j w_j · [ Σ_c X_jc · goodput_norm_jc ** p  +  λ_n · (1 − Σ_c X_jc) ]
    s.t.      Σ_c X_jc <= 1 for every job,   Σ_j Σ_c X_jc · gpus_c <= free GPUs of the type of c,

with p = −0.5 and λ_n = 1.1 (Sia's defaults; ../shared/papers/sia-notes.md). With w_j = 1 this is
Sia's objective exactly; the weight multiplies both terms so a larger weight makes leaving the job out
costlier (our reading of how a queue priority enters; the Hops paper does not spell it out).

When every job's best config (its most negative term) fits the free GPUs of each type together, the
capacity rows do not bind and that choice is the optimum: it is taken without building the model
(:func:`_unconstrained`; on a lightly loaded cluster most rounds, at no change to the plan).

Then the placement step (Sia's ``alloc_to_placement`` picks nodes after the ILP): a running job whose
chosen config equals its current one keeps its nodes; the others, in decreasing GPU count, go on the
best-fitting single node of the type (one-node configs) or on the type's nodes with the most free GPUs
(multi-node configs). Because the ILP only counted GPUs per type, a job can fail to fit at this step
(fragmentation Sia cannot see); it then waits for the next round (diagnostics ``unplaced``).

Variants (names in :mod:`planner.baselines`):
- ``sia``: Sia's own config space — within one node, powers of two up to the node size; beyond one
  node, whole nodes only, capped by the nodes of the type — restricted to the GPU counts the job
  accepts (its requirement set); w_j = 1.
- ``sia-lr``: the Hops paper's setup (§4 "Baseline Settings"): configurations generated for each
  requirement of a job (r GPUs on ceil(r / node size) nodes), and the LR priority as weight
  w_j = (wait/age + bias)^λ (Hops eq. 8 and 11).

Left out: Sia's restart penalty λ_a (jobs carry no per-model restart times here) and its goodput
model's statistical efficiency (jobs here train with fixed batch sizes, so goodput = throughput).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import mip

from planner.baselines.common import (
    free_by_node,
    lr_weights,
    place_consolidated,
    representative_config,
    solver_weights,
    take,
)
from planner.baselines.gavel import SolverError
from planner.eligible import confine
from planner.signatures import quiet_stdout
from planner.views import ClusterView, Config, JobView, NodeView, Plan, Policy, freeze_config

log = logging.getLogger(__name__)


@dataclass(frozen=True, order=True)
class SiaConfig:
    """One Sia configuration: GPU type, number of nodes, total GPUs."""

    gpu_type: str
    nodes: int
    gpus: int


def sia_config_space(node_gpus: int, num_nodes: int) -> list[tuple[int, int]]:
    """Sia's reduced config space for one GPU type as (nodes, GPUs) pairs (sia-notes.md).

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
    """The Hops paper's Sia configs: one per requirement r, on ceil(r / node_gpus) nodes (if there are enough)."""
    out = []
    for r in requirements:
        n = math.ceil(r / node_gpus)
        if n <= num_nodes:
            out.append((n, r))
    return out


def _type_shape(nodes: tuple[NodeView, ...]) -> tuple[int, int]:
    """(GPUs per node, nodes) of one type; mixed sizes are treated as the largest (Sia assumes uniform)."""
    return max(n.total_gpus for n in nodes), len(nodes)


def job_configs(cluster: ClusterView, job: JobView, per_requirement: bool) -> list[SiaConfig]:
    """The configs Sia considers for ``job`` (see the module docstring for both variants)."""
    out = []
    for t in cluster.gpu_types:
        node_gpus, num_nodes = _type_shape(cluster.nodes_of_type(t))
        if per_requirement:
            pairs = requirement_config_space(job.requirements, node_gpus, num_nodes)
        else:
            accepted = set(job.requirements)
            pairs = [(n, g) for n, g in sia_config_space(node_gpus, num_nodes) if g in accepted]
        out.extend(SiaConfig(t, n, g) for n, g in pairs)
    return out


@dataclass
class SiaPolicy(Policy):
    """Sia's goodput ILP plus placement (see the module docstring).

    Diagnostics keys: ``objective`` (ILP value), ``status`` (solver status), ``chosen`` (job ->
    (type, nodes, GPUs)), ``unplaced`` (jobs chosen by the ILP that found no nodes), ``num_configs``.
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
        free_type = {t: sum(n.free_gpus for n in cluster.nodes_of_type(t)) for t in cluster.gpu_types}
        # each job's configs with their objective coefficient w·(g^p − λ_n) (the constant Σ w·λ_n is added
        # back for reporting)
        offers: dict[str, list[tuple[SiaConfig, float]]] = {}
        for job in jobs:
            goodput = {}
            view = confine(cluster, job)  # only its allowed nodes (planner.eligible)
            for c in job_configs(view, job, self.per_requirement):
                if c.gpus > free_type[c.gpu_type]:
                    continue
                rep = representative_config(view, c.gpu_type, c.gpus, nodes=c.nodes)
                thr = job.throughput(rep) if rep is not None else 0.0
                if thr > 0:
                    goodput[c] = thr
            if goodput:
                low = min(goodput.values())
                offers[job.job_id] = [(c, weights[job.job_id] * (min(thr / low, self.goodput_clip) ** self.p - self.lambda_n))
                                      for c, thr in sorted(goodput.items())]
        n_configs = sum(len(o) for o in offers.values())
        objective = sum(self.lambda_n * weights[j.job_id] for j in jobs)
        status = mip.OptimizationStatus.OPTIMAL
        node_type = {n.name: n.gpu_type for n in cluster.nodes}
        current = {j.job_id: SiaConfig(node_type.get(next(iter(j.current)), ""), len(j.current), sum(j.current.values()))
                   for j in jobs if j.current}
        chosen = _unconstrained(offers, free_type, current)
        if chosen is not None:  # every job's own best config fits: that is the optimum, no solver needed
            objective += sum(coef for jid, c in chosen.items() for c2, coef in offers[jid] if c2 == c)
        else:
            chosen, status, value = self._solve(offers, free_type, n_configs)
            objective += value
        assignments, unplaced = self._place(cluster, jobs, chosen)
        diagnostics: dict[str, object] = {
            "objective": objective,
            "status": status.name,
            "chosen": {jid: (c.gpu_type, c.nodes, c.gpus) for jid, c in chosen.items()},
            "unplaced": unplaced,
            "num_configs": n_configs,
        }
        return Plan(assignments, diagnostics)

    def _solve(self, offers: dict[str, list[tuple[SiaConfig, float]]], free_type: dict[str, int],
               n_configs: int) -> tuple[dict[str, SiaConfig], mip.OptimizationStatus, float]:
        """The ILP of the module docstring over ``offers``: the chosen config per job, the status, the
        objective without its constant."""
        model = mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
        model.verbose = 0
        model.max_mip_gap = self.max_gap
        terms = []
        choice: dict[str, list[tuple[SiaConfig, mip.Var]]] = {}
        per_type: dict[str, list[tuple[int, mip.Var]]] = {t: [] for t in free_type}
        for jid, offered in offers.items():
            options = []
            for c, coef in offered:
                v = model.add_var(var_type=mip.BINARY)
                terms.append(coef * v)
                options.append((c, v))
                per_type[c.gpu_type].append((c.gpus, v))
            model += mip.xsum(v for _, v in options) <= 1
            choice[jid] = options
        for t, col in per_type.items():
            if col:
                model += mip.xsum(g * v for g, v in col) <= free_type[t]
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

    def _place(self, cluster: ClusterView, jobs, chosen: dict[str, SiaConfig]) -> tuple[dict[str, Config | None], list[str]]:
        free = free_by_node(cluster)
        node_type = {n.name: n.gpu_type for n in cluster.nodes}
        by_id = {j.job_id: j for j in jobs}
        out: dict[str, Config | None] = {j.job_id: None for j in jobs}
        for jid, c in chosen.items():  # unchanged config: keep the nodes (no restart)
            cur = by_id[jid].current
            if (cur and sum(cur.values()) == c.gpus and len(cur) == c.nodes
                    and all(node_type.get(n) == c.gpu_type and free.get(n, 0) >= g for n, g in cur.items())):
                out[jid] = cur
                take(free, cur)
        unplaced = []
        for jid, c in sorted(((j, c) for j, c in chosen.items() if out[j] is None), key=lambda jc: (-jc[1].gpus, jc[0])):
            nodes = confine(cluster, by_id[jid]).nodes_of_type(c.gpu_type)
            if c.nodes == 1:
                config = place_consolidated(free, nodes, c.gpus)
                if config is not None and len(config) != 1:
                    config = None
            else:
                config = _place_multi(free, nodes, c.nodes, c.gpus)
            if config is None:
                unplaced.append(jid)
                continue
            out[jid] = config
            take(free, config)
        if unplaced:
            log.debug("sia: %d jobs chosen by the ILP found no nodes: %s", len(unplaced), unplaced)
        return out, unplaced


def _unconstrained(offers: dict[str, list[tuple[SiaConfig, float]]], free_type: dict[str, int],
                   current: dict[str, SiaConfig] | None = None) -> dict[str, SiaConfig] | None:
    """The ILP's optimum when its capacity rows do not bind: each job on its own best config (the most
    negative coefficient; among equals the job's ``current`` config, else the first; none when no
    coefficient is negative), if these fit the free GPUs of every type together; else None (the solver
    decides). Exact: the objective is a sum of one term per job, each at its minimum."""
    chosen: dict[str, SiaConfig] = {}
    used: dict[str, int] = {}
    now = current or {}
    for jid, offered in offers.items():
        best, coef = min(offered, key=lambda ck: (ck[1], ck[0] != now.get(jid)))
        if coef >= 0:
            continue
        chosen[jid] = best
        used[best.gpu_type] = used.get(best.gpu_type, 0) + best.gpus
    return chosen if all(g <= free_type.get(t, 0) for t, g in used.items()) else None


def _place_multi(free: dict[str, int], nodes: tuple[NodeView, ...], n_nodes: int, gpus: int) -> Config | None:
    """``gpus`` GPUs on exactly ``n_nodes`` nodes: the nodes with the most free GPUs, filled in that order."""
    ranked = sorted(nodes, key=lambda n: -free.get(n.name, 0))[:n_nodes]
    if len(ranked) < n_nodes or sum(free.get(n.name, 0) for n in ranked) < gpus:
        return None
    config: dict[str, int] = {}
    left = gpus
    for i, n in enumerate(ranked):
        # leave at least one GPU for each remaining node so the job spans exactly n_nodes nodes
        room = min(free.get(n.name, 0), left - (n_nodes - 1 - i))
        if room <= 0:
            return None
        config[n.name] = room
        left -= room
    return freeze_config(config) if left == 0 else None
