"""Themis (Mahajan et al., NSDI '20) as a baseline policy: finish-time fairness with leases and auctions.

Data flow: the simulator (or engine) calls :meth:`ThemisPolicy.plan` every round and, since Themis
auctions on every resource-available event, also for fragment plans when GPUs fall idle. Each job is
a single-job *app*. Per call:

1. GPUs are held under 10-minute leases (Themis §4.1). Jobs whose lease has not expired keep their
   GPUs; every other GPU is *available* (the offer). Lease expiries are noticed at the next planning
   call, so with 360 s rounds a lease lasts 600–720 s.
2. Every app's current finish-time fairness ρ = T_sh / T_id (Themis eq. 1, with the job's own
   throughput estimate in place of iter_time·S(G)): T_sh(G) = elapsed + remaining / throughput(G),
   T_id = N_avg · T_cluster, T_cluster = total work at the best single-GPU speed, linearly scaled to
   min(cluster GPUs, the job's largest request). N_avg = time-weighted mean number of active apps
   since the job arrived.
3. Filtering: the 1 − f fraction (f = 0.8, at least one app) of apps with the largest ρ, among those
   able to take GPUs now (no unexpired lease), bid (Pseudocode 1, lines 16–18).
4. Bids: for each acceptable GPU count and GPU type, a few placements of the offered GPUs (the best-
   fitting single nodes, or a consolidated-first spread), each valued ρ(G); the empty bid is ρ_old.
5. Partial-allocation auction (Pseudocode 1, lines 6–10): the proportional-fair allocation maximises
   Π 1/ρ_i (an ILP over the bids, python-mip/CBC; not built when every bidder's best bid fits beside the
   others, which is then the optimum: :func:`_each_best`); each winner i keeps its allocation with
   probability c_i = Π_{j≠i} ρ_j(G^{-i}_j) / Π_{j≠i} ρ_j(G_j) ≤ 1 (the hidden payment).
6. Leftover GPUs (hidden payments and unsold GPUs) go at random to apps that did not bid (line 21):
   in random order, each takes its lowest-ρ placement that fits the leftover.
7. Every new allocation gets a lease ending at now + lease.

Resolutions of what the paper leaves open (the project's Themis digest lists them): ρ_old of an app
holding no GPUs is finite — the ρ it would reach by waiting one more lease and then running in its best
offered placement — instead of ∞, so the Nash-welfare product and c_i stay meaningful; GPUs are
indivisible, so c_i is realised as the probability of keeping the whole allocation (a seeded RNG
in the policy's state keeps runs reproducible); an app holding a lease does not bid for more GPUs (a
job's config is all-or-nothing here, growing it would restart it anyway).
"""

from __future__ import annotations

import heapq
import logging
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import mip

from planner.baselines.common import fits, place_consolidated, representative_config, take
from planner.eligible import confine
from planner.signatures import quiet_stdout
from planner.views import ClusterView, Config, JobView, Plan, Policy, freeze_config

log = logging.getLogger(__name__)


# -- Themis's finish-time fairness model (§4.3), usable on its own --------------------------------

def finish_time_fairness(t_shared: float, t_cluster: float, n_avg: float) -> float:
    """ρ = T_sh / T_id with T_id = T_cluster · N_avg (Themis eq. 1 and 2)."""
    if t_cluster <= 0 or n_avg <= 0:
        raise ValueError(f"T_cluster ({t_cluster}) and N_avg ({n_avg}) must be positive")
    return t_shared / (t_cluster * n_avg)


def phase_time(iters: int, iter_times: Sequence[float], gpus: int, demand_max: int) -> float:
    """Time for one successive-halving phase: the slowest job of the phase (Themis eq. 2, T_sh(i)).

    With at least as many GPUs as jobs, the GPUs are split evenly (extra GPUs to the slowest jobs),
    each job speeding up linearly up to ``demand_max``. With fewer GPUs than jobs, jobs run one at a
    time per GPU, longest first onto the least-loaded GPU — as in §4.3.3, where on 2 GPUs the 80 s
    and 120 s jobs share one GPU and the two 100 s jobs the other.
    """
    if gpus <= 0:
        return math.inf
    work = sorted((iters * t for t in iter_times), reverse=True)
    if gpus >= len(work):
        base, extra = divmod(gpus, len(work))
        return max(w / min(base + (1 if i < extra else 0), demand_max) for i, w in enumerate(work))
    loads = [0.0] * gpus
    heapq.heapify(loads)
    for w in work:
        heapq.heappush(loads, heapq.heappop(loads) + w)
    return max(loads)


