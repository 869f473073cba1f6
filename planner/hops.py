"""The Hops policy: queue → window → configs → ILP → plan, once per round and again for fragments.

The paper rules as this module reads them are in docs/design.md ("Reading the paper: the smaller choices").

This is what the engine and the simulator call (:class:`HopsPolicy`, a :class:`planner.views.Policy`).
One planning: priorities and queue order (:mod:`planner.priorities`), the service window and, for
fragment plans, the sensitivity adjustment (:mod:`planner.window`), candidate configs
(:mod:`planner.configs`) with throughput gains G (throughput / the job's smallest candidate throughput,
Sia's normalisation; :mod:`planner.candidates`), weights (prior + bias)^λ, and the ILP (:mod:`planner.ilp`).

One planning is a list of named stages over a small plan state (:data:`PLAN_STAGES`, run by
:func:`planner.stages.run_stages`): ``unservable``, ``in_place`` (running jobs held where they are), ``priorities``, ``window``,
``classes`` (entity and eligibility classes), ``candidates``, ``backfill``, ``weights``, ``solve`` (with
its pin passes), ``fallback`` (the ladder below), ``fill`` (leftovers), ``explore`` (idle GPUs), ``fits``
(the guard against over-allocation), ``same_nodes`` (running jobs keep their nodes), ``swaps``, ``take_back``
(no job takes its GPUs back from the job started on them: :mod:`planner.take_back`) and ``outcome``
(assignments and diagnostics). A caller that gives a timer (:attr:`HopsPolicy.timer`) gets each timed.

Who is planned (``window="waiting"``, the default): a round plan plans every running job, with its
LR weight, plus the service window cut from the *waiting* queue; a fragment plan sees waiting jobs
only. Jobs that no configuration can serve on this cluster (every candidate config on the whole
cluster estimated at throughput 0, e.g. a rigid 4-GPU request of a model that cannot run on more
than one GPU, or a job whose runtime records show no progress on every config it could run on:
:mod:`estimator.progress`) never take a place in the window or its accumulation; diagnostics
``unservable`` names each with the reason, and the verdict is reconsidered whenever the cluster's nodes
change. A running job whose current config makes no progress is judged the same way and leaves the plan.
``window="active"`` is the earlier reading (the window cut from every active job), for ablations.

A job that may use only some nodes (``JobView.nodes``: the live engine's jobs of one of several Hops
partitions) is planned on those only: its configs and verdicts see its nodes alone, and node classes are
split so that no interchangeable node lies outside them (:mod:`planner.eligible`).

Node classes are refined by estimated speed first (:mod:`planner.entities`): nodes of one declared
server class whose throughput estimates differ beyond ``entity_tolerance`` are never interchangeable.

Multiple plans per round: the call with ``fragment=False`` is the round's first plan (plan 0); each
``fragment=True`` call is a further plan over the idle GPUs (plan 1, 2, ...), for pending jobs only;
their placements end with the round (the engine's lease), as the paper requires.

In a round plan, running jobs that the plan gives an equivalent config (same server classes and GPU
counts) keep their current nodes wherever the rest of the plan can be packed around them
(:func:`planner.ilp.keep_running_jobs`): a changed config is a
preemption with a restart cost, an unchanged one is not. ``PlannerParams.restart_penalty`` prices
every move of a running job (another node, class or GPU count) with one restart: its other configs
keep (1 - penalty) of their gain.

If the solver finds no integer solution in the time limit (or fails), the round still gets a plan: the
best incumbent when there is one (``fallback="incumbent"``), else the previous plan's placements that
still fit (``"previous"``), else the greedy λ → ∞ plan (``"greedy"``); diagnostics say which.

Running jobs that a round may not move (:mod:`planner.moves`: inside ``min_run_time``, at their declared
samples, or with less left to run than a requeue costs them) keep their GPUs and the round plans the
others around them; every other move of a running job is priced by what that job's restart and lost
work cost against the time it saves over its remaining work, and a move that does not pay is not a
candidate; every candidate of a running job is worth (1 + ``preempt_penalty``) of its gain, so a waiting
job takes its GPUs only when it is worth that much more (docs/design.md, "Moves that pay").

Exploration (:mod:`planner.explore`, ``PlannerParams.explore``): after the solve, a placed job may be
moved to a config of the same GPU count that no record has measured, on GPUs the plan leaves idle, when
its optimistic estimate beats the planned rate (priced like a move for a running job); diagnostics
``explored`` names each with why.

Diagnostics keys: queue, priorities, window, window_size, fillers, running, held, unservable, explored,
swapped, kept_from_take_back, grown, lambda, objective, bound, gap, solve_time, time_limit_hit, status, fallback, formulation, solver,
n_vars, n_int_vars, n_constraints, plan_of_round, fragment, candidates, entity_classes, method, solve_extra
(the compact solve's signatures, columns in the model, pricing rounds, dives and LP bound).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from planner.affinity import affine, drop_slow
from planner.backfill import fillers, reservation
from planner.displace import solve_without_displacing
from planner.candidates import candidates_for
from planner.compact import gc_paused
from planner.eligible import confine, eligibility_classes
from planner.entities import entity_classes
from planner.explore import explore_idle
from planner.explore_estimate import capped
from planner.explore_types import masked, remember
from planner.fraggrow import grow_into_fragments
from planner.fragfill import swap_for_fragments
from planner.fragsplit import keep_splittable
from planner.greedy import fill_leftovers, greedy_plan
from planner.move_back import Departures, drop_returns, no_return_explore, observe
from planner.move_toll import tolled, weigh_kept
from planner.move_gain import drop_small_moves
from planner.moves import hold_in_place
from planner.ilp import Candidate, Solution, keep_running_jobs, objective_of, signature, solve_compact, solve_plain
from planner.growth import discount_growth
from planner.jct_gain import efficiency_gains, remaining_weights, saturated
from planner.keep_shorter import premium_shorter
from planner.params import PlannerParams
from planner.requeue_price import requeue_priors
from planner.reserve import head_reservation, hold_for_head, idle_now, late_jobs, overrides, overriding_weights
from planner.priorities import default_lambda, priorities, queue_order, weights
from planner.stages import StageTimer, run_stages
from planner.take_back import Displaced, forget_pairs, forget_stale, keep_started, note_requeues
from planner.servable import Servability
from planner.settle import drop_moves, settled
from planner.span_limit import drop_wide, narrow
from planner.stretch import stretch_priors
from planner.views import ClusterView, Config, JobView, NodeView, Plan, Policy, freeze_config
from planner.window import Window, select

log = logging.getLogger(__name__)

#: solves per round plan at most: the first, then, if it moved a running job to an equivalent
#: placement, again with every running job's current signature pinned to the nodes it holds
PIN_PASSES = 2


#: what of the compact solve's extras a plan's diagnostics carry (``solve_extra``)
SOLVE_EXTRA = ("signatures", "columns", "pricing_rounds", "dives", "lp_bound")

def fits(assignments: Mapping[str, Config | None], capacity: Mapping[str, int]) -> bool:
    used: dict[str, int] = {}
    for cfg in assignments.values():
        for n, g in (cfg or {}).items():
            used[n] = used.get(n, 0) + g
    return all(n in capacity and g <= capacity[n] for n, g in used.items())


class HopsPolicy(Policy):
    """Hops (SoCC '24 §3.6) behind the shared :class:`~planner.views.Policy` interface."""

    name = "hops"
    supports_fragment_plans = True
    fragment_context = True  # its backfill step reads when running jobs end (planner.backfill)

    def __init__(self, params: PlannerParams | None = None, timer: StageTimer | None = None) -> None:
        self.params = params or PlannerParams()
        #: times each stage of a planning (:data:`PLAN_STAGES`), when the caller wants them timed: the live
        #: engine sets one that records into its metrics (planner/ itself reads no clock)
        self.timer = timer
        self._previous: dict[str, Config] = {}
        self._plan_of_round = 0
        #: GPUs per node the previous round's plan left idle (planner.explore: idle for a whole round)
        self._idle_before: dict[str, int] | None = None
        #: queue heads started with planner.reserve's overriding weight (or by a fragment plan when a round plan
        #: would have), while they run
        self._protected: set[str] = set()
        #: job id -> the GPU types it has run on (planner.explore_types, with ``explore_types_once``)
        self._ran_on: dict[str, frozenset[str]] = {}
        #: job id -> the GPU types it ran on when last seen and when it left others (planner.move_back)
        self._left: Departures = {}
        #: which jobs no configuration serves, judged once per job and cluster shape (planner.servable)
        self._servability = Servability()
        #: requeued job id -> the jobs a round plan started on its GPUs (planner.take_back)
        self._displaced: Displaced = {}
        #: pair of jobs -> how many times a round plan requeued one of them for the other (planner.take_back)
        self._turns: dict[frozenset[str], int] = {}

    @property
    def lambda_(self) -> float:
        p = self.params
        return p.lambda_ if p.lambda_ is not None else default_lambda(p.priority)

    def plan(self, cluster: ClusterView, jobs: tuple[JobView, ...], now: float, *, fragment: bool = False) -> Plan:
        """One planning: :data:`PLAN_STAGES` in order over a :class:`PlanState` (each timed by
        :attr:`timer` when one is set)."""
        self._plan_of_round = self._plan_of_round + 1 if fragment else 0
        if self.params.wait_offset:  # a measurement of the planner's own noise (docs/results/table4-targets.md)
            jobs = tuple(dataclasses.replace(j, wait=j.wait + self.params.wait_offset) for j in jobs)
        with gc_paused():  # a planning's many small objects form no cycles (planner.compact.gc_paused)
            state = run_stages(PLAN_STAGES, PlanState(self, cluster, jobs, now, fragment), self.timer)
        return Plan(assignments=state.assignments, diagnostics=state.diagnostics)

    def _backfill(self, queue: Sequence[JobView], window: Sequence[JobView], planned: list[JobView],
                  cands: list[Candidate], cluster: ClusterView, keeping: Sequence[JobView], now: float) -> list[str]:
        """Backfill behind the window (:mod:`planner.backfill`): when a window job has no candidate on this
        planning's GPUs, jobs behind the window that do not delay it join ``planned`` and ``cands`` (in
        place) with the configs they may take; their ids."""
        p = self.params
        have = {c.job_id for c in cands}
        head = next((j for j in window if j.job_id not in have), None)
        in_window = {j.job_id for j in window}
        rest = [j for j in queue if j.job_id not in in_window]
        if head is None or not rest:
            return []
        res = reservation(head, confine(cluster, head), keeping, now)
        extra = fillers(rest, res, cluster, now,
                        lambda j: candidates_for([j], cluster, p.sigma, compact=p.formulation == "compact",
                                                 spans=p.spans))
        added = [j for j in rest if j.job_id in extra]
        planned.extend(added)
        for j in added:
            cands.extend(extra[j.job_id])
        return [j.job_id for j in added]

    def _unservable(self, cluster: ClusterView, jobs: Sequence[JobView], sigma: float) -> dict[str, str]:
        """Job id -> why no configuration on this cluster serves it (:class:`planner.servable.Servability`)."""
        return self._servability.judge(cluster, jobs, sigma)

    def _solve(self, cands: list[Candidate], w: dict[str, float], cluster: ClusterView,
               current: dict[str, Config]) -> Solution:
        p = self.params
        try:
            if p.formulation == "plain":
                return solve_plain(cands, w, {n.name: n.free_gpus for n in cluster.nodes},
                                   solver=p.solver, gap=p.gap, time_limit=p.time_limit, node_limit=int(p.node_limit))
            # a running job that the plan moves to an equivalent placement (same classes and GPU
            # counts elsewhere: a restart for nothing): solve again with running jobs pinned to the
            # nodes they hold (their other signatures stay open, priced by restart_penalty)
            pin: frozenset[str] = frozenset()
            by_name = {n.name: n for n in cluster.nodes}
            for _ in range(PIN_PASSES if p.pin_running else 1):
                sol = solve_compact(cands, w, cluster.nodes, solver=p.solver, gap=p.gap, time_limit=p.time_limit,
                                    current=current, node_limit=int(p.node_limit), pin=pin, columns=p.columns)
                moved_equal = {j for j, cur in current.items()
                               if (cfg := sol.assignments.get(j)) and dict(cfg) != dict(cur)
                               and all(n in by_name for n in cur)
                               and signature(cfg, by_name) == signature(cur, by_name)} - pin
                if not moved_equal or sol.status == "none":
                    break
                # pinning only the movers lets others move in their place: pin every running job
                pin = frozenset(current)
            sol.extra["pinned_jobs"] = len(pin)
            return sol
        except Exception as exc:  # a solver crash must not cost the round its plan
            log.warning("planner: %s solve failed (%s); falling back", p.solver, exc)
            return Solution({}, None, None, None, "none", 0.0, 0, 0, 0, p.formulation, p.solver,
                            extra={"error": str(exc)})

    def _previous_that_fits(self, order: list[str], cands: list[Candidate], capacity: dict[str, int],
                            cluster: ClusterView) -> dict[str, Config | None]:
        by_name = {n.name: n for n in cluster.nodes}
        known = {(c.job_id, signature(c.config, by_name)) for c in cands}
        left = dict(capacity)
        out: dict[str, Config | None] = {}
        for job_id in order:
            cfg = self._previous.get(job_id)
            if cfg and all(left.get(n, 0) >= g for n, g in cfg.items()) \
                    and all(n in by_name for n in cfg) and (job_id, signature(cfg, by_name)) in known:
                for n, g in cfg.items():
                    left[n] -= g
                out[job_id] = cfg
        return out


# ----- the planning as named stages ------------------------------------------------------------------


@dataclass
class PlanState:
    """What one planning knows, stage by stage (:data:`PLAN_STAGES`). ``cluster`` is the cluster the
    planning places on: less the GPUs of held jobs after ``in_place``, refined node classes after ``classes``."""

    policy: HopsPolicy
    cluster: ClusterView
    jobs: tuple[JobView, ...]
    now: float
    fragment: bool
    live: tuple[JobView, ...] = ()  # servable, and neither held nor a fragment plan's running context
    unservable: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)
    #: jobs that keep their GPUs through this planning: a fragment plan's running jobs (context only,
    #: never placed), a round plan's held ones; the backfill stage reads when they end
    keeping: list[JobView] = field(default_factory=list)
    prios: dict[str, float] = field(default_factory=dict)
    running: list[JobView] = field(default_factory=list)
    queue: list[JobView] = field(default_factory=list)
    window: Window = field(default_factory=lambda: Window(jobs=(), size=0, fillers=()))
    planned: list[JobView] = field(default_factory=list)
    cands: list[Candidate] = field(default_factory=list)
    backfilled: list[str] = field(default_factory=list)
    #: the queue head that outweighs every other job (planner.reserve): a round plan starts it by preemption,
    #: a fragment plan that starts it on idle GPUs protects it as a round plan's (``protect_fragment_heads``)
    reserved: str = ""
    held_type: str = ""  # the GPU type of the queue head's reservation (planner.reserve), "" when none
    grown: dict[str, int] = field(default_factory=dict)  # running jobs grown into fragments (planner.fraggrow)
    best: dict[str, float] = field(default_factory=dict)  # waiting job id -> its best rate (planner.affinity)
    w: dict[str, float] = field(default_factory=dict)
    capacity: dict[str, int] = field(default_factory=dict)
    current: dict[str, Config] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    sig_nodes: tuple[NodeView, ...] | None = None  # compact: greedy and fill may move a signature's nodes
    sol: Solution | None = None
    fallback: str | None = None
    chosen: dict[str, Config | None] = field(default_factory=dict)
    extra_gain: float = 0.0  # what filling leftovers added to the solver's objective
    explored: dict[str, str] = field(default_factory=dict)
    swapped: dict[str, str] = field(default_factory=dict)  # waiting job id -> the job it displaced (fragfill)
    kept_back: dict[str, str] = field(default_factory=dict)  # started job id -> the requeued job kept off its GPUs
    assignments: dict[str, Config | None] = field(default_factory=dict)
    diagnostics: dict[str, object] = field(default_factory=dict)

    @property
    def solution(self) -> Solution:
        assert self.sol is not None, "the solve stage runs first"
        return self.sol


