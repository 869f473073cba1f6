"""What starting, preempting and restarting a job costs in simulation: one model for both simulated paths.

Where it sits: :class:`hops_slurm.sim.sim_backend.SimBackend` (``hops-slurm simulate``) and
:class:`hops_slurm.sim.slurmctld.SimSlurmctld` (``hops-slurm simulate --engine``) each keep one
:class:`JobProgress` per workload job and call the same methods on it when a job starts, is given a
preemption notice, is requeued and restarts; the :class:`CostModel` says what each of those costs. Each
fact is derived here once, so the two paths charge the same for the same events (a test drives both
through one event sequence). Nothing here knows a clock or a cluster: times are arguments.

The model (docs/simulator.md, "What a start, a preemption and a restart cost"):

* **Start.** A job that starts holds its GPUs for ``process_start`` seconds without progress (launch,
  interpreter and framework import, CUDA/NCCL set-up, data pipeline); one that resumes from a checkpoint
  also loads it: :meth:`CostModel.checkpoint_seconds` of its model family. A first start pays the process
  start too (a job started unprofiled, the probe in place, pays what a real one pays).
* **Notice.** A preemption gives the job a notice (the engine signals it before its requeue, Slurm's
  GraceTime). A job that checkpoints on notice (:meth:`CostModel.checkpoints_on_notice`) stops, writes
  its checkpoint (the family's checkpoint seconds) and is requeued: it loses nothing, and its GPUs stay
  busy while it writes. One that ignores the notice trains on until the ``grace`` runs out (GPUs busy the
  whole grace) and is killed: it loses every sample since its last checkpoint and redoes them.
* **Periodic checkpoints.** A running job checkpoints every :meth:`CostModel.interval` seconds of run
  time after its first progress in this run (and it resumes from what it loaded); the write itself is
  not charged (seconds every half hour).

The defaults, and where each comes from (each is a flag of ``hops-slurm simulate``):

============================  ==========  ===================================================================
``process_start``             35 s        Themis (NSDI '20, §6.2.3) measured 35 s median (50 s p95) for its
                                          agent to change a job's GPU containers (new workers started). The
                                          live demo's jobs need 3-4 s from launch to their first step (tiny
                                          CPU models, Python + PyTorch import; measured for issue 21, see
                                          docs/simulator.md); a GPU job adds CUDA/NCCL set-up and a real data
                                          pipeline. Sia's measured restarts (ImageNet 250 s, BERT 120 s) bound
                                          it from above.
``checkpoint`` per family     0.4-5.2 s   Gavel (OSDI '20) Table 4: preemption overhead without lease renewals
                                          with 6-minute rounds, i.e. one checkpoint save and one load per 360 s,
                                          for the same models the ground truth runs (ResNet-18 0.94 %,
                                          ResNet-50 1.58 %, A3C 0.22 %, LSTM (LM) 2.91 %, Transformer and
                                          CycleGAN 0.77 %): x 360 s / 2 per save or load. Recommendation is not
                                          in the table: the median of the six (0.855 %). Themis: 5-10 s per
                                          checkpoint to HDFS. The demo's tiny models: ~1 s from SIGTERM to exit
                                          with the checkpoint written.
``grace``                     120 s       a site default (Slurm's GraceTime is the site's choice; issue 21)
``checkpoint_interval``       1800 s      an assumption: about an epoch of a paper-scale job (ResNet-50 on
                                          ImageNet takes tens of minutes per epoch on 4-8 GPUs); the demo's
                                          jobs checkpoint every 3 s (5-10 % of their 30-90 s of work), 1800 s
                                          is 8-50 % of a paper job's few hours. It matters only for jobs that
                                          ignore the notice.
``notice_fraction``           1.0         every job checkpoints on notice (the package gives jobs the helper,
                                          and the demo's train.py does); lower it to price jobs that do not
============================  ==========  ===================================================================
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from hops_slurm.sim.groundtruth import family
from hops_slurm.sim.workload import FAMILY_DEFAULT, JobSpec

INF = math.inf
#: the round length Gavel's Table 4 was measured with (one save and one load per round without leases)
GAVEL_ROUND = 360.0
#: Gavel Table 4, preemption overhead without lease renewals (% of a round); LM is Gavel's LSTM
GAVEL_TABLE4_PERCENT = MappingProxyType({"ResNet-18": 0.94, "ResNet-50": 1.58, "A3C": 0.22, "LM": 2.91,
                                         "Transformer": 0.77, "CycleGAN": 0.77})
#: a family Table 4 does not list (Recommendation): the median of the listed ones
UNLISTED_PERCENT = 0.855


def _gavel_checkpoint_seconds() -> dict[str, float]:
    """Seconds of one checkpoint save (or load) per family: Table 4's share of a round, halved."""
    return {fam: round(GAVEL_TABLE4_PERCENT.get(fam, UNLISTED_PERCENT) / 100.0 * GAVEL_ROUND / 2.0, 1)
            for fam in FAMILY_DEFAULT}


