"""Gavel (Narayanan et al., OSDI '20) as a baseline policy: max-min fairness LP plus round mechanism.

Data flow: the simulator (or engine) calls :meth:`GavelPolicy.plan` once per round with every active
job. The policy

1. turns each job into Gavel's rigid form — one GPU count, the *median* of the requirement set, as the
   Hops paper ran Gavel (§4 "Baseline Settings") — and looks up a throughput per GPU type on a
   representative config of that type (Gavel is type-level: it cannot see per-server differences);
2. on a reset event (the set of jobs or the GPUs per type changed) solves the heterogeneity-aware
   max-min fairness LP (Gavel §4.1, "LAS" with scale factors) for the time-share matrix X;
3. runs the round mechanism (Gavel §5, Algorithm 1): priority = X_mj / (fraction of type-j time
   received so far); greedy over (job, type) entries by priority, each job at most once per round, an
   entry only if its scale factor fits in the GPUs of that type left (entries with X = 0 come last,
   so the pass is work-conserving);
4. places the chosen jobs on nodes of the chosen type: jobs keep their previous nodes when possible
   (lease renewal, as Gavel's artifact does), the rest in decreasing order of GPU count, consolidated
   first (one server if one can hold the job, else fill servers with the most free GPUs first — Gavel
   §5 "tries to give jobs accelerators on the same physical server").

Variants (selectable by name in :mod:`planner.baselines`):
- ``gavel``: weights w_m = 1 (plain heterogeneity-aware LAS).
- ``gavel-lr``: the Hops paper's setup, "the same latency ratio priority as Hops for the queuing
  priorities": w_m = (LR_m + bias)^λ with LR = wait/age (Hops eq. 8, 11), taken when X is
  recomputed, and LR breaks ties between equal mechanism priorities.

Details not in the paper follow the public artifact (stanford-futuredata/gavel, as summarised in the
project's Gavel digest §9): X^equal_mj = workers_j / Σ workers (every row sums to 1); at each
recomputation the per-(job, type) time counters restart at half a round; a (job, type) never run has
priority X·1e9. The artifact's simulator also waits at least 1920 s between recomputations; here X
is recomputed at every reset event. The LP is solved with python-mip's CBC (continuous variables: a
plain LP); LR weights are scaled to at most 1 with a floor of 1e-4 so the LP stays well-conditioned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import mip

from planner.errors import HopsError
from planner.baselines.common import (
    free_by_node,
    latency_ratio,
    lr_weights,
    median_requirement,
    place_consolidated,
    representative_config,
    solver_weights,
    take,
)
from planner.eligible import confine
from planner.signatures import quiet_stdout
from planner.views import ClusterView, Config, JobView, Plan, Policy

log = logging.getLogger(__name__)

#: Priority multiplier for a (job, type) with allocation but no time received yet (Gavel artifact).
_UNSERVED_PRIORITY = 1e9


class SolverError(HopsError):
    """An LP/ILP of a baseline policy could not be solved (the message names the policy and status)."""


@dataclass(frozen=True)
class MaxMinSolution:
    """The max-min fairness LP's answer: ``x[m][j]`` time shares and the common objective value."""

    x: list[list[float]]
    objective: float


