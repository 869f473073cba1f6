"""Fragment swaps: a round plan may preempt a running job when the job that takes its GPUs also fills idle ones.

Where it sits: a step of :meth:`planner.hops.HopsPolicy.plan`, in round plans only, after the solve and
the mapping that keeps running jobs on their nodes, before the plan's idle GPUs are counted. Pure: job
views, weights and candidate gains in, assignments out.

Why (docs/design.md, "Fragment swaps"): every candidate of a running job is worth
``1 + preempt_penalty`` of its gain (:mod:`planner.moves`), a hysteresis against swapping one job for
another of about the same worth. It also keeps GPUs idle: when the waiting job at the head of the queue
needs 9 GPUs and 5 are idle, it needs a running job's GPUs too, and the premium protects that job even
when the swap would put the 5 idle GPUs to work. Those are the fragments the paper counts (idle GPUs
while a job waits, Avg.frag) and that no waiting job fits, so no fragment plan and no sensitivity
adjustment can fill them. A swap that fills idle GPUs is not the churn the premium is there for: the
cluster does more work after it. So, for the highest-priority waiting jobs the plan leaves out, in
queue order: find a placed job whose GPUs, with the idle ones, hold a config of the waiting job that
uses more GPUs than the placed job gives up (the swap fills at least one idle GPU; a waiting job that
fits the idle GPUs alone is left to the fragment plans) and whose weighted
gain beats the placed job's weighted gain *without* the premium (eq. 11 as printed still rises); take
the one of lowest weighted gain, swap, and go on with the GPUs left idle. A placed job that the plan
starts (not running yet) costs no preemption and is swapped by the same rule.

Moves instead of requeues (``relocate``, the parameter ``fragment_moves``): the placed job a swap
displaces keeps running when a config of it fits the GPUs still idle after the swap (say a 16-GPU job
needs the 4 GPUs of a job on a type with 12 idle, and the 4-GPU job fits idle GPUs of another type):
it is moved there, a move rather than a requeue, when that move pays for itself: the moved job's
remaining work ends no later there, its restart and lost work paid (:func:`planner.moves.move_price`;
a job the plan only starts must get at least its planned rate). Such a swap costs the displaced job
nothing and starts the waiting one on GPUs that were idle, so it is made for any waiting job the plan
left out (eq. 11 without the premium rises by the waiting job's gain). Moves to slower GPUs were tried
and dropped: on Table 4 they gave back avg JCT (docs/results/fragments.md). With ``fragment_swaps`` off,
``fragment_moves`` makes only such swaps (nobody is requeued for a fragment); with both on, a swap moves
the displaced job when it can and requeues it otherwise. A job held in place is never displaced; fragment plans never swap.

Fill swaps (``fill``, the parameter ``fragment_fill``): a swap is also made, whatever the two jobs'
weights, when the waiting job puts at least as many idle GPUs to work as it takes from the displaced
job (its config holds at least twice the displaced job's GPUs: :func:`fills_enough`). Why
(docs/results/fragments.md, the classes of Table 4's fragments): most idle GPUs left while jobs wait
are ones a waiting wide job would fill with one running job's GPUs added, and eq. 11 refuses that swap
even without the premium because a job that has just arrived has a latency ratio near 0 (a 16-GPU job
arriving at a full cluster with 13 GPUs of its type idle; the last wide jobs of a run). Such a swap at
least doubles the GPUs at work on those GPUs, and the displaced job is back in the queue for the
fragment plans of the same round.

Narrower swaps (:mod:`planner.swap_order`; ``swap_narrow`` and ``swap_back`` = 3600 s on by default, the others off): ``swap_shorter`` requeues only for a
waiting job that ends first; ``swap_narrow`` displaces the placed job of fewest GPUs that makes the swap,
``swap_soonest`` the one expected back on GPUs first (before worth); ``swap_back`` requeues only a job
expected back on GPUs within that many seconds.

Bounded: at most :data:`MAX_WAITING` waiting jobs are looked at per planning; placed jobs are tried
lowest weighted gain first and the search stops at the first that makes a swap; a placed job is tried
only when it holds GPUs of a type with idle GPUs, the waiting job's smallest request fits those plus its
GPUs and the waiting job can use more GPUs than it holds; its configs are generated on those GPUs only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planner.configs import generate_configs
from planner.moves import move_price, remaining_seconds
from planner.signatures import Candidate, signature
from planner.swap_order import RestartWaits, finishes_first
from planner.views import ClusterView, Config, JobView, NodeView, config_gpus

#: waiting jobs the plan left out that are looked at per planning, highest priority first
MAX_WAITING = 16


def _rate(job: JobView, config: Config) -> float:
    try:
        return max(float(job.throughput(config)), 0.0)
    except Exception:  # noqa: BLE001 - no estimate there: no swap there
        return 0.0


def _lowest_rate(job: JobView, cands: Sequence[Candidate]) -> float | None:
    """The throughput that G = 1 stands for with this job (G = throughput / its smallest candidate's)."""
    for c in cands:
        if c.job_id == job.job_id and c.gain > 0.0:
            thr = _rate(job, c.config)
            if thr > 0.0:
                return thr / c.gain
    return None


#: the share of its rate a displaced job must keep where it is moved: all of it (the move pays for itself)
PAYS = 1.0 - 1e-9


def _moved_share(job: JobView, now_cfg: Config, rate_now: float, new_cfg: Config) -> float:
    """The share of its gain where it is now that ``job`` keeps on ``new_cfg``: the rate there over the rate
    now, a running job's restart and lost work paid (its effective rate over its remaining work)."""
    thr = _rate(job, new_cfg)
    if thr <= 0.0 or rate_now <= 0.0:
        return 0.0
    if not job.current or dict(job.current) != dict(now_cfg):
        return thr / rate_now  # only started by this plan: no restart to pay
    stay = remaining_seconds(job, rate_now)
    price = move_price(job, rate_now, thr)
    if stay is None or stay <= 0.0 or price.saves == float("-inf"):
        return 0.0
    move = stay - price.saves  # the seconds its remaining work takes after the move, restart included
    return min(stay / move, thr / rate_now) if move > 0.0 else 0.0


def _relocation(job: JobView, now_cfg: Config, idle: Mapping[str, int], cluster: ClusterView,
                sigma: float) -> tuple[float, Config] | None:
    """The config of ``job`` on the ``idle`` GPUs where it keeps the largest share of its gain, with that share
    (:func:`_moved_share`); None when no config there keeps all of it (:data:`PAYS`)."""
    view = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus, idle.get(n.name, 0))
                             for n in cluster.nodes))
    if not view.free_gpus or job.requirements[0] > view.free_gpus:
        return None
    rate_now = _rate(job, now_cfg)
    best: tuple[float, Config] | None = None
    for cfg in generate_configs(job, view, sigma):
        if dict(cfg) == dict(now_cfg):
            continue
        share = _moved_share(job, now_cfg, rate_now, cfg)
        if share >= PAYS and (best is None or share > best[0]):
            best = (share, cfg)
    return best