#: seconds to write (or load) one checkpoint, per model family (see the module docstring)
CHECKPOINT_SECONDS: Mapping[str, float] = MappingProxyType(_gavel_checkpoint_seconds())
FAMILIES = tuple(FAMILY_DEFAULT)


@dataclass(frozen=True)
class CostModel:
    """What a start, a notice and a restart cost (defaults and their sources: the module docstring)."""

    #: seconds from a job's start on its GPUs to its first progress, without loading a checkpoint
    process_start: float = 35.0
    #: seconds to write, and again to load, one checkpoint, per model family
    checkpoint: Mapping[str, float] = field(default_factory=lambda: dict(CHECKPOINT_SECONDS))
    #: seconds a job that ignores the notice keeps its GPUs (and runs) before it is killed
    grace: float = 120.0
    #: seconds of run time between a job's periodic checkpoints (a workload job may set its own)
    checkpoint_interval: float = 1800.0
    #: share of the jobs that checkpoint on notice (a workload job may say so itself)
    notice_fraction: float = 1.0
    #: seconds a job's first start costs; None: ``process_start``, as every later start. ``hops-slurm
    #: whatif`` sets 0: a recorded run time already holds the job's own start (docs/whatif.md)
    first_start: float | None = None

    def __post_init__(self) -> None:
        for name in ("process_start", "grace", "first_start"):
            value = getattr(self, name)
            if value is None and name == "first_start":
                continue
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
        if not (self.checkpoint_interval > 0):
            raise ValueError(f"checkpoint_interval must be > 0 seconds (inf: never), got {self.checkpoint_interval!r}")
        if not (0.0 <= self.notice_fraction <= 1.0):
            raise ValueError(f"notice_fraction must be in [0, 1], got {self.notice_fraction!r}")
        unknown = sorted(set(self.checkpoint) - set(FAMILIES))
        if unknown:
            raise ValueError(f"checkpoint seconds for unknown model families {unknown}; families: {', '.join(FAMILIES)}")
        for fam, value in self.checkpoint.items():
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"checkpoint seconds of {fam} must be finite and >= 0, got {value!r}")

    @classmethod
    def free(cls) -> CostModel:
        """Nothing costs anything: starts, notices and restarts are instantaneous, nothing is lost (tests,
        and the ablation "what if moves were free")."""
        return cls(process_start=0.0, checkpoint=dict.fromkeys(FAMILIES, 0.0), grace=0.0, checkpoint_interval=INF)

    def with_checkpoint_seconds(self, seconds: Mapping[str, float]) -> CostModel:
        """A copy with these families' checkpoint seconds changed."""
        return replace(self, checkpoint={**self.checkpoint, **seconds})

    # ----- the facts, each derived once ------------------------------------------------------------
    def checkpoint_seconds(self, model: str) -> float:
        """Seconds to write (or load) one checkpoint of ``model`` (its family's; the listed median if unknown)."""
        fam = family(model)
        if fam in self.checkpoint:
            return self.checkpoint[fam]
        return round(UNLISTED_PERCENT / 100.0 * GAVEL_ROUND / 2.0, 1)

    def start_cost(self, model: str, *, from_checkpoint: bool, first: bool = False) -> float:
        """Seconds from a (re)start to the first progress: the process start, plus the checkpoint load when
        it resumes from one; a ``first`` start costs ``first_start`` when that is set."""
        if first and self.first_start is not None and not from_checkpoint:
            return self.first_start
        return self.process_start + (self.checkpoint_seconds(model) if from_checkpoint else 0.0)

    def interval(self, spec: JobSpec) -> float:
        """Seconds of run time between the job's periodic checkpoints."""
        return spec.checkpoint_interval if spec.checkpoint_interval is not None else self.checkpoint_interval

    def checkpoints_on_notice(self, spec: JobSpec) -> bool:
        """Whether the job checkpoints when given a notice: its own flag, else drawn once per job id (the
        same draw on every path and run) against ``notice_fraction``."""
        if spec.checkpoint_on_notice is not None:
            return spec.checkpoint_on_notice
        if self.notice_fraction >= 1.0:
            return True
        digest = hashlib.sha256(f"notice:{spec.job_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2.0**64 < self.notice_fraction

    def notice_seconds(self, spec: JobSpec) -> float:
        """Seconds a notice holds the job's GPUs: its checkpoint write, or the whole grace."""
        return self.checkpoint_seconds(spec.model) if self.checkpoints_on_notice(spec) else self.grace

    def move_cost(self, spec: JobSpec) -> float:
        """Seconds one requeue and restart cost the job (the notice, then a start from its checkpoint): what
        the planner's ``restart_cost`` stands for; the work lost is apart (:meth:`JobProgress.unsaved_seconds`)."""
        return self.notice_seconds(spec) + self.start_cost(spec.model, from_checkpoint=True)

    def describe(self) -> str:
        """One line for a results header."""
        ckpt = ", ".join(f"{f} {s:g}" for f, s in sorted(self.checkpoint.items()))
        first = "" if self.first_start is None else f" (a first start {self.first_start:g} s)"
        return (f"process start {self.process_start:g} s{first}; checkpoint write/load s ({ckpt}); grace {self.grace:g} s; "
                f"checkpoint every {self.checkpoint_interval:g} s of run time; "
                f"{self.notice_fraction:.0%} of jobs checkpoint on notice")


def parse_checkpoint_seconds(text: str) -> dict[str, float]:
    """``--checkpoint-seconds``: one number for every family (``3``) or ``FAMILY=S`` pairs
    (``ResNet-50=4,LM=8``; the other families keep their defaults). ValueError on anything else."""
    text = text.strip()
    if not text:
        raise ValueError("give seconds (e.g. 3) or FAMILY=SECONDS pairs (e.g. ResNet-50=4,LM=8)")
    if "=" not in text:
        value = _seconds(text)
        return dict.fromkeys(FAMILIES, value)
    out: dict[str, float] = {}
    for part in text.split(","):
        fam, eq, value = part.partition("=")
        fam = fam.strip()
        if not eq or fam not in FAMILIES:
            raise ValueError(f"{part.strip()!r}: expected FAMILY=SECONDS with a family of {', '.join(FAMILIES)}")
        out[fam] = _seconds(value)
    return out


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 <= value <= 86400):
        raise ValueError(f"{text.strip()!r}: seconds must be in [0, 86400]")
    return value