def _unservable(s: PlanState) -> None:
    """Jobs no configuration on this cluster serves leave the planning (:meth:`HopsPolicy._unservable`)."""
    s.unservable = s.policy._unservable(s.cluster, s.jobs, s.policy.params.sigma)
    s.live = tuple(j for j in s.jobs if j.job_id not in s.unservable)


def _in_place(s: PlanState) -> None:
    """A fragment plan's running jobs are context only; a round plan's running jobs that may not move
    (planner.moves) are held and planned around (:func:`planner.moves.hold_in_place`)."""
    p = s.policy.params
    if p.return_time > 0.0:  # the GPU types each job has left, and when (planner.move_back)
        observe(s.policy._left, s.jobs, s.cluster, s.now, prune=not s.fragment)
    if s.fragment:
        s.keeping = [j for j in s.live if j.current]
        s.live = tuple(j for j in s.live if not j.current)
        return
    s.cluster, s.held = hold_in_place(s.cluster, s.live, p.min_run_time, p.min_run_growth, p.sigma)
    s.keeping = [j for j in s.live if j.job_id in s.held]
    s.live = tuple(j for j in s.live if j.job_id not in s.held)


def _priorities(s: PlanState) -> None:
    p = s.policy.params
    s.prios = priorities(s.live, s.now, p.priority, s.cluster.total_gpus, fairshare_weight=p.fairshare_weight)
    s.running = [j for j in s.live if j.current and not s.fragment]


