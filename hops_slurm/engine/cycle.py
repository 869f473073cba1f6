"""The engine's cycle as named steps: the refresh and the round, each an ordered list run by one loop.

Where it sits: :meth:`hops_slurm.engine.engine.Engine.refresh` and :meth:`~hops_slurm.engine.engine.Engine.round`
open a session (:class:`RefreshSession`, :class:`RoundSession`: what that one cycle knows) and hand it, with the
engine's long-lived resources (:class:`hops_slurm.engine.bookkeeping.Resources`), to the cycle's list of named
steps, ``(name, function)`` pairs (:data:`hops_slurm.engine.refresh.STEPS`, :data:`hops_slurm.engine.round.STEPS`);
each step is a plain function of (session, resources), and :func:`run_steps` runs them in order, logs each
one and times it; the durations go to the engine's metrics as the histogram
``hops_engine_step_duration_seconds{cycle, step}`` (:mod:`hops_slurm.engine.exporter`; the Grafana
dashboard ``etc/grafana/hops-slurm.json`` graphs them).

**One bad job never stops a refresh or a round** (docs/security.md, "One bad job"). Each step that works
on jobs handles each job on its own (:meth:`Session.each`, over :func:`hops_slurm.engine.aside.per_job`):
a job whose processing in that step fails is set aside with a one-line reason naming the step
(``refresh step adopt: no learning rate for 4 GPUs``), logged once, and the step goes on with the others.
Those steps are the ones with a per-job function (:data:`hops_slurm.engine.refresh.PER_JOB`,
:data:`hops_slurm.engine.round.PER_JOB`); the others are not per job (``read``, ``gate``, ``resync``,
``calibrate``, ``metrics``, ``heartbeat``, ``plannings``,
``offer``), or their per-job loop lives where the jobs are handled, under the same rule: the enactor's
journal phases record a failure per job (``evict``, ``hold``, ``settle``), ``tidy`` per probe
reservation, :func:`hops_slurm.engine.known_jobs.refresh_ages` (``ages``) and
:class:`~hops_slurm.engine.known_jobs.ViewCache` (``views``) set a job aside themselves.
A step that fails as a whole for a reason that is no one job's and not the engine's own (a fault in the
step itself, data no job owns) is recorded (:attr:`Session.failed`, and ``failed`` in the refresh's
result), logged on one line, and the cycle runs the steps after it, but for those that need it
(:data:`hops_slurm.engine.refresh.NEEDS`, :data:`hops_slurm.engine.round.NEEDS`): every refresh step
needs ``read``, whose failure of any kind ends the refresh as a failure of the engine does (without a
fresh read of Slurm ``close`` would take
every job for ended, and no round may plan on it); ``account`` and ``profile`` need ``close`` (until it ran,
the tracked jobs include ended ones); ``records`` needs ``save`` (the records are of the states
saved); ``plannings`` needs ``views`` and ``offer`` needs ``plannings`` (an offer is what the
plannings left idle: a round whose offer step failed or was skipped closes the offer). ``resync`` reads
the snapshot again whole after any failed step before it.
A failure of the engine itself (Slurm unreachable or a command refused, the engine's storage, memory:
:func:`hops_slurm.engine.aside.per_job_failure` is False) still ends the session (its time is observed):
every later step would meet it too, and Slurm's state must be repaired from the journal before another
command; the daemon logs it and does that before its next step (:mod:`hops_slurm.engine.daemon`).

**Refresh** (:data:`hops_slurm.engine.refresh.STEPS`; the steps marked * only when the engine may change
things, not in a dry run: :data:`hops_slurm.engine.refresh.CHANGES`): ``read`` Slurm (one snapshot),
``gate``* (the gate reservation), ``evict``* (foreign jobs out of
Hops reservations), ``hold``* (admin-hold new jobs), ``settle``* (read back released jobs' allocations),
``resync``* (the snapshot brought up to date after those commands), ``calibrate`` (default calibrations
for new GPU types), ``track`` (new jobs' states), ``close`` (ended jobs: last records, declaration outcome,
probes cancelled; a job its owner moved out of the Hops partitions leaves the same way, the engine's admin
hold released), ``account`` (wait, run time, GPU-seconds; set-aside reasons), ``profile`` (probes and
in-place measurement), ``adopt``* (the environment files of jobs Slurm started on an offer:
:mod:`hops_slurm.engine.offer`), ``ingest``* (runtime records), ``tidy``* (probe files), ``ages``* (eq. 9),
``declarations``* (declared vs processed samples), ``save``* (the states of the jobs that changed beyond
the clock, or not written for a round: :mod:`hops_slurm.engine.written`; one transaction), ``records``*
(their JobRecords into records.sqlite), ``summary``* (each pending job's reason logged where it changed,
counted in ``hops_pending_jobs{reason}`` and written to the queue summary users read:
:func:`hops_slurm.engine.reasons.publish`), ``metrics``* and ``heartbeat``* (for ``hops-slurm failopen``).

**Round** (:data:`hops_slurm.engine.round.STEPS`): ``views`` (the job views on the snapshot), ``plannings`` (a round or
fragment plan, then fragment plans at the same instant: :func:`hops_slurm.core.rounds.plan_instant`, the
simulator's loop too), ``offer``* (the idle GPUs a new job may take unheld, with ``[engine] offer_file``),
``summary``* (as the refresh's, with the plannings' reasons; with ``[engine] forecast``, a round plan's
first hands its views to the forecast worker: :func:`hops_slurm.engine.reasons.start_forecast`).
Each planning inside is itself timed by part under ``cycle="planning"``: ``plan``,
``enact`` (from its :class:`~hops_slurm.core.interface.Planning`), ``record`` and ``views`` (the views again
after enactment, recomputed only for the jobs whose inputs changed: :class:`hops_slurm.engine.known_jobs.ViewCache`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from hops_slurm.engine.aside import per_job, per_job_failure, reason_text
from hops_slurm.engine.state import JobState
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.snapshot import Snapshot
from planner.views import JobView

if TYPE_CHECKING:
    from hops_slurm.core.interface import Planning

log = logging.getLogger(__name__)
T = TypeVar("T")
S = TypeVar("S", bound="Session")
Res = TypeVar("Res")  # the engine's long-lived resources (hops_slurm.engine.bookkeeping.Resources)

#: observe(cycle, step, seconds): where each step's duration goes (the engine's metrics)
Observe = Callable[[str, str, float], None]


@dataclass(frozen=True)
class Step:
    """One named step of a cycle: ``run`` takes no argument (it works on its session); ``needs``: the
    earlier steps it cannot run without (it is skipped when one of them failed or was skipped)."""

    name: str
    run: Callable[[], object]
    needs: tuple[str, ...] = ()
    vital: bool = False  # its failure, whatever it is, ends the cycle (the refresh's read of Slurm)


@contextmanager
def timed(cycle: str, step: str, observe: Observe) -> Iterator[None]:
    """Time one step (also when it raises), log it and hand the seconds to ``observe``."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        seconds = time.perf_counter() - t0
        log.debug("%s/%s: %.3f s", cycle, step, seconds)
        observe(cycle, step, seconds)


