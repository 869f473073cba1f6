"""The simulated cluster of a forecast: the jobs of now, run forward on their estimates.

Where it sits: behind :class:`hops_slurm.core.interface.Backend`, under the round loop
(:func:`hops_slurm.core.rounds.run_rounds`) that ``hops-slurm simulate`` and the daemon's timetable run,
driven by :func:`hops_slurm.sim.forecast_run.forecast`. It starts from what a round planned with (the
cluster view of a round plan: each node's GPUs not held outside the planning; the job views: each job's
estimates, wait, processed samples and current config) and the jobs expected to arrive
(``arrivals``, :mod:`hops_slurm.sim.forecast_arrivals`: each joins the queue at its submission time), and
knows nothing else: no ground truth. Where :class:`hops_slurm.sim.sim_backend.SimBackend` runs a job at its true speed, this one runs
it at the speed the estimator gives the job's config (``JobView.throughput``, times ``speed``):

* a job placed on a new config (a first start, or a move) holds its GPUs and makes no progress for its
  ``restart_cost``, then progresses; a job a round plan leaves out is preempted at once (pending, its
  wait grows as live);
* a running job ends when its remaining samples are done at that rate (or, unmeasured, when its age
  says: :func:`planner.moves.remaining_seconds`); its GPUs are free at once;
* far ahead the driver may ``hold`` the running jobs in place (:mod:`hops_slurm.sim.forecast_run`: every
  planning is a fragment plan); then a fragment plan that placed nothing is not made again until a job
  starts, ends or is preempted (the same idle GPUs and the same queue would plan the same), and the
  queue's order is made again once it is ``reorder_after`` seconds old (at a round plan otherwise);
* :meth:`done` is True once every job that was waiting at the start has started, or ``stop()`` says so
  (the caller's wall-clock budget; nothing here reads a clock), or a round plan started nothing on a
  cluster where nothing runs (the jobs left would wait for ever: no forecast start).

Each waiting job's first start is its forecast start, the end of that run its forecast end.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hops_slurm.core.interface import Enactment
from hops_slurm.sim.forecast_window import QueueWindow
from planner.moves import remaining_seconds
from planner.views import ClusterView, Config, JobView, NodeView, Plan, freeze_config

EPS = 1e-9


@dataclass
class _Run:
    """One job of the forecast and where it stands."""

    view: JobView  # as planned with at the start (its estimates); the fields below move on from it
    config: Config | None
    since: float  # when its current state (running on ``config``, or waiting) began
    resume_at: float = 0.0  # running: when it progresses (after its restart cost)
    rate: float = 0.0  # running: samples/s
    done: float = 0.0  # samples processed at ``since``
    wait: float = 0.0  # wait at ``since``
    run_time: float = 0.0  # run time at ``since``
    placed_at: float = 0.0  # running: when it was placed on ``config``
    preemptions: int = 0
    end_at: float | None = None  # running: when its remaining work is done

    def at(self, t: float) -> JobView:
        """The job's view at ``t``."""
        running = self.config is not None
        ran = max(0.0, t - self.resume_at) if running else 0.0
        return _moved_on(self.view, wait=self.wait + (0.0 if running else max(0.0, t - self.since)),
                         done_samples=self.done + self.rate * ran,
                         run_time=self.run_time + (max(0.0, t - self.since) if running else 0.0),
                         current=self.config, placed_for=max(0.0, t - self.placed_at) if running else 0.0,
                         preemptions=self.preemptions)


def _moved_on(view: JobView, **fields: object) -> JobView:
    """``view`` with ``fields`` changed: what ``dataclasses.replace`` gives, without re-running the
    checks of fields that do not change (its requirements; a forecast makes 10,000 views per planning)."""
    out = copy.copy(view)
    for name, value in fields.items():
        object.__setattr__(out, name, value)
    return out