def fills_enough(config: Config, held: int) -> bool:
    """Whether a waiting job on ``config`` puts at least as many idle GPUs to work as the ``held`` GPUs it
    takes from the job it displaces (a fill swap, ``fragment_fill``)."""
    return held > 0 and config_gpus(config) - held >= held


def swap_for_fragments(chosen: Mapping[str, Config | None], planned: Sequence[JobView], cands: Sequence[Candidate],
                       weights: Mapping[str, float], cluster: ClusterView, capacity: Mapping[str, int],
                       sigma: float, preempt_penalty: float, *, requeue: bool = True,
                       relocate: bool = False, fill: bool = False,
                       shorter: float = 0.0, narrow: bool = False, soonest: bool = False,
                       back: float = 0.0) -> tuple[dict[str, Config | None], dict[str, str]]:
    """``chosen`` with the fragment swaps of the module docstring made, and the swaps (waiting job id ->
    the id of the job it displaced). ``planned``: the planning's jobs in priority order; ``capacity``:
    the GPUs per node the planning distributes (jobs held in place excluded). ``requeue``: a displaced job
    may be left out of the plan (``fragment_swaps``); ``relocate``: it may be moved to GPUs still idle
    (``fragment_moves``); ``fill``: it may be left out of the plan for a fill swap (``fragment_fill``);
    ``shorter``: with ``requeue``, only when the waiting job ends first (``swap_shorter``, :mod:`planner.swap_order`);
    ``narrow``: the placed job of fewest GPUs is displaced first, then the lowest worth (``swap_narrow``);
    ``soonest``: the placed job expected back on GPUs first, before that (``swap_soonest``); ``back``: with
    ``requeue``, only a placed job expected back on GPUs within that many seconds (``swap_back``; 0 = any)."""
    out: dict[str, Config | None] = dict(chosen)
    idle = dict(capacity)
    for cfg in out.values():
        for n, g in (cfg or {}).items():
            idle[n] = idle.get(n, 0) - g
    idle = {n: max(0, g) for n, g in idle.items()}
    jobs = {j.job_id: j for j in planned}
    waiting = [j for j in planned if not j.current and not out.get(j.job_id)][:MAX_WAITING]
    if not any(idle.values()) or not waiting:
        return out, {}
    by_name = {n.name: n for n in cluster.nodes}
    gain: dict[tuple[str, object], float] = {}  # (job, signature) -> its best candidate gain
    for c in cands:
        key = (c.job_id, signature(c.config, by_name))
        gain[key] = max(gain.get(key, 0.0), c.gain)
    largest = {t: max(cluster.nodes_of_type(t), key=lambda n: n.total_gpus) for t in cluster.gpu_types}
    premium = 1.0 + preempt_penalty
    # the placed jobs, lowest weighted gain (without the premium) first: the first that makes a swap is the one
    placed: list[tuple[tuple[float, ...], float, str]] = []  # (rank, worth, id): ``soonest``, ``narrow``, worth
    waits = RestartWaits(cluster, out, jobs, idle) if soonest or back > 0.0 else None
    for p_id, p_cfg in out.items():
        p_job = jobs.get(p_id)
        worth = gain.get((p_id, signature(p_cfg, by_name))) if p_cfg and p_job is not None else None
        if worth is not None:
            value = weights.get(p_id, 0.0) * worth / (premium if p_job.current else 1.0)
            rank = ((waits.wait(p_job, p_cfg),) if soonest and waits is not None else ()) + ((float(config_gpus(p_cfg)),) if narrow else ())
            placed.append((rank + (value,), value, p_id))
    placed.sort(key=lambda rvp: rvp[0])
    swaps: dict[str, str] = {}
    for w_job in waiting:
        low = _lowest_rate(w_job, cands)
        if low is None or w_job.job_id not in weights or not any(idle.values()):
            continue
        idle_of: dict[str, int] = {}
        for n, g in idle.items():
            if g:
                idle_of[by_name[n].gpu_type] = idle_of.get(by_name[n].gpu_type, 0) + g
        alone = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus, idle.get(n.name, 0))
                                  for n in cluster.nodes))
        if any(_rate(w_job, cfg) > 0.0 for cfg in generate_configs(w_job, alone, sigma)):
            continue  # it fits the idle GPUs alone: a fill for the fragment plans, not a swap
        # (placed rank, -waiting worth, placed id, config, the placed job's new config or None)
        best: tuple[tuple[float, ...], float, str, Config, Config | None] | None = None
        for p_rank, p_value, p_id in placed:
            p_cfg = out.get(p_id)
            if best is not None and p_rank > best[0]:
                break
            if not p_cfg or p_id in swaps.values():
                continue
            held = config_gpus(p_cfg)
            types = {by_name[n].gpu_type for n in p_cfg}
            room = held + sum(idle_of.get(t, 0) for t in types)
            if w_job.requirements[-1] <= held or w_job.requirements[0] > room or not any(t in idle_of for t in types):
                continue  # no config of the waiting job there fills an idle GPU
            free = {n: idle.get(n, 0) + p_cfg.get(n, 0) for n in by_name if by_name[n].gpu_type in types}
            nodes = [nv for nv in cluster.nodes if free.get(nv.name) or nv is largest.get(nv.gpu_type)]
            view = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus, free.get(n.name, 0))
                                     for n in nodes))
            for cfg in generate_configs(w_job, view, sigma):
                if config_gpus(cfg) <= held:
                    continue  # fills no idle GPU
                w_value = weights[w_job.job_id] * _rate(w_job, cfg) / low
                if best is not None and (p_rank, -w_value) >= best[:2]:
                    continue
                moved = None
                if relocate:  # the displaced job on the GPUs still idle after the swap, what it keeps there
                    left = {n: idle.get(n, 0) + p_cfg.get(n, 0) - cfg.get(n, 0) for n in by_name}
                    moved = _relocation(jobs[p_id], p_cfg, left, cluster, sigma)
                if moved is not None and w_value > p_value * (1.0 - moved[0]):
                    best = (p_rank, -w_value, p_id, cfg, moved[1])
                elif ((requeue and w_value > p_value and finishes_first(w_job, cfg, jobs[p_id], p_cfg, shorter)
                       and (waits is None or back <= 0.0 or waits.wait(jobs[p_id], p_cfg) <= back))
                      or (fill and fills_enough(cfg, held))):
                    best = (p_rank, -w_value, p_id, cfg, None)
        if best is None:
            continue
        _, _, p_id, cfg, new_cfg = best
        for n, g in (out[p_id] or {}).items():
            idle[n] = idle.get(n, 0) + g
        for n, g in list(cfg.items()) + list((new_cfg or {}).items()):
            idle[n] = idle.get(n, 0) - g
        out[p_id] = new_cfg
        out[w_job.job_id] = cfg
        swaps[w_job.job_id] = p_id
    return out, swaps


__all__ = ["MAX_WAITING", "fills_enough", "swap_for_fragments"]