def max_min_fairness_allocation(
    throughputs: Sequence[Sequence[float]],
    num_workers: Sequence[int],
    scale_factors: Sequence[int] | None = None,
    weights: Sequence[float] | None = None,
) -> MaxMinSolution:
    """Gavel's heterogeneity-aware max-min fairness LP (Gavel §4.1; constraints (1)–(3) of §3.1).

    maximise  min_m  (1/w_m) · (Σ_j T_mj x_mj) / (Σ_j T_mj x^equal_mj) · scale_factor_m
    s.t.      0 <= x_mj <= 1,  Σ_j x_mj <= 1,  Σ_m scale_factor_m x_mj <= num_workers_j,
    with x^equal_mj = num_workers_j / Σ_j' num_workers_j'. Entries with T_mj <= 0 (cannot run) or a
    scale factor above the type's workers are fixed at 0; jobs that can run nowhere are left out of
    the min. Written as max t (epigraph) and solved as an LP with CBC.
    """
    n_jobs = len(throughputs)
    n_types = len(num_workers)
    sf = list(scale_factors) if scale_factors is not None else [1] * n_jobs
    w = list(weights) if weights is not None else [1.0] * n_jobs
    if len(sf) != n_jobs or len(w) != n_jobs or any(len(row) != n_types for row in throughputs):
        raise ValueError("throughputs, scale_factors and weights must agree in shape with num_workers")
    if any(x <= 0 for x in w):
        raise ValueError(f"weights must be positive, got {w}")
    total_workers = sum(num_workers)
    x_zero = [[0.0] * n_types for _ in range(n_jobs)]
    if n_jobs == 0 or total_workers <= 0:
        return MaxMinSolution(x_zero, 0.0)

    model = mip.Model(sense=mip.MAXIMIZE, solver_name=mip.CBC)
    model.verbose = 0
    t = model.add_var(name="t", lb=0.0)
    x: list[list[mip.Var | None]] = []
    for m in range(n_jobs):
        row: list[mip.Var | None] = []
        for j in range(n_types):
            usable = throughputs[m][j] > 0 and sf[m] <= num_workers[j]
            row.append(model.add_var(name=f"x_{m}_{j}", lb=0.0, ub=1.0) if usable else None)
        x.append(row)
    if all(v is None for row in x for v in row):  # nobody can run anywhere: nothing to share (t unbounded)
        return MaxMinSolution(x_zero, 0.0)
    for m in range(n_jobs):
        vars_m = [v for v in x[m] if v is not None]
        if not vars_m:
            continue
        model += mip.xsum(vars_m) <= 1
        t_equal = sum(throughputs[m][j] * num_workers[j] / total_workers for j in range(n_types))
        coef = sf[m] / (w[m] * t_equal)
        model += mip.xsum(throughputs[m][j] * coef * v for j, v in enumerate(x[m]) if v is not None) >= t
    for j in range(n_types):
        col = [(sf[m], x[m][j]) for m in range(n_jobs) if x[m][j] is not None]
        if col:
            model += mip.xsum(s * v for s, v in col) <= num_workers[j]
    model.objective = t
    with quiet_stdout(True):  # CBC/Clp log to the C stdout whatever the verbosity
        status = model.optimize()
    if status != mip.OptimizationStatus.OPTIMAL:
        raise SolverError(f"gavel: max-min fairness LP not solved (status {status.name}); check throughputs")
    sol = [[(v.x or 0.0) if v is not None else 0.0 for v in row] for row in x]
    return MaxMinSolution([[max(0.0, min(1.0, s)) for s in row] for row in sol], float(t.x or 0.0))


