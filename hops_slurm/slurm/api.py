"""What the engine reads from Slurm and the operations it performs on it: one interface, several backends.

Data flow: a backend (:class:`hops_slurm.slurm.cli.CliSlurm` over Slurm's client commands, read by
:mod:`hops_slurm.slurm.dialect` for Slurm 22.05, 24.11 and 26.05 alike; the untested
:class:`hops_slurm.slurm.pyslurm_backend.PyslurmSlurm` over pyslurm 25.11) turns slurmctld's state into
the pydantic models below, the same on every release; :mod:`hops_slurm.slurm.enact` drives the operations
(hold, place, reservation, release, notice, requeuehold) through :class:`SlurmApi`, journaled by
:mod:`hops_slurm.journal`. Nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.errors import HopsError

#: Job states in which a job holds (or is about to hold) its allocation.
ACTIVE_STATES = frozenset({"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"})
#: States from which the job can still be (re)placed.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD"})


class SlurmError(HopsError):
    """Slurm could not be read or refused an operation."""


class SlurmCommandError(SlurmError):
    """A Slurm client command failed; carries the argv and Slurm's own message."""

    def __init__(self, argv: list[str], returncode: int, message: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.slurm_message = message.strip()
        super().__init__(f"`{' '.join(argv)}` failed (exit {returncode}): {self.slurm_message or 'no message'}")


class SlurmJob(BaseModel):
    """One job as slurmctld reports it (only what the engine uses)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    name: str = ""
    user: str = ""
    state: str  # PENDING, RUNNING, COMPLETED, ... (Slurm's base state, upper case)
    reason: str = ""  # state_reason: JobHeldUser, JobHeldAdmin, Reservation, Resources, ...
    priority: int = 0  # 0 = held
    partition: str = ""
    account: str = ""  # the job's association (limits and fair share: hops_slurm.slurm.assoc)
    qos: str = ""
    comment: str = ""
    admin_comment: str = ""
    submit_time: float = 0.0
    start_time: float = 0.0  # running or ended: when this run started (a requeued job's latest run)
    end_time: float = 0.0  # ended: when; while pending or running Slurm's value is a limit, not an event
    nodes: tuple[str, ...] = ()  # allocated nodes (running) in Slurm's order
    required_nodes: tuple[str, ...] = ()
    node_count: int = 0
    tres_per_node: str = ""
    tres_per_job: str = ""
    gpu_alloc: dict[str, tuple[int, ...]] = Field(default_factory=dict)  # node -> GPU indices (running)
    reservation: str = ""
    restart_count: int = 0
    time_limit: float = 0.0  # seconds of its time limit (``--time``); 0 = none or unknown
    eligible_time: float = 0.0  # when it may start at the earliest (``--begin``; a requeue pushes it ahead)
    dependency: str = ""  # Slurm's dependency text (``afterok:12(unfulfilled)``), empty when none is left
    #: in none of the Hops partitions (set by :class:`hops_slurm.slurm.scope.ScopedSlurm`): never a Hops job
    outside: bool = False

    @property
    def held(self) -> bool:
        return self.state in PENDING_STATES and self.priority == 0

    @property
    def is_hops(self) -> bool:
        """True for jobs the submit hook accepted (canonical directives in admin_comment) in a Hops
        partition (a job of another partition is never Hops's: :mod:`hops_slurm.slurm.scope`)."""
        return not self.outside and self.admin_comment.startswith(COMMENT_PREFIX)

    @property
    def directives(self) -> str | None:
        return self.admin_comment[len(COMMENT_PREFIX):] if self.is_hops else None

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def gpu_config(self) -> dict[str, int]:
        """The GPUs it holds per node (empty unless running)."""
        return {node: len(idx) for node, idx in self.gpu_alloc.items() if idx}


class SlurmNode(BaseModel):
    """One node: its GPU type, how many GPUs, which indices are in use."""

    model_config = ConfigDict(frozen=True)

    name: str
    state: str  # idle, mixed, allocated, down, ... (lower case, first state word)
    flags: tuple[str, ...] = ()  # DRAIN, ...
    gpu_type: str = ""
    gpus_total: int = 0
    gpus_used: tuple[int, ...] = ()
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    cpus: int = 0
    alloc_cpus: int = 0

    @property
    def gpus_free(self) -> int:
        return self.gpus_total - len(self.gpus_used)

    @property
    def usable(self) -> bool:
        return self.state not in ("down", "drained", "fail", "future", "unknown") and not (
            {"DRAIN", "DRAINING", "DRAINED", "FAIL", "MAINTENANCE"} & set(self.flags)
        )


class SlurmReservation(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    nodes: tuple[str, ...]
    users: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeJob:
    """A profiling probe to submit as the job's owner (:mod:`hops_slurm.engine.profiling` decides it):
    ``script`` runs ``python -m profiler.probe`` for ``model`` at ``batch_size`` on one GPU of
    ``gpu_type`` and writes its record to ``out``; ``workdir`` and ``log`` are in the owner's place;
    ``reservation`` "" (a dedicated profiler node) submits it without one. The model, batch size and
    output are repeated as fields so that a backend that does not run the script (the simulator's
    slurmctld) knows what the probe would measure."""

    name: str
    uid: int
    gid: int
    partition: str
    reservation: str
    gpu_type: str
    time_limit_min: int
    workdir: Path
    log: Path
    out: Path
    script: str
    model: str
    batch_size: int
    gpus: int = 1  # GPUs of its one node (more than one: the probe runs data-parallel on ``data_parallel``)
    data_parallel: tuple[int, ...] = ()

    def sbatch_argv(self) -> list[str]:
        """``sbatch`` for this probe (the script goes on standard input: root never reads a user's file)."""
        return ["sbatch", "--parsable", f"--uid={self.uid}", f"--gid={self.gid}", "-p", self.partition,
                *([f"--reservation={self.reservation}"] if self.reservation else []), "-N", "1",
                f"--gres=gpu:{self.gpu_type}:{self.gpus}",
                "-J", self.name, "-t", str(self.time_limit_min), "-D", str(self.workdir), "-o", str(self.log)]


@runtime_checkable
class SlurmApi(Protocol):
    """Everything the engine needs from Slurm. Every mutating call raises :class:`SlurmError` on failure.
    A backend may also offer list forms of hold, release, requeue_hold and update_job (``hold_all(ids)``,
    ..., ``update_job_all(ids, fields)``: one command for many jobs); :mod:`hops_slurm.slurm.batch` uses
    them where present and the single-job methods otherwise."""

    def jobs(self) -> list[SlurmJob]:
        """Every job slurmctld remembers (finished ones too, for MinJobAge)."""

    def job(self, job_id: str) -> SlurmJob | None:
        """One job with its per-node GPU indices; None if slurmctld no longer knows it."""

    def nodes(self) -> list[SlurmNode]: ...

    def reservations(self) -> list[SlurmReservation]: ...

    def hold(self, job_id: str) -> None:
        """Admin hold (the owner cannot release it)."""

    def release(self, job_id: str) -> None: ...

    def requeue_hold(self, job_id: str) -> None:
        """Stop a running job and put it back in the queue, held. A job that has ended is left alone (on
        22.05 a plain ``requeuehold`` would requeue even a COMPLETED job)."""

    def signal_job(self, job_id: str, signal: str) -> None:
        """Send ``signal`` (a name such as ``USR1``) to the running job's batch script process: the notice
        before a planned requeue (docs/preemption.md). Slurm's record of the job does not change."""

    def update_job(self, job_id: str, fields: dict[str, str]) -> None:
        """``scontrol update JobId=.. K=V ..`` (empty value clears the field); order of ``fields`` is kept."""

    def create_reservation(self, name: str, nodes: list[str], users: list[str], flags: list[str]) -> None:
        """A reservation starting now without end (``Duration=UNLIMITED``)."""

    def delete_reservation(self, name: str) -> None: ...

    def cancel(self, job_id: str) -> None: ...

    def submit_probe(self, probe: ProbeJob) -> str:
        """Submit a probe job; its Slurm job id."""

    def now(self) -> float:
        """Slurm's clock in epoch seconds (the wall clock on a real cluster; the simulator's virtual one)."""