def run_steps(cycle: str, steps: Sequence[Step], observe: Observe, failed: dict[str, str] | None = None) -> dict[str, str]:
    """Run ``steps`` in order, each timed (:func:`timed`). A failure of the engine itself
    (:func:`hops_slurm.engine.aside.per_job_failure` False), or any failure of a vital step, ends the cycle;
    any other failure goes into ``failed`` (step -> one-line reason), is logged on one line, and the steps
    after it run but for those that need it (:attr:`Step.needs`), which are skipped (``failed``: "skipped:
    ..."). Returns ``failed``."""
    failed = {} if failed is None else failed
    t0 = time.perf_counter()
    for i, step in enumerate(steps):
        missing = [n for n in step.needs if n in failed]
        if missing:
            failed[step.name] = f"skipped: it needs {missing[0]}"
            continue
        try:
            with timed(cycle, step.name, observe):
                step.run()
        except Exception as exc:
            if step.vital or not per_job_failure(exc):
                raise
            failed[step.name] = reason_text(f"{type(exc).__name__}", exc)
            log.error("%s step %s failed (%s); skipped: %s; the other steps run", cycle, step.name,
                      failed[step.name], ", ".join(_dependents(step.name, steps[i + 1:])) or "none")
    log.debug("%s: %d steps in %.3f s", cycle, len(steps), time.perf_counter() - t0)
    return failed


def _dependents(name: str, later: Sequence[Step]) -> list[str]:
    """The steps of ``later`` that need ``name``, directly or through another of them."""
    out = {name}
    for step in later:
        if out.intersection(step.needs):
            out.add(step.name)
    return [s.name for s in later if s.name in out]