def _window(s: PlanState) -> None:
    """The service window (planner.window) and the jobs planned, highest priority first."""
    p = s.policy.params
    gpus = s.cluster.free_gpus
    if p.window == "active":  # the earlier reading: the window cut from every active job
        s.queue = queue_order(s.live, s.prios)
        s.window = select(s.queue, gpus, rule="waiting", fragment=s.fragment, adjust=p.sensitivity_adjustment)
        planned = list(s.window.jobs)
    else:  # the paper's: the window over the waiting queue, running jobs always planned
        s.queue = queue_order([j for j in s.live if not j.current], s.prios)
        cut = affine(s.queue, s.cluster, p.sigma, p.fragment_affinity, s.best) \
            if s.fragment and p.fragment_affinity > 0.0 else s.queue  # jobs the idle GPUs suit (planner.affinity)
        if s.fragment and p.fragment_span_limit > 0:  # no wide job on scraps (planner.span_limit)
            cut = narrow(cut, s.cluster, p.fragment_span_limit, p.fragment_span_after)
        s.window = select(cut, gpus, rule=p.window, fragment=s.fragment, adjust=p.sensitivity_adjustment)
        planned = queue_order(s.running, s.prios) + list(s.window.jobs)
    s.planned = queue_order(planned, s.prios)  # highest priority first: entity probes, greedy fallbacks


