"""Job and round records: what the engine (live) and the simulator write, and reports read.

One schema for both sources, so ``hops-slurm report`` and the simulator's tables and plots share code.
Times are seconds since the epoch (live) or since the start of the simulation (simulated).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PlacementRecord(BaseModel):
    """One stretch of a job running in one config; a preemption ends it."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    start: float
    end: float | None = None  # None while it still runs
    config: dict[str, int]  # node -> GPUs
    gpu_type: str = ""  # "v100", or "mixed" for a config across types
    preempted: bool = False  # ended by the scheduler, not by the job finishing
    # a planned requeue (preemption with notice, docs/preemption.md); None / False for other placements
    notice: float | None = Field(None, ge=0)  # seconds from the notice's signal to the requeue; None: no notice
    checkpoint_seen: bool = False  # a checkpoint mark answered the notice
    work_lost: float | None = Field(None, ge=0)  # seconds since its last checkpoint at the requeue (0: answered)
    #: why the scheduler ended it (planner.changes: ``requeued``, ``moved-type``, ...; ``other``: a plan that
    #: did not say); "" for a placement not preempted, or one recorded before causes were kept
    cause: str = Field("", max_length=32)


class JobRecord(BaseModel):
    """Everything reports need about one job."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    job_id: str
    name: str = ""
    user: str = ""
    account: str = ""
    partition: str = ""
    submit: float
    start: float | None = None  # first start
    end: float | None = None
    state: str = "PENDING"  # Slurm state names: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED
    requirements: list[int] = Field(default_factory=list)
    age_estimate: float | None = None  # eq. 9 estimate made before the job first ran (seconds)
    ideal_time: float | None = None  # Themis T_id: run time alone on 1/N of the cluster (for FTF rho)
    total_samples: float | None = None  # as declared (samples=)
    processed_samples: float | None = None  # as measured (issue 16; None: not known)
    placements: list[PlacementRecord] = Field(default_factory=list)
    aside: str = ""  # why the scheduler set the job aside (e.g. no configuration serves it); "": it did not
    #: why it waited when last recorded pending (planner.reasons: ``HopsQueue``, Slurm's limit name, ...);
    #: "" once it runs or ended, or when the source does not say
    reason: str = Field("", max_length=128)
    time_limit: float | None = Field(None, ge=0)  # seconds of its Slurm time limit (--time); None: unknown or none
    exit_code: str = Field("", max_length=16)  # Slurm's "code:signal" where the source knows it ("": unknown)
    #: the start forecast for the job when it was first seen waiting (epoch seconds): the Hops engine's
    #: forecast, or for a run Slurm scheduled the start Slurm expected (``squeue --start``); None: none made
    forecast_start: float | None = None

    @property
    def preemptions(self) -> int:
        return sum(1 for p in self.placements if p.preempted)


class RoundRecord(BaseModel):
    """One planning (round plan or fragment plan)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    time: float
    plan_index: int = 0  # 0 = the round's main plan, 1.. = fragment plans inside the round
    policy: str = ""
    active_jobs: int = 0
    unassigned_jobs: int = 0  # active jobs left without GPUs by this plan
    idle_gpus_after: int = 0  # idle GPUs after enacting the plan
    gpus_in_use: int = 0
    total_gpus: int = 0
    solve_seconds: float = 0.0
    fallback: str = ""  # "", "incumbent", "previous", "greedy" (see planner diagnostics)
    limit_hit: bool = False  # the solver's wall-clock safety limit ended a solve (the plan may vary by load)
    #: the preemptions this planning enacted, per cause (planner.changes; "other": a job the plan did not name,
    #: e.g. placed where it cannot run)
    preempted_by: dict[str, int] = Field(default_factory=dict)

    @property
    def fragments(self) -> int:
        """Avg.frag contribution (docs/design.md, "Reading the paper"): idle GPUs while some job is still unassigned."""
        return self.idle_gpus_after if self.unassigned_jobs > 0 else 0
