"""Measurement records the profiler hands to the engine (as JSON files; the engine is the only writer
of the store and turns them into store rows with :mod:`profiler.ingest`).

* :class:`ProbeResult` / :class:`ProbeFailure`: one probe run (``python -m profiler.probe``).
* :class:`RuntimeRecord`: one window of running-mode measurements (:mod:`profiler.runtime`), written
  as one JSON line each to a job's metrics file.
* :class:`CalibrationRecord`: all-reduce time versus message size and the fitted bandwidth
  (``hops-slurm calibrate``).
* :class:`CheckpointMark`: a job's preemption protocol (:mod:`profiler.preempt`): it listens for the
  notice, or it saved a checkpoint (on notice or regularly); one JSON line in the same metrics file.

All times are seconds; bandwidths are parameters (float32 values) per second, the unit of eq. 2.
Every record is validated on read: finite numbers within bounds (:data:`MAX_SECONDS`,
:data:`MAX_THROUGHPUT` ...), bounded texts and lists; the probes and recorders that write them run as
the job's owner, so what they write is untrusted input.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from hops_slurm.limits import MAX_JOB_GPUS

SCHEMA_VERSION = 1

# Bounds. Records are written by probes and recorders that run as the job's owner, so every record is
# untrusted input: no NaN or infinity anywhere, every number within what a real training job can show.
MAX_SECONDS = 86400.0  # one timed phase, step or window
MAX_THROUGHPUT = 1.0e8  # samples/s of a whole job
MAX_SAMPLES_PER_LIST = 100_000
MAX_TEXT = 256
MAX_GPUS = MAX_JOB_GPUS  # one limit for directives, records and whatif (hops_slurm.limits)
MAX_BATCH = 65536
MAX_PARAMS = 10**13
MAX_DONE_SAMPLES = 1.0e15  # a job's own count of samples done (its progress counter)

Seconds = Annotated[float, Field(ge=0, le=MAX_SECONDS)]
Text = Annotated[str, Field(max_length=MAX_TEXT)]
SecondsList = Annotated[list[Seconds], Field(max_length=MAX_SAMPLES_PER_LIST)]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    schema_version: int = SCHEMA_VERSION


MAX_DATA_PARALLEL = 4  # data-parallel counts one probe measures (engine.probe_data_parallel)


class DataParallelPoint(BaseModel):
    """A probe's data-parallel run on ``gpus`` GPUs of its one node (``--data-parallel``): the whole job's
    samples/s, as a runtime record of that configuration would report it."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    gpus: int = Field(ge=2, le=MAX_GPUS)
    throughput: float = Field(gt=0, le=MAX_THROUGHPUT)


class ProbeResult(_Record):
    """A successful probe: the basic time components of one training iteration on one GPU type, and the
    throughput of the data-parallel runs it was asked for (none by default)."""

    kind: Literal["probe"] = "probe"
    model: Text  # zoo name ("resnet18") or entrypoint ("pkg.module:build")
    source: Literal["zoo", "entrypoint"]
    size: Text = ""  # zoo size setting ("tiny", "default", "full"); "" for entrypoints
    signature: Text
    gpu_type: Text  # "cpu" for CPU probes
    device: Text  # "cpu" or "cuda:0"
    node: Text
    batch_size: int = Field(gt=0, le=MAX_BATCH)
    input_shape: tuple[Annotated[int, Field(ge=0, le=10**9)], ...] = Field(max_length=16)
    params: int = Field(ge=0, le=MAX_PARAMS)
    iterations: int = Field(gt=0, le=MAX_SAMPLES_PER_LIST)
    warmup: int = Field(ge=0, le=MAX_SAMPLES_PER_LIST)
    # Medians over the measured iterations (phase "components": every phase synchronised).
    t_data: Seconds  # intrinsic data time per batch (loader alone, incl. copy to device)
    t_forward: Seconds  # forward pass + loss
    t_backward: Seconds
    t_update: Seconds  # optimizer step + zero_grad
    t_iter_observed: float = Field(gt=0, le=MAX_SECONDS)  # free-running loop, median wall clock per iteration
    t_wait_observed: Seconds  # free-running loop, median wait for the next batch
    data_samples: SecondsList  # per-batch data times (loader alone)
    forward_samples: SecondsList
    backward_samples: SecondsList
    update_samples: SecondsList
    pattern: Literal[1, 2]
    pattern_determined: bool  # False: data time too small to tell the patterns apart (default 1)
    pattern_margin: float = Field(ge=-1e6, le=1e6)  # (P2 - P1) / P2 of the two eq. 1 predictions
    peak_memory_bytes: int = Field(ge=0, le=2**50)
    memory_source: Literal["cuda_max_allocated", "process_max_rss"]
    timing: Literal["cuda_events", "wall_clock_sync"]
    threads: int = Field(ge=0, le=100_000)
    torch_version: Text
    probe_seconds: Seconds
    measured_at: datetime = Field(default_factory=utc_now)
    data_parallel: list[DataParallelPoint] = Field(default_factory=list, max_length=MAX_DATA_PARALLEL)

    @property
    def t_compute(self) -> float:
        return self.t_forward + self.t_backward + self.t_update


class ProbeFailure(_Record):
    """A probe that could not finish; ``reason`` says what to fix."""

    kind: Literal["probe_failure"] = "probe_failure"
    model: Text
    gpu_type: Text
    node: Text
    error: Literal["bad_entrypoint", "out_of_memory", "time_limit", "error"]
    reason: Annotated[str, Field(max_length=4096)]
    measured_at: datetime = Field(default_factory=utc_now)