def _classes(s: PlanState) -> None:
    """Node classes refined by estimated speed (planner.entities) and by the nodes jobs may use."""
    s.cluster = entity_classes(s.cluster, s.planned, s.policy.params.entity_tolerance)
    s.cluster = eligibility_classes(s.cluster, s.live)  # jobs allowed different nodes never share a class


def _candidates(s: PlanState) -> None:
    p = s.policy.params
    # idle_moves: unsaturated round plans price moves by their restart and lost work only (planner.jct_gain)
    free = s.fragment or (p.idle_moves and not saturated(s.live, s.cluster.free_gpus))
    planned = tolled(s.planned, p.move_toll) if p.move_toll > 0.0 and not s.fragment else s.planned
    s.cands = candidates_for(planned, s.cluster, p.sigma, compact=p.formulation == "compact",
                             restart_penalty=0.0 if free else p.restart_penalty, priced=not s.fragment,
                             preempt_penalty=p.preempt_penalty, spans=p.spans)
    if p.fragment_span_limit > 0 and s.fragment:  # wide jobs not started on scraps (planner.span_limit)
        s.cands = drop_wide(s.cands, s.planned, p.fragment_span_limit, p.fragment_span_after)
    if p.requeue_toll > 0.0 and not s.fragment:  # earlier preemptions make a requeue dearer (planner.move_toll)
        s.cands = weigh_kept(s.cands, s.running, p.requeue_toll)
    if p.return_time > 0.0 and not s.fragment:  # no quick move back (planner.move_back)
        s.cands = drop_returns(s.cands, s.running, s.cluster, s.policy._left, s.now, p.return_time)
    if p.settle_time > 0.0 and not s.fragment:  # jobs placed a short while ago are not moved (planner.settle)
        s.cands = drop_moves(s.cands, s.running, s.cluster, p.settle_time)
    if p.move_gain > 0.0 and not s.fragment:  # moves of small gain are not made (planner.move_gain)
        s.cands = drop_small_moves(s.cands, s.running, s.cluster, p.move_gain)