def successive_halving_shared_time(
    phases: Sequence[Sequence[float]], iters_per_phase: Sequence[int], gpus: int, demand_max: int
) -> float:
    """T_sh = Σ_i T_sh(i) over the remaining phases (Themis eq. 2); future phases use the median job."""
    if len(phases) != len(iters_per_phase):
        raise ValueError("one iteration count per phase is needed")
    return sum(phase_time(n, times, gpus, demand_max) for times, n in zip(phases, iters_per_phase))


# -- the policy -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Lease:
    config: Config
    expiry: float


@dataclass
class ThemisPolicy(Policy):
    """Themis's finish-time-fair policy (see the module docstring).

    Parameters: ``f`` (filter knob, 0.8), ``lease`` (seconds, 600), ``seed`` (RNG for hidden
    payments and leftovers), ``nodes_per_bid`` (single-node placements offered per GPU count and type).
    Diagnostics keys: ``rho`` (job -> current ρ), ``bidders``, ``winners`` (job -> c_i),
    ``paid`` (winners that lost their allocation as hidden payment), ``leftover`` (jobs placed from the
    leftover), ``held`` (jobs keeping leased GPUs).
    """

    f: float = 0.8
    lease: float = 600.0
    seed: int = 0
    nodes_per_bid: int = 3
    name: str = "themis"
    supports_fragment_plans: bool = True
    _leases: dict[str, _Lease] = field(default_factory=dict, repr=False)
    _contention: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False)  # jid -> (∫N dt, since)
    _last_now: float | None = field(default=None, repr=False)
    _last_count: int = field(default=0, repr=False)
    _rng: random.Random | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.f <= 1.0:
            raise ValueError(f"themis: f must be in [0, 1], got {self.f}")
        if self.lease <= 0:
            raise ValueError(f"themis: lease must be positive, got {self.lease}")
        self._rng = random.Random(self.seed)

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        assert self._rng is not None
        if not fragment:
            self._update_contention(jobs, now)
        n_active = len(jobs) if not fragment else max(self._last_count, len(jobs))
        pool = {n.name: n.free_gpus for n in cluster.nodes}
        assignments: dict[str, Config | None] = {j.job_id: None for j in jobs}
        held, eligible = self._keep_leases(jobs, pool, assignments, now, fragment)

        ideal = {j.job_id: self._t_cluster(cluster, j) for j in jobs}
        n_avg = {j.job_id: self._n_avg(j.job_id, n_active) for j in jobs}

        def rho(job: JobView, config: Config | None, delay: float = 0.0) -> float:
            thr = job.throughput(config) if config else 0.0
            if thr <= 0:
                return math.inf
            t_sh = max(now - job.submit_time, 0.0) + delay + job.remaining_samples / thr
            return finish_time_fairness(t_sh, ideal[job.job_id], n_avg[job.job_id])

        bids = {j.job_id: self._bid_configs(cluster, j, pool) for j in eligible}
        rho_bid = {j.job_id: [rho(j, c) for c in bids[j.job_id]] for j in eligible}
        # ρ_old: the value of winning nothing now — wait one more lease, then the best offered placement.
        rho_old = {j.job_id: min((rho(j, c, self.lease) for c in bids[j.job_id]), default=math.inf) for j in eligible}
        # ρ now, for filtering: a running job's ρ in its current config, otherwise ρ_old.
        rho_cur = {j.job_id: rho(j, j.current) if j.current else math.inf for j in eligible}
        rho_cur = {jid: r if math.isfinite(r) else rho_old[jid] for jid, r in rho_cur.items()}
        order = sorted(eligible, key=lambda j: (-_finite(rho_cur[j.job_id]), j.submit_time, j.job_id))
        k = max(1, math.ceil((1.0 - self.f) * n_active)) if order else 0
        bidders = [j.job_id for j in order[:k]]

        gains = {
            jid: [(c, math.log(rho_old[jid]) - math.log(r)) for c, r in zip(bids[jid], rho_bid[jid])
                  if math.isfinite(r) and math.isfinite(rho_old[jid]) and r < rho_old[jid]]
            for jid in bidders
        }
        left = dict(pool)
        winners, paid = self._auction(gains, pool, left, assignments)
        leftover_takers = self._leftovers(order[k:], cluster, left, rho, assignments)
        for jid, config in assignments.items():
            if config and jid not in held:
                self._leases[jid] = _Lease(config, now + self.lease)
        if not fragment:
            active = {j.job_id for j in jobs}
            self._leases = {jid: ls for jid, ls in self._leases.items() if jid in active}
        diagnostics: dict[str, object] = {
            "rho": {j.job_id: rho_cur.get(j.job_id, rho(j, j.current)) for j in jobs},
            "bidders": bidders,
            "winners": winners,
            "paid": paid,
            "leftover": leftover_takers,
            "held": held,
        }
        return Plan(assignments, diagnostics)

    # -- pieces --------------------------------------------------------------------------------
    def _keep_leases(self, jobs: Sequence[JobView], pool: dict[str, int], assignments: dict[str, Config | None],
                     now: float, fragment: bool) -> tuple[list[str], list[JobView]]:
        """A round's running jobs whose lease has not expired keep their config (taken from ``pool``, set in
        ``assignments``): their ids, and the jobs left to bid."""
        held: list[str] = []
        eligible: list[JobView] = []
        for job in jobs:
            lease = self._leases.get(job.job_id)
            if (not fragment and job.current and lease is not None and lease.expiry > now
                    and dict(lease.config) == dict(job.current) and fits(pool, job.current)):
                take(pool, job.current)
                assignments[job.job_id] = job.current
                held.append(job.job_id)
            else:
                eligible.append(job)
        return held, eligible

    def _auction(self, gains: Mapping[str, Sequence[tuple[Config, float]]], pool: Mapping[str, int],
                 left: dict[str, int], assignments: dict[str, Config | None]) -> tuple[dict[str, float], list[str]]:
        """The partial-allocation auction over ``pool``: each proportional-fair winner keeps its config with
        probability c_i (taken from ``left``, set in ``assignments``), else pays by going without. Winner ->
        c_i, and the winners that paid."""
        assert self._rng is not None
        pf, value = _proportional_fair(gains, pool)
        winners: dict[str, float] = {}
        paid = []
        for jid, (config, gain) in pf.items():
            others = {o: g for o, g in gains.items() if o != jid}
            _, value_without = _proportional_fair(others, pool)
            log_c = (value - gain) - value_without  # Σ_{j≠i} gain_j(G_pf) − V_{-i} ≤ 0
            c_i = math.exp(min(log_c, 0.0))
            winners[jid] = c_i
            if self._rng.random() < c_i:
                assignments[jid] = config
                take(left, config)
            else:
                paid.append(jid)
        return winners, paid

    def _leftovers(self, non_bidders: Sequence[JobView], cluster: ClusterView, left: dict[str, int],
                   rho: Callable[[JobView, Config | None], float], assignments: dict[str, Config | None]) -> list[str]:
        """The GPUs the auction leaves, offered to the jobs that did not bid, in random order: each takes
        its best finite-ρ config that fits. Their ids."""
        assert self._rng is not None
        takers = []
        shuffled = list(non_bidders)
        self._rng.shuffle(shuffled)
        for job in shuffled:
            options = [(rho(job, c), c) for c in self._bid_configs(cluster, job, left)]
            options = [(r, c) for r, c in options if math.isfinite(r)]
            if not options:
                continue
            _r, config = min(options, key=lambda rc: (rc[0], sorted(rc[1].items())))
            assignments[job.job_id] = config
            take(left, config)
            takers.append(job.job_id)
        return takers

    def _update_contention(self, jobs: Sequence[JobView], now: float) -> None:
        if self._last_now is not None:
            dt = max(now - self._last_now, 0.0)
            for jid, (area, since) in self._contention.items():
                self._contention[jid] = (area + self._last_count * dt, since)
        active = {j.job_id for j in jobs}
        self._contention = {jid: v for jid, v in self._contention.items() if jid in active}
        for jid in active:
            self._contention.setdefault(jid, (0.0, now))
        self._last_now = now
        self._last_count = len(jobs)

    def _n_avg(self, jid: str, n_now: int) -> float:
        area, since = self._contention.get(jid, (0.0, self._last_now or 0.0))
        span = (self._last_now or since) - since
        return area / span if span > 0 and area > 0 else float(max(n_now, 1))

    @staticmethod
    def _t_cluster(cluster: ClusterView, job: JobView) -> float:
        """Total work at the best single-GPU speed, scaled linearly to min(R_C, largest request)."""
        best = 0.0
        for t in cluster.gpu_types:
            rep = representative_config(cluster, t, 1)
            if rep is not None:
                best = max(best, job.throughput(rep))
        if best <= 0 or job.total_samples <= 0:
            return max(job.age, 1e-9)
        return job.total_samples / (best * min(cluster.total_gpus, job.requirements[-1]))

    def _bid_configs(self, cluster: ClusterView, job: JobView, pool: Mapping[str, int]) -> list[Config]:
        """Placements of the offered GPUs a job values: per (GPU count, type), the ``nodes_per_bid``
        best-fitting single nodes, or one consolidated-first spread when no node can hold the count."""
        out: list[Config] = []
        cluster = confine(cluster, job)  # only its allowed nodes (planner.eligible)
        for r in job.requirements:
            for t in cluster.gpu_types:
                nodes = cluster.nodes_of_type(t)
                single = sorted((n for n in nodes if pool.get(n.name, 0) >= r), key=lambda n: pool[n.name])
                if single:
                    out.extend(freeze_config({n.name: r}) for n in single[: self.nodes_per_bid])
                else:
                    spread = place_consolidated(pool, nodes, r)
                    if spread is not None:
                        out.append(spread)
        return out


