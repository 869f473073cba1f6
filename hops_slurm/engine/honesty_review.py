"""Declared vs processed samples in the live engine (issue 16); the rules are :mod:`estimator.honesty`'s.

Where it sits: every refresh the engine (:mod:`hops_slurm.engine.engine`)

1. adds what each job's accepted runtime records processed (:func:`add_records`, from
   :class:`hops_slurm.engine.runtime_records.MetricsReport`: rank 0's windows, steps x batch x GPUs),
   each to the run it belongs to (:func:`hops_slurm.core.processed.note_window`, which also gives
   the run's restart cost when it is the run's first window),
2. calls :func:`review`: a job's processed samples are those of
   :func:`hops_slurm.core.processed.processed_samples` (the simulator's too): its records' samples
   per run, the time between them at their rate, no restart time, samples redone after a restart
   counted once, and for a job without records its run time less a restart per run times its
   estimated throughput (:func:`processed_samples`); with the owner's history
   (their last ended jobs from ``engine.sqlite``'s ``outcomes`` and their running ones)
   :func:`estimator.honesty.assess` gives the job's ``age_factor`` (the planner's age is the eq. 9 age
   of the declaration times it: :func:`hops_slurm.engine.known_jobs.job_view`) and a reason (``honesty``,
   shown in ``hops-slurm queue``),
3. applies ``[honesty] action`` to jobs whose verdict is ``exceeded`` (:func:`act`): ``warn`` writes
   the reason into the job's Comment (``scontrol show job``: ``Comment=hops: declaration: ...``);
   ``release`` sets the job aside (it keeps running, outside Hops's planning; its Comment says why);
   ``requeue-hold`` requeues and holds it (journaled) and sets it aside the same way.

When a job ends its declared and processed samples go to its owner's history (:func:`record_outcome`).
Jobs learn their budget from ``HOPS_SAMPLE_BUDGET`` in their environment file (:func:`budget_env`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from estimator.honesty import EXCEEDED, HonestyParams, JobOutcome, UserHistory, Verdict, assess, history_of
from hops_slurm.directives import HopsDirectives
from hops_slurm.core import processed
from hops_slurm.core.processed import Window, note_window, recorded_samples
from hops_slurm.engine.state import EngineState, JobState

log = logging.getLogger(__name__)

#: What the engine writes into the Comment of a job that processed more than it declared (``warn``).
COMMENT_PREFIX = "hops: declaration: "
BUDGET_ENV = "HOPS_SAMPLE_BUDGET"


def declared_samples(js: JobState) -> float | None:
    try:
        return float(HopsDirectives.from_canonical(js.directives).samples)
    except Exception:  # noqa: BLE001 - a job whose directives do not parse is set aside elsewhere
        return None


def budget_env(js: JobState) -> dict[str, str]:
    """The job's sample budget for its environment file (what it declared)."""
    declared = declared_samples(js)
    return {BUDGET_ENV: str(int(declared))} if declared is not None else {}


#: a job's estimated samples/s in a config (None: no estimate)
RateOf = Callable[[JobState, Mapping[str, int]], float | None]


def add_records(js: JobState, windows: Iterable[Window], now: float) -> list[float]:
    """Add the job's new rank-0 windows to its totals and to its runs; returns the restart costs they
    show (one per run whose first window this is)."""
    costs = []
    for w in windows:
        js.recorded_samples += max(w.samples, 0.0)
        js.recorded_seconds += max(w.seconds, 0.0)
        cost = note_window(js, w, now)
        if cost is not None:
            costs.append(cost)
    return costs


def processed_samples(js: JobState, now: float, rate: Callable[[Mapping[str, int]], float | None],
                      restart: float) -> float:
    """Samples processed so far (:func:`hops_slurm.core.processed.processed_samples`); records counted
    in no run (ingested before records were kept per run) count as they are."""
    unplaced = js.recorded_samples - recorded_samples(js)
    if unplaced < 1e-6 * max(js.recorded_samples, 1.0):  # rounding
        unplaced = 0.0
    return processed.processed_samples(js, now, rate=rate, restart=restart, unplaced=unplaced)