def _backfill(s: PlanState) -> None:
    if s.policy.params.backfill:
        s.backfilled = s.policy._backfill(s.queue, s.window.jobs, s.planned, s.cands, s.cluster, s.keeping, s.now)
    if s.policy.params.head_reservation:  # the queue head's reservation against the other waiting jobs
        idle = s.cluster if s.fragment else idle_now(s.cluster, s.running)
        p = s.policy.params  # with a bound, none for a head shorter than the minimum run time (planner.reserve)
        res = head_reservation(s.queue, idle, s.keeping + s.running, s.now, p.reserve_after,
                               shortest=p.min_run_time if p.reserve_bound > 0 else 0.0)
        if res is not None:
            s.cands = hold_for_head(res, s.cands, s.planned, s.cluster, s.now)
            s.held_type = res.gpu_type
            # the head a round plan starts by preemption; a fragment plan protects it once it starts it (planner.reserve)
            starts_now = p.head_override and overrides(res, s.queue[0], s.now, p.reserve_bound)
            s.reserved = res.job_id if starts_now and (not s.fragment or p.protect_fragment_heads) else ""
    if s.fragment and s.policy.params.fragment_affinity > 0.0:  # configs the idle GPUs suit (planner.affinity)
        s.cands = drop_slow(s.cands, s.planned, s.cluster, s.policy.params.sigma, s.policy.params.fragment_affinity,
                            s.best)