@dataclass
class GavelPolicy(Policy):
    """Gavel's max-min fairness policy with its round mechanism (see the module docstring).

    Parameters: ``lr_weighted`` (the Hops-paper variant), ``lr_exponent`` (λ of the LR weights),
    ``reset_counter`` (seconds each time counter restarts at on recomputation; the artifact uses half
    its 360 s round). Diagnostics keys: ``recomputed`` (bool), ``objective`` (LP value),
    ``allocation`` (job -> type -> x), ``priorities`` (job -> type -> priority this round),
    ``scale_factor`` (job -> rigid GPU count), ``selected`` (job -> type, greedy order).
    """

    lr_weighted: bool = False
    lr_exponent: float = 1.0
    reset_counter: float = 180.0
    name: str = "gavel"
    supports_fragment_plans: bool = False
    _alloc: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)
    _objective: float = field(default=0.0, repr=False)
    _alloc_key: tuple[frozenset[str], tuple[tuple[str, int], ...]] | None = field(default=None, repr=False)
    _time: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)
    _last_now: float | None = field(default=None, repr=False)
    _last_round: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.lr_weighted and self.name == "gavel":
            self.name = "gavel-lr"

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        if fragment:
            # Gavel plans once per round only; idle GPUs wait for the next round.
            return Plan({j.job_id: None for j in jobs}, {"fragment": "not supported by gavel"})
        self._credit_time(jobs, now)
        types = cluster.gpu_types
        workers = {t: sum(n.free_gpus for n in cluster.nodes_of_type(t)) for t in types}
        sf = {j.job_id: median_requirement(j) for j in jobs}
        thr: dict[tuple[str, str], float] = {}
        for job in jobs:
            for t in types:
                rep = representative_config(confine(cluster, job), t, sf[job.job_id])  # its allowed nodes
                thr[job.job_id, t] = max(job.throughput(rep), 0.0) if rep is not None else 0.0

        key = (frozenset(sf), tuple(sorted(workers.items())))
        recomputed = key != self._alloc_key
        if recomputed:
            self._recompute(jobs, types, workers, sf, thr)
            self._alloc_key = key

        priorities = self._priorities(jobs, types, thr)
        lr = {j.job_id: latency_ratio(j) for j in jobs}
        entries = sorted(
            ((p, self._alloc.get((jid, t), 0.0), lr[jid] if self.lr_weighted else 0.0, jid, t)
             for (jid, t), p in priorities.items() if thr[jid, t] > 0),
            key=lambda e: (-e[0], -e[1], -e[2], e[3], types.index(e[4])),
        )
        left = dict(workers)
        selected: dict[str, str] = {}
        for _p, _x, _lr, jid, t in entries:
            if jid in selected or sf[jid] > left[t]:
                continue
            selected[jid] = t
            left[t] -= sf[jid]

        assignments = self._place(cluster, jobs, selected, sf)
        self._last_round = {jid: selected[jid] for jid, c in assignments.items() if c}
        self._last_now = now
        diagnostics: dict[str, object] = {
            "recomputed": recomputed,
            "objective": self._objective,
            "allocation": {j.job_id: {t: self._alloc.get((j.job_id, t), 0.0) for t in types} for j in jobs},
            "priorities": {j.job_id: {t: priorities[j.job_id, t] for t in types} for j in jobs},
            "scale_factor": sf,
            "selected": dict(selected),
        }
        return Plan(assignments, diagnostics)

    # -- steps ---------------------------------------------------------------------------------
    def _credit_time(self, jobs: Sequence[JobView], now: float) -> None:
        """Credit last round's (job, type) with the time since the last plan (Gavel's t_mj)."""
        if self._last_now is None:
            return
        dt = max(now - self._last_now, 0.0)
        active = {j.job_id for j in jobs}
        for jid, t in self._last_round.items():
            if jid in active:
                self._time[jid, t] = self._time.get((jid, t), 0.0) + dt

    def _recompute(self, jobs, types, workers, sf, thr) -> None:
        ids = [j.job_id for j in jobs]
        weights = solver_weights(lr_weights(jobs, self.lr_exponent)) if self.lr_weighted else {}
        sol = max_min_fairness_allocation(
            [[thr[jid, t] for t in types] for jid in ids],
            [workers[t] for t in types],
            [sf[jid] for jid in ids],
            [weights[jid] for jid in ids] if weights else None,
        )
        self._alloc = {(jid, t): sol.x[m][k] for m, jid in enumerate(ids) for k, t in enumerate(types)}
        self._objective = sol.objective
        # Gavel artifact: time counters restart at half a round for every job and type on reset.
        self._time = {(jid, t): self.reset_counter for jid in ids for t in types}
        log.debug("gavel: recomputed allocation for %d jobs, objective %.4f", len(ids), sol.objective)

    def _priorities(self, jobs, types, thr) -> dict[tuple[str, str], float]:
        """priority_mj = X_mj / (t_mj / Σ_m' t_m'j); X·1e9 when never served; 0 if X = 0 or T = 0.

        Entries with priority 0 but a positive throughput still come last in the greedy pass (as in
        Gavel's artifact, where only FIFO skips them), so GPUs the allocation leaves idle are used."""
        totals = {t: sum(self._time.get((j.job_id, t), 0.0) for j in jobs) for t in types}
        out: dict[tuple[str, str], float] = {}
        for job in jobs:
            for t in types:
                x = self._alloc.get((job.job_id, t), 0.0)
                if x <= 1e-9 or thr[job.job_id, t] <= 0:
                    out[job.job_id, t] = 0.0
                    continue
                received = self._time.get((job.job_id, t), 0.0)
                frac = received / totals[t] if totals[t] > 0 else 0.0
                out[job.job_id, t] = x / frac if frac > 0 else x * _UNSERVED_PRIORITY
        return out

    def _place(self, cluster, jobs, selected, sf) -> dict[str, Config | None]:
        """Lease renewal first, then decreasing GPU count, consolidated first, within the chosen type."""
        free = free_by_node(cluster)
        node_type = {n.name: n.gpu_type for n in cluster.nodes}
        by_id = {j.job_id: j for j in jobs}
        out: dict[str, Config | None] = {j.job_id: None for j in jobs}
        for jid, t in selected.items():
            cur = by_id[jid].current
            if cur and sum(cur.values()) == sf[jid] and all(
                node_type.get(n) == t and free.get(n, 0) >= g for n, g in cur.items()
            ):
                out[jid] = cur
                take(free, cur)
        order = sorted((jid for jid in selected if out[jid] is None), key=lambda jid: -sf[jid])
        for jid in order:
            config = place_consolidated(free, confine(cluster, by_id[jid]).nodes_of_type(selected[jid]), sf[jid])
            if config is None:  # cannot happen: the greedy step kept the type's GPU count
                log.warning("gavel: no room for %s on %s despite type-level fit", jid, selected[jid])
                continue
            out[jid] = config
            take(free, config)
        return out
