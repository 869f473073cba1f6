"""Assumptions that turn a recorded Slurm job into a simulator job, and the TOML file that overrides them.

Where it sits: between :mod:`.exports` (jobs as recorded) and :mod:`.replay` (the simulator's
:class:`~hops_slurm.sim.workload.JobSpec`). A recorded job says when it was submitted, how many GPUs it
held (the rigid request) and how long it ran; the simulator also needs a model (whose throughput table it
runs on), a requirement set (the GPU counts Hops may choose from) and total samples. Defaults (see
docs/whatif.md, where the reasons are):

* **requirement set**: the job's ``#HOPS gpus=`` when its admin comment holds the submit hook's canonical
  ``#HOPS`` form; otherwise the rigid count and its halvings (``halvings = 2``: 8 -> 2,4,8; 6 -> 1,3,6;
  1 -> 1). Slurm backfill in the simulator asks for the set's largest count, i.e. the recorded one.
* **model**: a ``#HOPS model=`` zoo name mapped to a simulator family (:data:`ZOO_FAMILY`), else
  ``model`` (default ``ResNet-50``).
* **total samples**: the recorded run time (end - start) times the model's throughput at the rigid count on
  the recorded GPU type (a typed TRES such as ``gres/gpu:v100``, when the simulator has data for it; else
  ``gpu_type``, default ``v100``), so a job replayed at its recorded count on that type runs as long as it
  ran. ``#HOPS samples=`` is not used: the simulator's throughputs are Gavel's measurements, not the
  site's models, and the recorded run time is what is known.
* **time limit** (what the replay of Slurm's backfill plans with): the recorded one (``Timelimit``, JSON
  ``time.limit``); when the export has none (or it is ``UNLIMITED``), the longest run recorded in the job's
  partition (:func:`assumed_limits`).

The file (``--assumptions FILE.toml``; every key optional, unknown keys and wrong types refused)::

    [defaults]
    model = "ResNet-50"      # a family (ResNet-18, ResNet-50, Transformer, LM, Recommendation, A3C,
                             # CycleGAN) or a Gavel job type such as "LM (batch size 80)"
    halvings = 2             # 0..6: the requirement set is the rigid count and this many halvings
    gpu_type = "v100"        # k80, p100 or v100: where run times were measured when TRES names no type
    use_hops_comments = true # read #HOPS from admin comments

    [[job]]                  # overrides; the first [[job]] whose given match keys all match is used
    user = "alice"           # match keys: job_id, user, name_prefix, partition (at least one)
    model = "LM"             # what it sets: model, requirements (a list of GPU counts), samples
    requirements = [2, 4, 8]
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hops_slurm import tomlfile
from hops_slurm.directives import HopsDirectives
from hops_slurm.errors import ConfigError, DirectiveError, HopsError
from hops_slurm.sim.groundtruth import GroundTruth, family
from hops_slurm.sim.workload import FAMILY_DEFAULT, MULTI_GPU_FAMILIES, JobSpec
from hops_slurm.text import printable, read_utf8
from hops_slurm.validation import format_validation_error
from hops_slurm.whatif.history import HistoryJob, Problem

#: ``#HOPS model=`` zoo names -> the simulator family whose measured throughput stands in for them
ZOO_FAMILY = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "vgg11": "ResNet-50", "mobilenetv2": "ResNet-18",
              "vit": "Transformer", "bert": "Transformer", "gpt2": "LM"}
MAX_OVERRIDES = 1000
MAX_FILE = 1024 * 1024

Name = Annotated[str, Field(min_length=1, max_length=128, strict=True)]
Count = Annotated[int, Field(ge=1, le=4096, strict=True)]


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    model: Name = "ResNet-50"
    halvings: Annotated[int, Field(ge=0, le=6)] = 2
    gpu_type: Name = "v100"
    use_hops_comments: bool = True


class Override(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    job_id: Name | None = None
    user: Name | None = None
    name_prefix: Name | None = None
    partition: Name | None = None
    model: Name | None = None
    requirements: Annotated[list[Count], Field(min_length=1, max_length=8)] | None = None
    samples: Annotated[float, Field(gt=0, le=1e15, allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _has_match(self) -> Override:
        if not any((self.job_id, self.user, self.name_prefix, self.partition)):
            raise ValueError("give at least one match key: job_id, user, name_prefix or partition")
        if self.requirements is not None and len(set(self.requirements)) != len(self.requirements):
            raise ValueError("requirements must be distinct GPU counts")
        return self

    def matches(self, job: HistoryJob) -> bool:
        return ((self.job_id is None or job.job_id == self.job_id)
                and (self.user is None or job.user == self.user)
                and (self.name_prefix is None or job.name.startswith(self.name_prefix))
                and (self.partition is None or job.partition == self.partition))


class Assumptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    defaults: Defaults = Defaults()
    job: Annotated[list[Override], Field(max_length=MAX_OVERRIDES)] = []

    @model_validator(mode="after")
    def _known(self) -> Assumptions:
        truth = GroundTruth()
        _model_name(truth, self.defaults.model)
        if self.defaults.gpu_type not in truth.gpu_types:
            raise ValueError(f"defaults.gpu_type {self.defaults.gpu_type!r}: use one of {', '.join(truth.gpu_types)}")
        for i, o in enumerate(self.job):
            if o.model is not None:
                try:
                    _model_name(truth, o.model)
                except ValueError as exc:
                    raise ValueError(f"job[{i}]: {exc}") from None
        return self


def _model_name(truth: GroundTruth, name: str) -> str:
    if name in truth.models:
        return name
    if name in FAMILY_DEFAULT:
        return FAMILY_DEFAULT[name]
    raise ValueError(f"unknown model {printable(name, 60)!r}: use a family ({', '.join(FAMILY_DEFAULT)}) "
                     "or a Gavel job type such as 'LM (batch size 80)'")


def load_assumptions(path: Path | None) -> Assumptions:
    """The defaults, or the file at ``path`` validated strictly (every problem, with its key path)."""
    if path is None:
        return Assumptions()
    try:
        data = tomlfile.loads(read_utf8(path, "assumptions file", limit=MAX_FILE))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{printable(path, 200)}: not valid TOML: {exc}") from None
    try:
        return Assumptions.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{printable(path, 200)}: invalid assumptions:\n{format_validation_error(exc)}") from None


@dataclass(frozen=True)
class Derived:
    """How one job was turned into a simulator job (kept for the per-job output)."""

    spec: JobSpec
    source: str  # "hops" (its #HOPS comment), "override" (a [[job]] entry) or "default"
    rigid: int
    gpu_type: str
    limit_source: str = "assumed"  # its time limit: "recorded" (the export's) or "assumed" (assumed_limits)


def halving_set(rigid: int, halvings: int) -> tuple[int, ...]:
    return tuple(sorted({max(1, rigid >> k) for k in range(halvings + 1)}))


def derive(job: HistoryJob, t0: float, a: Assumptions, truth: GroundTruth, max_gpus: int,
           gpus_per_node: int, time_limit: float | None = None) -> Derived:
    """The simulator job for a replayable ``job`` (submitted ``job.submit - t0`` after the first);
    raises :class:`HopsError` with the reason when it cannot be replayed on this cluster. ``time_limit``:
    its limit when the export records none (:func:`assumed_limits`)."""
    d = a.defaults
    model, reqs, samples, source = _model_name(truth, d.model), halving_set(job.gpus, d.halvings), None, "default"
    if d.use_hops_comments and job.hops.strip():
        try:
            hops = HopsDirectives.from_canonical(job.hops)
        except DirectiveError as exc:
            raise HopsError(f"admin comment is not a valid #HOPS form ({exc}); fix it or set "
                            "use_hops_comments = false") from None
        reqs = hops.gpus
        model = _model_name(truth, ZOO_FAMILY.get(hops.model, d.model))
        source = "hops"
    override = next((o for o in a.job if o.matches(job)), None)
    if override is not None:
        source = "override"
        if override.model is not None:
            model = _model_name(truth, override.model)
        if override.requirements is not None:
            reqs = tuple(sorted(override.requirements))
        samples = override.samples
    if family(model) not in MULTI_GPU_FAMILIES and reqs != (1,):
        if job.gpus == 1:
            reqs = (1,)
        else:
            raise HopsError(f"model {model!r} runs on one GPU only, the job held {job.gpus}; "
                            "give it another model in the assumptions file")
    if job.gpus > max_gpus:
        raise HopsError(f"held {job.gpus} GPUs, the simulated cluster has {max_gpus}: left out (give a larger --cluster)")
    reqs = tuple(r for r in reqs if r <= max_gpus)
    if not reqs:
        raise HopsError(f"no GPU count of its requirement set fits the simulated cluster ({max_gpus} GPUs)")
    gpu_type = job.gpu_type if job.gpu_type in truth.gpu_types else d.gpu_type
    if samples is None:
        spread = job.nodes > 1 if job.nodes else job.gpus > gpus_per_node
        rate = truth.samples_per_second(model, gpu_type, job.gpus, spread)
        if not rate > 0:
            raise HopsError(f"model {model!r} has no measured throughput on {job.gpus} {gpu_type} GPUs; "
                            "give it another model in the assumptions file")
        samples = max(job.run_time or 0.0, 1.0) * rate
    if not math.isfinite(samples) or samples <= 0:
        raise HopsError("derived total samples are not a positive number")
    limit = job.time_limit if job.time_limit is not None else time_limit
    spec = JobSpec(job.job_id, round(job.submit - t0, 3), model, reqs, samples, job.user, time_limit=limit)
    return Derived(spec, source, job.gpus, gpu_type, "recorded" if job.time_limit is not None else "assumed")


def assumed_limits(jobs: list[HistoryJob]) -> dict[str, float]:
    """Partition -> the time limit assumed for its jobs whose export records none (no ``Timelimit``
    field, or ``UNLIMITED``): the longest run time recorded in that partition, or anywhere in the export,
    at least one second. Slurm's limit was at least that long; a site's default limit is one limit for
    every job, so a shorter job does not fit into the gap before a reserved start any better than a
    long one (Slurm's backfill plans with limits, never with run times)."""
    longest: dict[str, float] = {}
    for j in jobs:
        if j.run_time is not None:
            longest[j.partition] = max(longest.get(j.partition, 1.0), j.run_time)
    overall = max(longest.values(), default=1.0)
    return {**{j.partition: overall for j in jobs}, **longest}


def derive_all(jobs: list[HistoryJob], a: Assumptions, max_gpus: int, gpus_per_node: int,
               problems: list[Problem]) -> list[Derived]:
    """Simulator jobs for ``jobs`` (submission order); a job that cannot be derived is a problem line."""
    if not jobs:
        return []
    truth = GroundTruth()
    t0 = min(j.submit for j in jobs)
    limits = assumed_limits(jobs)
    out = []
    for job in jobs:
        try:
            out.append(derive(job, t0, a, truth, max_gpus, gpus_per_node, limits.get(job.partition)))
        except HopsError as exc:
            problems.append(Problem(job.where, str(exc)))
    return out