def _weights(s: PlanState) -> None:
    """Weights (prior + bias)^λ, and what the solve and its fallbacks place on."""
    p = s.policy.params
    prior = {j.job_id: s.prios[j.job_id] for j in s.planned}
    if p.requeue_price > 0.0 and p.priority == "lr" and not s.fragment:  # a requeue priced (planner.requeue_price)
        prior = requeue_priors(prior, s.running, s.keeping, p.min_run_time, p.requeue_price)
    s.w = weights(stretch_priors(prior) if p.stretch_weights and p.priority == "lr" else prior, s.policy.lambda_)
    if p.remaining_weight > 0.0:  # shortest remaining work first within eq. 11 (planner.jct_gain)
        s.w = remaining_weights(s.w, s.planned, p.remaining_weight, s.cands if p.remaining_basis == "slowest" else None)
    if p.gpu_efficiency > 0.0 and saturated(s.live, s.cluster.free_gpus):  # gains per GPU (planner.jct_gain)
        s.cands = efficiency_gains(s.cands, p.gpu_efficiency)
    if p.keep_shorter > 0.0 and not s.fragment:  # against waiting peers with more work left (planner.keep_shorter)
        s.w = premium_shorter(s.w, s.live, s.held, p.keep_shorter)
    if p.growth_discount > 0.0 and saturated(s.live, s.cluster.free_gpus):  # a start over extra GPUs (planner.growth)
        s.cands = discount_growth(s.cands, {n.name: n.gpu_type for n in s.cluster.nodes}, p.growth_discount)
    if p.head_reservation and not s.fragment:  # the reserved head and those started so before (planner.reserve)
        late = late_jobs(s.running, p.protect_after, s.queue[0] if s.reserved else None)
        protected = s.policy._protected | late
        s.w.update(overriding_weights(s.reserved, protected & set(s.w), s.cands, s.w))
    s.capacity = {n.name: n.free_gpus for n in s.cluster.nodes}
    s.current = {j.job_id: j.current for j in s.planned if j.current}
    s.order = [j.job_id for j in s.planned]
    # compact candidates stand for every interchangeable placement: greedy and fill may move them
    s.sig_nodes = s.cluster.nodes if s.policy.params.formulation == "compact" else None


def _solve(s: PlanState) -> None:
    young = s.policy.params.young_moves
    if young > 0.0 and not s.fragment:  # no displacing moves of young jobs (planner.displace)
        s.sol, s.cands = solve_without_displacing(lambda c: s.policy._solve(c, s.w, s.cluster, s.current), s.cands,
                                                  s.running, s.cluster, young)
        return
    s.sol = s.policy._solve(s.cands, s.w, s.cluster, s.current)


def _fallback(s: PlanState) -> None:
    """The solver's plan, else the fallback ladder: incumbent, the previous plan's placements that still
    fit, the greedy plan."""
    sol = s.solution
    if sol.status == "optimal":
        s.chosen = dict(sol.assignments)
    elif sol.status == "feasible":
        s.chosen, s.fallback = dict(sol.assignments), "incumbent"
    else:
        prev = s.policy._previous_that_fits(s.order, s.cands, s.capacity, s.cluster)
        if prev:
            s.chosen, s.fallback = prev, "previous"
        else:
            s.chosen, s.fallback = greedy_plan(s.order, s.cands, s.capacity, s.sig_nodes), "greedy"