@dataclass
class Session:
    """What one refresh or round knows, shared by its steps: its cycle's name, the instant it works at
    (:attr:`now`), its snapshot of Slurm, the steps' failures so far (:attr:`failed`) and the per-job
    guard (:meth:`each`), which sets a failing job aside with ``set_aside``."""

    cycle: str
    set_aside: Callable[[JobState, str], None]
    now: float
    snapshot: Snapshot = field(default_factory=Snapshot)
    failed: dict[str, str] = field(default_factory=dict)  # step -> why it failed, or that it was skipped

    def each(self, step: str, jobs: Iterable[JobState], one: Callable[[JobState], T]) -> dict[str, T]:
        """``one(job)`` for each of ``jobs``, each on its own: a job whose processing fails is set aside with
        a reason naming the step (logged once: :func:`hops_slurm.engine.aside.per_job`) and the others go
        on. Returns job id -> what ``one`` returned, for the jobs it went through."""
        out: dict[str, T] = {}
        for js in list(jobs):
            got = per_job(js, f"{self.cycle} step {step}", partial(_boxed, one, js), self.set_aside)
            if got is not None:
                out[js.job_id] = got[0]
        return out


def _boxed(one: Callable[[JobState], T], js: JobState) -> tuple[T]:
    """``one(js)`` in a 1-tuple (a job whose ``one`` returned None still counts as gone through)."""
    return (one(js),)


@dataclass
class RefreshSession(Session):
    """One refresh of the engine's view of Slurm (:mod:`hops_slurm.engine.refresh`); ``given``: a job
    listing just read (from ``listed_at`` on), reused as the snapshot's. :attr:`out` says what changed
    (``failed``: the steps that failed); :attr:`changed`: the jobs whose state this refresh touched,
    :attr:`due`: those of them written (:mod:`hops_slurm.engine.written`)."""

    given: list[SlurmJob] | None = None
    listed_at: float | None = None
    out: dict[str, Any] = field(default_factory=lambda: {"admin_held": [], "ended": [], "profiled": [], "in_place": []})
    gated: bool = False  # the gate or offer reservation was made or changed
    verified: list[str] = field(default_factory=list)  # released jobs whose allocation was read back
    gpu_types: list[str] = field(default_factory=list)
    changed: list[JobState] = field(default_factory=list)
    due: list[tuple[JobState, tuple[Any, ...]]] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)  # the JobRecords written
    capacity: Any = None  # the profile step's probe capacity
    verdicts: dict[str, Any] = field(default_factory=dict)  # the declarations step's verdicts


@dataclass
class RoundSession(Session):
    """One round (or, with ``fragment``, one fragment plan) on the engine's last read of Slurm
    (:mod:`hops_slurm.engine.round`): :attr:`views`, the job views planned on; :attr:`job_env`, the
    environment of the jobs the plan being enacted starts; :attr:`round_id`, the journal's name for the
    planning being enacted; :attr:`first` and :attr:`last`, the instant's first and last planning."""

    fragment: bool = False
    tag: str = ""
    round_id: str = ""
    views: tuple[JobView, ...] = ()
    job_env: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    first: Planning | None = None
    last: Planning | None = None


class Cycle(Generic[S, Res]):
    """A cycle's named steps: ``steps``, ``(name, function)`` pairs in the order they run, each function a
    step of (session, the engine's long-lived resources); ``needs``: step ->
    the earlier steps it needs besides ``first``, which every other step needs and whose failure ends the
    cycle ("" for none); ``changes``: the steps skipped in a dry run (they change things)."""

    def __init__(self, name: str, steps: Sequence[tuple[str, Callable[[S, Res], None]]],
                 needs: Mapping[str, tuple[str, ...]], first: str = "", changes: frozenset[str] = frozenset()) -> None:
        self.name, self.steps, self.needs, self.first, self.changes = name, tuple(steps), needs, first, changes

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.steps]

    def bound(self, session: S, resources: Res, *, dry_run: bool = False) -> list[Step]:
        """The steps to run, each bound to ``session`` and ``resources``."""
        out = []
        for name, fn in self.steps:
            if dry_run and name in self.changes:
                continue
            needs = self.needs.get(name, ())
            if self.first and name != self.first:
                needs = (self.first, *needs)
            out.append(Step(name, partial(fn, session, resources), needs, vital=name == self.first))
        return out