# ----- one job's progress through starts, notices and requeues --------------------------------------
@dataclass(frozen=True)
class Notice:
    """A preemption notice: given at ``given_at``; the job's GPUs are free at ``ends_at``. ``checkpoints``:
    it checkpoints on notice (loses nothing); ``completes``: it ignored the notice but its samples ran out
    before the grace did (it ends COMPLETED at ``ends_at``)."""

    given_at: float
    ends_at: float
    checkpoints: bool
    completes: bool = False


@dataclass
class JobProgress:
    """A workload job's true progress, kept the same way by both simulated paths.

    ``done``: samples the job has processed (its own counter, in its process's memory); ``saved``: samples
    in its latest checkpoint (what a restart resumes from); ``lost``: samples lost to requeues so far (and
    processed again). Progress accrues at ``rate`` from ``resume_at`` (the start plus its start cost) until
    ``halt_at`` (a notice). Call :meth:`advance` before reading it at a new time; the paths move their clocks
    event by event and call it at each."""

    total: float
    interval: float
    done: float = 0.0
    saved: float = 0.0
    lost: float = 0.0
    rate: float = 0.0
    running: bool = False
    since: float = 0.0
    resume_at: float = INF
    halt_at: float = INF
    next_checkpoint: float = INF
    notice: Notice | None = None
    starts: int = 0

    @classmethod
    def of(cls, spec: JobSpec, costs: CostModel) -> JobProgress:
        return cls(total=spec.total_samples, interval=costs.interval(spec))

    def start(self, t: float, rate: float, start_cost: float) -> None:
        """The job starts on its GPUs at ``t`` (from its checkpoint, ``saved``), progressing at ``rate`` after
        ``start_cost`` seconds."""
        self.done = self.saved
        self.rate = rate
        self.running = True
        self.since = t
        self.resume_at = t + start_cost
        self.halt_at = INF
        self.next_checkpoint = self.resume_at + self.interval
        self.notice = None
        self.starts += 1

    def advance(self, t: float) -> None:
        """Bring ``done`` and ``saved`` (periodic checkpoints) up to time ``t``."""
        if not self.running or t <= self.since:
            self.since = max(self.since, t)
            return
        a, b = max(self.since, self.resume_at), min(t, self.halt_at)
        if b > a and self.rate > 0:
            if self.next_checkpoint <= b:
                last = self.next_checkpoint + math.floor((b - self.next_checkpoint) / self.interval) * self.interval
                self.saved = min(self.total, self.done + self.rate * (last - a))
                self.next_checkpoint = last + self.interval
            self.done = min(self.total, self.done + self.rate * (b - a))
        self.since = t

    def progressing(self, t: float) -> bool:
        """True while it makes progress at ``t`` (started, past its start cost, not halted by a notice)."""
        return self.running and self.rate > 0 and self.resume_at <= t < self.halt_at

    def finish_time(self) -> float | None:
        """When its samples run out at its rate (None: never, in this run)."""
        if not self.running or self.rate <= 0:
            return None
        at = max(self.since, self.resume_at) + max(0.0, self.total - self.done) / self.rate
        return at if at <= self.halt_at else None

    def unsaved_seconds(self, t: float) -> float:
        """Seconds of its work since its last checkpoint at ``t`` (what a kill now would lose)."""
        self.advance(t)
        return (self.done - self.saved) / self.rate if self.rate > 0 else 0.0

    def give_notice(self, t: float, spec: JobSpec, costs: CostModel) -> Notice:
        """The preemption notice at ``t``: a job that checkpoints on notice stops and writes; one that ignores
        it runs on to the grace's end (or to its last sample, whichever comes first)."""
        self.advance(t)
        if costs.checkpoints_on_notice(spec):
            self.halt_at = t
            notice = Notice(t, t + costs.checkpoint_seconds(spec.model), True)
        else:
            self.halt_at = t + costs.grace
            finish = self.finish_time()
            notice = Notice(t, finish, False, True) if finish is not None else Notice(t, self.halt_at, False)
        self.notice = notice
        return notice

    def requeue(self, t: float) -> float:
        """The job is requeued at ``t`` (after a notice, or killed without one: the notice-free path of a
        simulated slurmctld). When its GPUs are free: the notice's end, or ``t`` if later (a job that
        ignored the notice runs until then)."""
        if self.notice is None:
            self.notice = Notice(t, t, False)
            self.halt_at = t
        elif t > self.notice.ends_at and not self.notice.checkpoints:
            self.halt_at = t
            self.notice = replace(self.notice, ends_at=t)
        return max(t, self.notice.ends_at)

    def finish(self, t: float) -> None:
        """It processed its last sample by ``t`` and ends (nothing is lost)."""
        self.advance(t)
        self.running = False
        self.rate = 0.0
        self.resume_at = self.halt_at = self.next_checkpoint = INF
        self.notice = None

    def stop(self, t: float) -> float:
        """Its process is gone at ``t`` (the notice's end): what it checkpointed stays, the rest is lost.
        Returns the samples lost."""
        self.advance(t)
        if self.notice is not None and self.notice.checkpoints:
            self.saved = self.done
        lost = self.done - self.saved
        self.lost += lost
        self.done = self.saved
        self.running = False
        self.rate = 0.0
        self.resume_at = self.halt_at = self.next_checkpoint = INF
        self.notice = None
        return lost


__all__ = ["CostModel", "JobProgress", "Notice", "CHECKPOINT_SECONDS", "FAMILIES", "parse_checkpoint_seconds"]