def _fill(s: PlanState) -> None:
    """The solver's plan (or its incumbent) with the GPUs it leaves idle filled (planner.greedy)."""
    if s.fallback in (None, "incumbent"):
        filled = fill_leftovers(s.chosen, s.order, s.cands, s.capacity, s.sig_nodes)
        s.extra_gain = objective_of({j: c for j, c in filled.items() if not s.chosen.get(j)}, s.cands, s.w,
                                    s.sig_nodes)
        s.chosen = filled


def _explore(s: PlanState) -> None:
    """Configs no record measured, on GPUs the plan leaves idle (planner.explore)."""
    if s.policy.params.explore:  # jobs placed a short while ago are not moved (planner.settle)
        jobs = settled(s.planned, s.policy.params.settle_time)
        if s.policy.params.explore_types_once:  # explore a GPU type once by moves (planner.explore_types)
            remember(s.policy._ran_on, s.jobs, s.cluster, prune=not s.fragment)
            jobs = masked(jobs, s.policy._ran_on, s.cluster)
        if s.policy.params.explore_estimate:  # across servers at the estimate (planner.explore_estimate)
            jobs = capped(jobs)
        if s.policy.params.return_time > 0.0:  # no quick move back (planner.move_back)
            jobs = no_return_explore(jobs, s.cluster, s.policy._left, s.now, s.policy.params.return_time)
        if s.policy.params.move_toll > 0.0:  # earlier preemptions make a move dearer (planner.move_toll)
            jobs = tolled(jobs, s.policy.params.move_toll)
        s.chosen, s.explored = explore_idle(s.chosen, jobs, s.cluster, s.capacity, s.policy.params.sigma,
                                            s.policy._idle_before, move_running=s.policy.params.explore_moves,
                                            move_spanning=s.policy.params.explore_spanning,
                                            scaling=s.policy.params.explore_scaling,
                                            floor=s.policy.params.explore_floor, room=s.policy.params.explore_room)


def _fits(s: PlanState) -> None:
    """Defensive: never hand out more GPUs than a node has."""
    if not fits(s.chosen, s.capacity):
        log.error("planner: solution over-allocates a node; using the greedy plan instead")
        s.chosen, s.fallback = greedy_plan(s.order, s.cands, s.capacity, s.sig_nodes), "greedy"


def _same_nodes(s: PlanState) -> None:
    """A running job moved to an equivalent config (same classes and GPU counts: the same throughput)
    would pay a restart for nothing: the same signatures re-mapped so running jobs stay on their nodes."""
    if s.current:
        s.chosen = keep_running_jobs(s.chosen, s.cluster.nodes, s.current)


def _swaps(s: PlanState) -> None:
    """Round plans: a waiting job that also fills idle GPUs takes a placed job's (planner.fragfill); then,
    with ``split_spans``, every planning's placements as Slurm splits them (planner.fragsplit)."""
    p = s.policy.params
    if not s.fragment and (p.fragment_swaps or p.fragment_moves or p.fragment_fill):
        s.chosen, s.swapped = swap_for_fragments(s.chosen, s.planned, s.cands, s.w, s.cluster, s.capacity,
                                                 p.sigma, p.preempt_penalty, requeue=p.fragment_swaps,
                                                 relocate=p.fragment_moves, fill=p.fragment_fill,
                                                 shorter=p.swap_shorter, narrow=p.swap_narrow,
                                                 soonest=p.swap_soonest, back=p.swap_back)
    if p.fragment_growth > 0.0 and not s.fragment:  # running jobs grown into idle GPUs (planner.fraggrow)
        s.chosen, s.grown = grow_into_fragments(s.chosen, s.planned, s.queue, s.cluster, s.capacity, p.sigma,
                                                p.fragment_growth, s.held_type)
    if p.split_spans:  # placements Slurm would not split as planned (planner.fragsplit), every planning
        s.chosen, _ = keep_splittable(s.chosen, [j.job_id for j in s.jobs], s.capacity, s.current,
                                      {j.job_id: j.throughput for j in s.planned}, s.cluster)