class ForecastBackend:
    """A :class:`hops_slurm.core.interface.Backend` over the jobs of now (see the module docstring).

    After a run: ``starts`` (job id -> forecast start) and :meth:`forecast_ends` for the jobs that were
    waiting (``targets``)."""

    def __init__(self, cluster: ClusterView, jobs: Sequence[JobView], now: float, *, speed: float = 1.0,
                 stop: Callable[[], bool] = lambda: False, window: QueueWindow | None = None,
                 arrivals: Sequence[JobView] = ()) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.t = float(now)
        self.speed = speed
        self.stop = stop
        self.nodes = cluster.nodes
        self.base = {n.name: n.free_gpus for n in cluster.nodes}  # free when no job of the forecast holds it
        self.runs: dict[str, _Run] = {}
        self._active: dict[str, None] = {}  # the running jobs' ids (in the order they started)
        self.window = window
        #: seconds to the next instant of the timetable (the driver sets it): the window counts the GPUs of
        #: running jobs that end before it
        self.lookahead = 0.0
        self._order: list[str] = []  # the waiting queue in the policy's order (the window's)
        self._ordered: set[str] = set()
        self._stale = False  # a job waits that the order does not know (a preempted one)
        self._changes = 0  # starts, preemptions and ends so far
        self._order_key: tuple[float, int] | None = None  # (when, changes) the order was made at
        self._cut = False  # the last views left waiting jobs out (a stuck round plan widens the window)
        self._widen = 1.0
        #: running jobs are held in place (the driver sets it far ahead: every planning is a fragment plan);
        #: then a fragment plan that placed nothing is not made again until a job starts, ends or is preempted
        self.hold = False
        #: while holding, the queue's order is made again when it is this many seconds old (None: never)
        self.reorder_after: float | None = None
        self._quiet: int | None = None  # changes so far when the last held fragment plan placed nothing
        self._views: dict[bool, tuple[int, ClusterView]] = {}  # fragment -> (changes, its cluster view then)
        self.total_gpus = sum(n.total_gpus for n in cluster.nodes)
        self.widest = 0  # the most job views a planning got
        self.targets: set[str] = set()
        self.starts: dict[str, float] = {}
        self.ends: dict[str, float] = {}
        for view in jobs:
            run = _Run(view, view.current, self.t, wait=view.wait, done=view.done_samples, run_time=view.run_time,
                       preemptions=view.preemptions)
            self.runs[view.job_id] = run
            if view.current:
                run.placed_at = self.t - view.placed_for
                self._running(run, view.current, self.t, delay=0.0)
            else:
                self.targets.add(view.job_id)
        self.waiting = set(self.targets)  # targets not started yet
        #: jobs expected later (never targets), in submission order; each joins the queue at its submission
        self._arrivals = sorted((v for v in arrivals if v.job_id not in self.runs and v.current is None),
                                key=lambda v: v.submit_time, reverse=True)
        self._admit(self.t)
        self._stopped = False
        self.stuck = False  # a round plan left every job waiting on an idle cluster: nothing will change

    # --- Backend -----------------------------------------------------------------------------------
    def now(self) -> float:
        return self.t

    def done(self) -> bool:
        if not self.waiting or self.stuck:
            return True
        if not self._stopped and self.stop():
            self._stopped = True
        return self._stopped

    def next_activity(self) -> float | None:
        ends = [e for j in self._active if (e := self.runs[j].end_at) is not None]
        if self._arrivals:
            ends.append(self._arrivals[-1].submit_time)
        return min(ends) if ends else None

    def cluster_view(self, *, fragment: bool) -> ClusterView:
        made = self._views.get(fragment)
        if made is not None and made[0] == self._changes:  # no job started, ended or was preempted since
            return made[1]
        free = dict(self.base)
        if fragment:
            for j in self._active:
                for node, g in (self.runs[j].config or {}).items():
                    if node in free:
                        free[node] -= g
        view = ClusterView(tuple(NodeView(n.name, n.gpu_type, n.server_class, n.total_gpus,
                                          max(0, min(n.total_gpus, free[n.name]))) for n in self.nodes))
        self._views[fragment] = (self._changes, view)
        return view

    def job_views(self, *, fragment: bool) -> tuple[JobView, ...]:
        if fragment and self.hold and self._quiet == self._changes:
            return ()  # nothing started, ended or was preempted since a fragment plan placed nothing
        views = tuple(run.at(self.t) for run in self.runs.values()) if self.window is None else self._windowed(fragment)
        self.widest = max(self.widest, len(views))
        return views

    def apply(self, plan: Plan, *, fragment: bool) -> Enactment:
        out = Enactment()
        placed = plan.placed()
        for job_id in [*self._active, *(j for j in placed if j not in self._active)]:
            run = self.runs.get(job_id)
            if run is None:
                continue
            config = placed.get(job_id)
            if run.config is not None:
                if fragment:
                    continue  # a fragment plan places waiting jobs only; the running keep what they have
                if config is not None and dict(config) == dict(run.config):
                    out.kept.append(job_id)
                    continue
                self._stop(run)
                out.preempted.append(job_id)
                if config is None:
                    continue
            elif config is None:
                continue
            self._running(run, freeze_config(config), self.t, delay=run.view.restart_cost)
            out.started.append(job_id)
            if job_id in self.waiting:
                self.waiting.discard(job_id)
                self.starts[job_id] = self.t
        if (not fragment or self.hold) and not out.started:
            if self._active:
                self._quiet = self._changes if fragment else self._quiet
            elif self._cut:  # the window left jobs out: the next round plan sees twice as many
                self._widen *= 2.0
            else:
                self.stuck = True
        return out

    def wait_until(self, t: float) -> None:
        """The clock to ``t``: jobs whose work is done end on the way (their GPUs free at once)."""
        for job_id in list(self._active):
            run = self.runs[job_id]
            if run.end_at is not None and run.end_at <= t + EPS:
                del self.runs[job_id], self._active[job_id]
                self._changes += 1
                if job_id in self.targets:
                    self.ends[job_id] = run.end_at
        self.t = max(self.t, float(t))
        self._admit(self.t)

    def forecast_ends(self) -> dict[str, float]:
        """Each started target's end: when it ended, or when the run it is in would end."""
        out = dict(self.ends)
        for job_id in self.targets:
            run = self.runs.get(job_id)
            if run is not None and run.end_at is not None and job_id in self.starts:
                out[job_id] = run.end_at
        return out

    # --- internals -------------------------------------------------------------------------------------
    def _admit(self, t: float) -> None:
        """The expected arrivals submitted by ``t`` join the waiting queue."""
        while self._arrivals and self._arrivals[-1].submit_time <= t + EPS:
            view = self._arrivals.pop()
            self.runs[view.job_id] = _Run(view, None, view.submit_time)  # waiting since its submission
            self._changes += 1
            self._stale = True  # a waiting job the queue's order does not know

    def _windowed(self, fragment: bool) -> tuple[JobView, ...]:
        """Every running job and the head of the waiting queue (:mod:`hops_slurm.sim.forecast_window`)."""
        assert self.window is not None
        t, runs = self.t, self.runs
        key = (t, self._changes)
        old = self._order_key is not None and self.hold and self.reorder_after is not None \
            and t >= self._order_key[0] + self.reorder_after
        if (not fragment and key != self._order_key) or self._stale or (old and key != self._order_key):
            # a round plan (unless nothing changed since the order was made), or a waiting job it does not know
            views = [run.at(t) for j, run in runs.items() if j not in self._active]
            self._order = [v.job_id for v in self.window.order(views, t, self.total_gpus)]
            self._ordered, self._stale, self._order_key = set(self._order), False, key
        idle = self.cluster_view(fragment=True).free_gpus
        ending = sum(sum(runs[j].config.values()) for j in self._active  # type: ignore[union-attr]
                     if (e := runs[j].end_at) is not None and e <= t + self.lookahead) if self.window.ahead else 0
        plannable = idle if fragment else self.cluster_view(fragment=False).free_gpus
        gpus = self.window.gpus(idle + ending, plannable) * self._widen
        keep: list[_Run] = []
        acc = fit = 0  # smallest requests of the head; of the jobs that fit the idle GPUs
        self._cut = False
        for j in self._order:  # the waiting jobs in the order: the head, and the first that fit the idle GPUs
            run = runs.get(j)
            if run is None or run.config is not None:
                continue
            need = run.view.requirements[0]
            if acc >= gpus and (fit >= gpus or need > idle):
                self._cut = True
                if fit >= gpus:
                    break
                continue
            keep.append(run)
            acc += need if need <= self.total_gpus else 0
            fit += need if need <= idle else 0
        kept = {run.view.job_id for run in keep}
        # in the jobs' own order, as without a window (the planner breaks ties by it)
        return tuple(run.at(t) for j, run in runs.items() if j in kept or j in self._active)

    def _rate(self, view: JobView, config: Config) -> float:
        try:
            rate = float(view.throughput(config))
        except Exception:  # noqa: BLE001 - an estimate that fails is no progress there
            return 0.0
        return max(rate, 0.0) * self.speed if rate == rate else 0.0

    def _running(self, run: _Run, config: Config, t: float, *, delay: float) -> None:
        """``run`` starts (or, at the start of the forecast, goes on) on ``config`` at ``t``."""
        self._active[run.view.job_id] = None
        self._changes += 1
        view = run.at(t)
        run.wait, run.done, run.run_time = view.wait, view.done_samples, view.run_time
        if run.config is None or dict(run.config) != dict(config):
            run.placed_at = t
        run.config, run.since = config, t
        run.resume_at = t + max(0.0, delay)
        run.rate = self._rate(run.view, config)
        left = remaining_seconds(dataclasses.replace(view, current=config), run.rate)
        if left is not None and not (run.view.measured and run.view.total_samples > 0.0 and run.rate > 0.0):
            left /= self.speed  # what its age says is left, at this forecast's speed
        run.end_at = None if left is None else run.resume_at + left

    def _stop(self, run: _Run) -> None:
        """``run`` is preempted at ``self.t``: pending, its progress so far kept."""
        job_id = run.view.job_id
        self._active.pop(job_id, None)
        self._changes += 1
        self._stale = self._stale or job_id not in self._ordered
        view = run.at(self.t)
        run.done, run.run_time, run.wait = view.done_samples, view.run_time, view.wait
        run.config, run.since, run.rate, run.end_at = None, self.t, 0.0, None
        run.preemptions += 1


__all__ = ["ForecastBackend"]