def _finite(x: float, cap: float = 1e300) -> float:
    return x if math.isfinite(x) else cap


def _each_best(gains: Mapping[str, Sequence[tuple[Config, float]]],
               pool: Mapping[str, int]) -> dict[str, tuple[Config, float]] | None:
    """The proportional-fair ILP's optimum when its node rows do not bind: each app's largest positive
    gain (the first of equals), if those bids fit the pool's nodes together; else None. Exact: the
    objective is one term per app, each at its maximum. (The hidden payments ask the ILP again without
    each winner: a subset of bids that fit fits too, so those are answered here as well.)"""
    best: dict[str, tuple[Config, float]] = {}
    used: dict[str, int] = {}
    for jid, opts in gains.items():
        positive = [(c, g) for c, g in opts if g > 0]
        if not positive:
            continue
        c, g = max(positive, key=lambda cg: cg[1])
        best[jid] = (c, g)
        for node, k in c.items():
            used[node] = used.get(node, 0) + k
    return best if all(k <= pool[n] for n, k in used.items() if n in pool) else None


def _proportional_fair(
    gains: Mapping[str, Sequence[tuple[Config, float]]], pool: Mapping[str, int]
) -> tuple[dict[str, tuple[Config, float]], float]:
    """argmax Π 1/ρ_i  ==  argmax Σ_i (log ρ_old_i − log ρ_i(G_i)) over disjoint bids (PA step 1).

    Returns each winner's (config, gain) and the optimal value."""
    items = [(jid, c, g) for jid, opts in gains.items() for c, g in opts if g > 0]
    if not items:
        return {}, 0.0
    best = _each_best(gains, pool)
    if best is not None:  # every bidder's best bid fits beside the others: the optimum, no solver needed
        return best, sum(g for _, g in best.values())
    model = mip.Model(sense=mip.MAXIMIZE, solver_name=mip.CBC)
    model.verbose = 0
    y = [model.add_var(var_type=mip.BINARY) for _ in items]
    for jid in gains:
        vs = [v for v, (j, _, _) in zip(y, items) if j == jid]
        if vs:
            model += mip.xsum(vs) <= 1
    for node, cap in pool.items():
        col = [(c[node], v) for v, (_, c, _) in zip(y, items) if node in c]
        if col:
            model += mip.xsum(g * v for g, v in col) <= cap
    model.objective = mip.xsum(g * v for v, (_, _, g) in zip(y, items))
    with quiet_stdout(True):  # CBC/Clp log to the C stdout whatever the verbosity
        status = model.optimize()
    if status not in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE):
        log.warning("themis: proportional-fair ILP returned %s; no allocation this auction", status.name)
        return {}, 0.0
    chosen = {j: (c, g) for v, (j, c, g) in zip(y, items) if (v.x or 0.0) > 0.5}
    return chosen, sum(g for _, g in chosen.values())