def _take_back(s: PlanState) -> None:
    """Round plans: a requeued job does not take its GPUs back from the job started on them (planner.take_back)."""
    if s.fragment or not s.policy.params.no_take_back:
        return
    forget_stale(s.policy._displaced, s.jobs)
    forget_pairs(s.policy._turns, s.jobs)
    s.chosen, s.kept_back = keep_started(s.policy._displaced, s.chosen, s.held, lambda c: fits(c, s.capacity),
                                         s.policy._turns)


def _outcome(s: PlanState) -> None:
    """The assignments (held jobs on their GPUs), what the next round remembers, the diagnostics."""
    policy, sol = s.policy, s.solution
    idle_now = dict(s.capacity)  # capacity leaves out held jobs' GPUs: what this plan leaves idle
    for cfg in s.chosen.values():
        for n, g in (cfg or {}).items():
            idle_now[n] = idle_now.get(n, 0) - g
    idle_now = {n: max(0, g) for n, g in idle_now.items()}
    solved = s.fallback in (None, "incumbent")
    # the solver's value for its own solution (the compact model may realise a signature on other
    # interchangeable nodes than the candidate standing for it); eq. 11 recomputed for fallbacks (over
    # the jobs planned: the held ones, added next, have no weight)
    objective = (sol.objective or 0.0) + s.extra_gain if solved else objective_of(s.chosen, s.cands, s.w, s.sig_nodes)
    s.chosen.update({j.job_id: freeze_config(j.current) for j in s.jobs if j.job_id in s.held and j.current})
    s.assignments = {j.job_id: s.chosen.get(j.job_id) for j in s.jobs if not (s.fragment and j.current)}
    if not s.fragment:
        policy._previous = {j: c for j, c in s.assignments.items() if c}
        policy._idle_before = idle_now
        policy._protected = {j for j in policy._protected | {s.reserved} if j and s.assignments.get(j)}
        if policy.params.no_take_back:  # who this plan requeued for whom (planner.take_back)
            note_requeues(policy._displaced, s.running, s.planned, s.assignments, policy._turns)
    elif s.reserved and s.assignments.get(s.reserved):  # a starved head started on idle GPUs (planner.reserve)
        policy._protected.add(s.reserved)
    s.diagnostics = {
        "queue": [j.job_id for j in s.queue],
        "priorities": s.prios,
        "window": [j.job_id for j in s.window.jobs],
        "window_size": s.window.size,
        "fillers": list(s.window.fillers),
        "backfilled": s.backfilled,
        "running": [j.job_id for j in s.running],
        "in_place": dict(s.held),  # running jobs held in place (planner.moves: why each)
        "unservable": dict(s.unservable),
        "explored": s.explored,
        "swapped": s.swapped,
        "kept_from_take_back": s.kept_back,
        "grown": s.grown,
        "entity_classes": len({(n.gpu_type, n.server_class) for n in s.cluster.nodes}),
        "time_limit_hit": bool(sol.extra.get("time_limit_hit")),
        "lambda": policy.lambda_,
        "objective": objective,
        "bound": sol.bound,
        "gap": sol.gap if solved else None,
        "solve_time": sol.solve_time,
        "status": sol.status,
        "fallback": s.fallback,
        "formulation": sol.formulation,
        "solver": sol.solver,
        "n_vars": sol.n_vars,
        "n_int_vars": sol.n_int_vars,
        "n_constraints": sol.n_constraints,
        "plan_of_round": policy._plan_of_round,
        "fragment": s.fragment,
        "candidates": len(s.cands),
        "method": sol.extra.get("method"),
        "solve_extra": {k: v for k, v in sol.extra.items() if k in SOLVE_EXTRA},
    }


#: one planning of :class:`HopsPolicy`, stage by stage (each timed under ``cycle="plan"`` by the live
#: engine: :mod:`hops_slurm.engine.exporter`)
PLAN_STAGES: tuple[tuple[str, Callable[[PlanState], None]], ...] = (
    ("unservable", _unservable), ("in_place", _in_place), ("priorities", _priorities), ("window", _window),
    ("classes", _classes), ("candidates", _candidates), ("backfill", _backfill), ("weights", _weights),
    ("solve", _solve), ("fallback", _fallback), ("fill", _fill), ("explore", _explore), ("fits", _fits),
    ("same_nodes", _same_nodes), ("swaps", _swaps), ("take_back", _take_back), ("outcome", _outcome))