def _update(js: JobState, now: float, rate_of: RateOf, restart_of: Callable[[JobState], float]) -> None:
    """The job's processed samples now. Its records justify their count (it may fall when a resumed job
    says it redoes samples); a job without records keeps the most its estimate ever gave (a rate may be
    missing at one refresh)."""
    got = processed_samples(js, now, lambda config: rate_of(js, config), restart_of(js))
    js.processed = got if js.recorded_samples > 0 else max(js.processed, got)


def user_history(state: EngineState, user: str, running: Iterable[JobOutcome], params: HonestyParams) -> UserHistory:
    """The user's last ended jobs (oldest first) and their running ones."""
    past = [JobOutcome(d, p) for d, p in state.outcomes(user, params.history_jobs)] if params.history_jobs else []
    return history_of([*past, *running], params)


def review(jobs: Iterable[JobState], state: EngineState, params: HonestyParams, rate_of: RateOf, *, now: float,
           restart_of: Callable[[JobState], float]) -> dict[str, Verdict]:
    """Steps 2 of the module docstring for every job in play; returns the verdicts by job id.
    ``rate_of(job, config)``: its estimated samples/s there; ``restart_of(job)``: its restart cost (s)."""
    todo: list[tuple[JobState, float]] = []
    running: dict[str, list[JobOutcome]] = {}
    for js in jobs:
        declared = declared_samples(js)
        if js.aside or declared is None:
            continue
        if js.run_time > 0:
            _update(js, now, rate_of, restart_of)
            running.setdefault(js.user, []).append(JobOutcome(declared, js.processed))
        todo.append((js, declared))
    histories = {u: user_history(state, u, running.get(u, []), params) for u in {js.user for js, _ in todo}}
    for user, h in histories.items():
        state.set_meta(f"history:{user}", f"x{h.factor:.3g}" if h.jobs else "-")
    out = {}
    for js, declared in todo:
        v = assess(declared, js.processed, js.age if js.age and js.age > 0 else 1.0, histories[js.user], params)
        js.age_factor, js.honesty = v.factor, v.reason
        out[js.job_id] = v
    return out


def record_outcome(state: EngineState, js: JobState, rate_of: RateOf | None = None,
                   restart_of: Callable[[JobState], float] | None = None) -> None:
    """An ended job's declared and processed samples join its owner's history (jobs that never ran do not)."""
    declared = declared_samples(js)
    if declared is None or js.run_time <= 0:
        return
    _update(js, js.ended or js.last_seen, rate_of or (lambda _js, _config: None),
            restart_of or (lambda _js: 0.0))
    state.add_outcome(js.job_id, js.user, js.ended or js.last_seen, declared, js.processed)


def exceeded_reason(v: Verdict) -> str:
    return f"declared samples exceeded: {v.reason}"


def act(js: JobState, v: Verdict, action: str, *, comment: str, write_comment: Callable[[str], None],
        requeue_hold: Callable[[], None], set_aside: Callable[[JobState, str], None]) -> str:
    """Step 3 for one job whose verdict is ``exceeded``; returns what was done ("" for nothing).
    ``comment``: the job's Comment in Slurm now (written only when it differs)."""
    if v.verdict != EXCEEDED or action == "none":
        return ""
    reason = exceeded_reason(v)
    if action == "warn":
        want = COMMENT_PREFIX + reason
        if not comment.startswith(COMMENT_PREFIX + "declared samples exceeded"):
            write_comment(want[:250])
            log.warning("job %s (%s): %s", js.job_id, js.user, reason)
            return "warned"
        return ""
    if action == "requeue-hold":
        requeue_hold()
    set_aside(js, reason)
    log.warning("job %s (%s): %s; %s", js.job_id, js.user, reason,
                "requeued and held" if action == "requeue-hold" else "no longer planned by Hops")
    return action