class RuntimeRecord(_Record):
    """One window of running-mode measurements of a job (one process's view)."""

    kind: Literal["runtime"] = "runtime"
    signature: Text
    gpu_type: Text
    node: Text
    rank: int = Field(0, ge=0, le=MAX_GPUS)
    gpus: int = Field(gt=0, le=MAX_GPUS)  # GPUs (processes) of the whole job
    nodes: int = Field(gt=0, le=MAX_GPUS)
    batch_size: int = Field(gt=0, le=MAX_BATCH)  # per process
    steps: int = Field(gt=0, le=10**9)
    window_seconds: float = Field(gt=0, le=MAX_SECONDS)
    throughput: float = Field(ge=0, le=MAX_THROUGHPUT)  # samples/s of the whole job over the window
    data_times: SecondsList  # per step: time blocked waiting for the next batch
    sync_waits: SecondsList  # sampled: time waiting for the other processes
    step_times: SecondsList  # per step: wall time of the step body
    measured_at: datetime = Field(default_factory=utc_now)  # the window's end
    #: the job's own count of samples done at the window's end, resume-aware (after a restart from a
    #: checkpoint it goes on from the checkpoint's count); None: the job does not say. The engine uses it
    #: only to not count twice the samples a resumed job redoes (hops_slurm.core.processed).
    done_samples: float | None = Field(None, ge=0, le=MAX_DONE_SAMPLES)

    @model_validator(mode="after")
    def _consistent(self) -> RuntimeRecord:
        """The throughput is what the window's steps give (steps x batch x GPUs / window), within 1 %."""
        expected = self.steps * self.batch_size * self.gpus / self.window_seconds
        if abs(self.throughput - expected) > 0.01 * expected + 1e-9:
            raise ValueError(f"throughput {self.throughput:g} samples/s disagrees with steps x batch x gpus / window "
                             f"= {expected:g}")
        if self.nodes > self.gpus:
            raise ValueError(f"{self.nodes} nodes for {self.gpus} GPUs")
        return self


MAX_RUN = 1_000_000  # SLURM_RESTART_COUNT of a run
MAX_TOTAL_SAMPLES = 10**15  # samples a job processed in all


class CheckpointMark(_Record):
    """One event of a job's preemption protocol (docs/preemption.md), written by :mod:`profiler.preempt`.

    ``event == "listening"``: this run (``run``: Slurm's restart count, 0 for the first run) installed its
    handler for ``signal``, so the engine may give it notice before a requeue. ``event == "saved"``: the
    job saved a checkpoint of ``samples`` processed samples; ``notice``: it saved it because it was given
    notice (it then waits to be requeued). The engine reads these marks (:mod:`hops_slurm.engine.runtime_records`)."""

    kind: Literal["checkpoint"] = "checkpoint"
    event: Literal["listening", "saved"]
    run: int = Field(0, ge=0, le=MAX_RUN)
    samples: int = Field(0, ge=0, le=MAX_TOTAL_SAMPLES)
    notice: bool = False
    signal: Annotated[str, Field(max_length=16, pattern=r"^[A-Z0-9]*$")] = ""
    measured_at: datetime = Field(default_factory=utc_now)

    @model_validator(mode="after")
    def _consistent(self) -> CheckpointMark:
        if self.event == "listening" and (self.notice or self.samples):
            raise ValueError("a listening mark saves nothing (no samples, no notice)")
        if self.event == "saved" and self.signal:
            raise ValueError("a saved mark names no signal")
        return self


class CalibrationPoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    params: int = Field(gt=0)  # message size in float32 values
    seconds: float = Field(gt=0)  # median all-reduce time


class CalibrationRecord(_Record):
    """All-reduce time versus message size, and the eq. 2 bandwidth fitted to it.

    ``scope == "link"``: N processes on one node; eq. 2 reads T_c = params / B_link * (N-1)/N, so
    ``bandwidth`` is B_link = (N-1)/N / slope. ``scope == "net"``: processes on several nodes;
    T_c = params / B_net, so B_net = 1 / slope. ``slope`` and ``latency`` come from a least-squares
    line through the points (seconds per parameter and seconds).
    """

    kind: Literal["calibration"] = "calibration"
    gpu_type: str
    scope: Literal["link", "net"]
    backend: Literal["gloo", "nccl"]
    world_size: int = Field(ge=2)
    nodes: int = Field(ge=1)
    points: list[CalibrationPoint]
    slope: float = Field(gt=0)
    latency: float
    bandwidth: float = Field(gt=0)  # params/s in the sense of eq. 2 for this scope
    method: str  # how it was measured, for the store's provenance column
    measured_at: datetime = Field(default_factory=utc_now)


AnyRecord = ProbeResult | ProbeFailure | RuntimeRecord | CalibrationRecord | CheckpointMark
ProfilerRecord = Annotated[
    Union[ProbeResult, ProbeFailure, RuntimeRecord, CalibrationRecord, CheckpointMark], Field(discriminator="kind")
]
_ADAPTER: TypeAdapter[AnyRecord] = TypeAdapter(ProfilerRecord)


def parse_record(text: str) -> AnyRecord:
    """One record from its JSON text (the ``kind`` field picks the type)."""
    return _ADAPTER.validate_json(text)


def read_records(path: Path) -> list[AnyRecord]:
    """Every record in a file: one JSON document, or JSON lines (metrics files)."""
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.strip()
    if not stripped:
        return []
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if len(lines) > 1 and all(ln.lstrip().startswith("{") and ln.rstrip().endswith("}") for ln in lines):
        try:
            return [parse_record(ln) for ln in lines]
        except ValueError:
            pass  # a pretty-printed single document
    return [parse_record(stripped)]


def write_record(record: _Record, path: Path) -> Path:
    """Write one record as a JSON document (atomically: temp file then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
