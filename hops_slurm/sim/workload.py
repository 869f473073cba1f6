"""Workloads for the simulator: generators and trace files -> a tuple of :class:`JobSpec`.

Data flow: ``--workload SPEC`` -> :func:`load_workload` -> job specs (arrival time, model, requirement
set, total samples, user) -> the simulated backend submits each at its arrival time.

Specs (``name`` or ``name:key=value,key=value``):

* ``paper`` — Hops Table 2 style. Jobs fall into GPU-duration categories S (<1 GPU-h), M (1-10),
  L (10-50), XL (50-100); GPU-hours are log-uniform inside the category and measured at the job's
  median requirement on p100 (the middle GPU type). Requirement sets: 1-8 distinct counts from lo..max
  including max, max by category (S: 1/2/4, M: 2/4/8, L: 4/8/16, XL: 8/16), lo the smallest count on
  which the job takes at most 6 p100-hours (so no job runs for days on one GPU; the paper's makespans
  are ~10 h). Single-GPU-only models (Recommendation, A3C, CycleGAN) appear only as S jobs with
  requirement (1,); M/L/XL jobs are ResNet-18/50, Transformer or LM. Poisson arrivals. Defaults follow
  the paper: 25 jobs over 2.5 h (10/h) for a cluster under 128 GPUs, mix S/M/L/XL = 30/30/28/12 %
  (~16.9 p100-GPU-h per job, ~420 on 64 GPUs: ~6.6 cluster-hours of p100 work); 500 jobs at 100/h for
  larger clusters, mix 40/30/22/8 % (~12.6 per job, ~6300 on 512 GPUs: ~12 cluster-hours). Calibrated
  so the Hops policy's average wait lands near the paper's (0.95 h and 0.87 h): measured 0.91 h
  (paper-64, seeds 0-1) and 1.06 h (paper-512, seed 0). Keys: ``jobs``, ``rate`` (jobs/h), ``mix``
  (``30/30/28/12``).
* ``gavel`` — Gavel's generator (artifact ``utils.py``): duration 60*10^U(3,4) s with probability 0.2
  else 60*10^U(1.5,3) s on one V100; scale factor 1/2/4/8 with 70/10/15/5 %; multi-GPU jobs only for
  ResNet-18/50, Transformer, LM; rigid requirement = the scale factor. Keys: ``jobs`` (100), ``rate`` (30).
* ``philly`` — a Philly-derived trace from hops_slurm/data/gavel/msr-seed0 (Gavel artifact; 7 tab
  separated fields). Keys: ``trace`` (file stem, default 0e4a51), ``jobs`` (first N, default all).
* ``sweep`` — the paper workload at another rate (§4.6: 30, 60, 120, 300, 600, 1200 jobs/h):
  ``sweep:rate=300`` (= ``paper:rate=300``).
* a path to a ``.csv`` or ``.jsonl`` file, columns/keys: ``arrival`` (seconds from start, >= 0),
  ``model`` (a Gavel job type such as ``ResNet-50 (batch size 64)`` or a family such as ``ResNet-50``),
  ``requirements`` (GPU counts, e.g. ``1 2 4`` or ``[1,2,4]``), one of ``samples`` (total samples)
  or ``duration`` (seconds on the smallest requirement on one v100 server), optional ``job_id``,
  ``user``, ``checkpoint_interval`` (seconds of run time between its checkpoints),
  ``checkpoint_on_notice`` (true/false: it checkpoints when told it will be preempted); these two
  default to the cost model's (:mod:`hops_slurm.sim.costs`); and ``time_limit`` (seconds of its Slurm
  time limit, what Slurm's backfill plans with; ``hops-slurm whatif --out`` writes it). Every bad row is
  reported with its line number.

Seeds: a generator draws from ``random.Random(seed)`` only, so a (spec, seed) pair is reproducible.
"""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hops_slurm.text import read_utf8
from hops_slurm.errors import HopsError
from hops_slurm.sim.groundtruth import GroundTruth, family

#: Gavel's distributed-capable families (artifact utils.py); others run on one GPU only
MULTI_GPU_FAMILIES = ("ResNet-18", "ResNet-50", "Transformer", "LM")
#: the variant used when a file names only a family
FAMILY_DEFAULT = {
    "ResNet-18": "ResNet-18 (batch size 64)",
    "ResNet-50": "ResNet-50 (batch size 64)",
    "Transformer": "Transformer (batch size 64)",
    "LM": "LM (batch size 20)",
    "Recommendation": "Recommendation (batch size 2048)",
    "A3C": "A3C",
    "CycleGAN": "CycleGAN",
}
CATEGORIES = (("S", 0.1, 1.0), ("M", 1.0, 10.0), ("L", 10.0, 50.0), ("XL", 50.0, 100.0))
CATEGORY_MAX_REQ = {"S": (1, 2, 4), "M": (2, 4, 8), "L": (4, 8, 16), "XL": (8, 16)}
REFERENCE_TYPE = "p100"
#: a paper-workload job runs at most this long (p100 hours) on its smallest requirement
MAX_HOURS_AT_MIN = 6.0


@dataclass(frozen=True)
class JobSpec:
    job_id: str
    arrival: float
    model: str
    requirements: tuple[int, ...]
    total_samples: float
    user: str = ""
    category: str = ""
    #: the samples= its owner declares, when not the truth (the honesty bench's liars and overstaters)
    declared_samples: float | None = None
    #: seconds of run time between its periodic checkpoints (None: the cost model's default,
    #: :class:`hops_slurm.sim.costs.CostModel`)
    checkpoint_interval: float | None = None
    #: whether it checkpoints when given a preemption notice (None: the cost model draws it)
    checkpoint_on_notice: bool | None = None
    #: seconds of its Slurm time limit, when known (a job replayed from a sacct export, hops_slurm.whatif);
    #: Slurm's backfill plans with it (planner.baselines.slurm_backfill)
    time_limit: float | None = None
    #: the server classes (the administrator's node features) it may run on, as ``--constraint=A|B``
    #: asks Slurm (an imported trace's GPU-type constraint, hops_slurm.sim.traces.alibaba); None: any node
    classes: tuple[str, ...] | None = None

    @property
    def declared(self) -> float:
        """What the scheduler is told: ``declared_samples``, or the truth for an honest job, as the job's
        ``#HOPS samples=`` line carries it (:func:`declared_count`). Both simulated paths read this one
        number: the fast path plans with it, the engine path's simulated hook writes it into the directive
        the engine parses (:func:`hops_slurm.sim.slurmctld.directives`)."""
        return declared_count(self.total_samples if self.declared_samples is None else self.declared_samples)


def declared_count(samples: float) -> float:
    """``samples`` as a ``#HOPS samples=`` line states it: a whole number of samples, at least 1 (the
    directive's count is an integer, :class:`hops_slurm.directives.HopsDirectives`). A workload's truth is
    fractional; were the fast path to plan with the fraction and the engine with the directive's integer,
    every eq. 9 age would differ in its last digits and the planner's ties would break apart between the
    paths (docs/results/engine-sim.md)."""
    return float(max(1, round(samples)))


def _usable_models(truth: GroundTruth, max_gpus: int) -> list[str]:
    """Models with a nonzero throughput on every GPU type at every count they may be asked for."""
    out = []
    for model in truth.models:
        counts = (1, 2, 4, 8) if family(model) in MULTI_GPU_FAMILIES else (1,)
        counts = tuple(c for c in counts if c <= max_gpus)
        if all(truth.samples_per_second(model, t, c, s) > 0 for t in truth.gpu_types for c in counts for s in (False, True)):
            out.append(model)
    return out


def _poisson_arrivals(rng: random.Random, n: int, rate_per_hour: float) -> list[float]:
    t, out = 0.0, []
    for _ in range(n):
        out.append(t)
        t += -math.log(1.0 - rng.random()) * 3600.0 / rate_per_hour
    return out


def paper_workload(seed: int, *, jobs: int, rate: float, mix: tuple[float, ...]) -> tuple[JobSpec, ...]:
    truth = GroundTruth()
    rng = random.Random(seed)
    models = _usable_models(truth, 8)
    arrivals = _poisson_arrivals(rng, jobs, rate)
    out = []
    for i, arrival in enumerate(arrivals):
        cat, lo, hi = rng.choices(CATEGORIES, weights=mix)[0]
        gpu_hours = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        multi = [m for m in models if family(m) in MULTI_GPU_FAMILIES]
        model = rng.choice(models if cat == "S" else multi)
        if family(model) in MULTI_GPU_FAMILIES:
            # smallest count that finishes within MAX_HOURS_AT_MIN on it; the set spans lo..top
            lo = min(max(1, math.ceil(gpu_hours / MAX_HOURS_AT_MIN)), 16)
            top = max(rng.choice(CATEGORY_MAX_REQ[cat]), lo)
            size = min(top - lo + 1, rng.randint(1, 8))
            reqs = tuple(sorted({top, *rng.sample(range(lo, top), size - 1)}))
        else:
            reqs = (1,)
        median = reqs[(len(reqs) - 1) // 2]
        thr = truth.samples_per_second(model, REFERENCE_TYPE, median, median > 8)
        seconds = gpu_hours * 3600.0 / median
        out.append(JobSpec(f"j{i:04d}", round(arrival, 3), model, reqs, seconds * thr, f"u{rng.randint(0, 9)}", cat))
    return tuple(out)


def gavel_workload(seed: int, *, jobs: int, rate: float) -> tuple[JobSpec, ...]:
    truth = GroundTruth()
    rng = random.Random(seed)
    singles = _usable_models(truth, 1)
    multis = [m for m in _usable_models(truth, 8) if family(m) in MULTI_GPU_FAMILIES]
    out = []
    for i, arrival in enumerate(_poisson_arrivals(rng, jobs, rate)):
        x = rng.uniform(3, 4) if rng.random() < 0.2 else rng.uniform(1.5, 3)
        duration = 60.0 * 10**x
        r = rng.random()
        scale = 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8
        model = rng.choice(singles if scale == 1 else multis)
        thr = truth.samples_per_second(model, "v100", scale, False)
        out.append(JobSpec(f"j{i:04d}", round(arrival, 3), model, (scale,), duration * thr, f"u{rng.randint(0, 9)}"))
    return tuple(out)


def philly_traces() -> list[str]:
    folder = resources.files("hops_slurm") / "data" / "gavel" / "msr-seed0"
    return sorted(p.name.removesuffix(".trace") for p in folder.iterdir() if p.name.endswith(".trace"))


def philly_workload(trace: str, jobs: int | None) -> tuple[JobSpec, ...]:
    truth = GroundTruth()
    folder = resources.files("hops_slurm") / "data" / "gavel" / "msr-seed0"
    path = folder / f"{trace}.trace"
    if not path.is_file():
        raise HopsError(f"philly trace {trace!r} not found; known: {', '.join(philly_traces())}")
    out = []
    for lineno, line in enumerate(read_utf8(path, "workload file").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 7:
            raise HopsError(f"{path}:{lineno}: expected 7 tab-separated fields, got {len(fields)}")
        model, steps, arrival, scale = fields[0], float(fields[4]), float(fields[5]), int(fields[6])
        truth.check_model(model)
        samples = steps * truth.samples_per_second(model, "v100", 1, False) / max(
            truth.steps_per_second(model, "v100", 1, False), 1e-12
        )
        out.append(JobSpec(f"j{len(out):04d}", arrival, model, (scale,), samples, ""))
        if jobs is not None and len(out) >= jobs:
            break
    if not out:
        raise HopsError(f"philly trace {trace!r} is empty; pick another: {', '.join(philly_traces())}")
    return tuple(out)


def _parse_reqs(value: object) -> tuple[int, ...]:
    if isinstance(value, list):
        items = value
    else:
        items = str(value).replace(",", " ").replace(";", " ").replace("[", " ").replace("]", " ").split()
    reqs = tuple(int(x) for x in items)
    if not reqs or any(r <= 0 for r in reqs):
        raise ValueError(f"requirements must be positive GPU counts, got {value!r}")
    return tuple(sorted(set(reqs)))


def _interval(value: object) -> float | None:
    """A row's ``checkpoint_interval``: seconds > 0 (``inf``: never), or None when absent."""
    if value is None:
        return None
    seconds = float(str(value))
    if not seconds > 0:
        raise ValueError(f"checkpoint_interval must be > 0 seconds, got {value!r}")
    return seconds


def _limit(value: object) -> float | None:
    """A row's ``time_limit``: seconds in (0, one year], or None when absent."""
    if value is None:
        return None
    seconds = float(str(value))
    if not 0 < seconds <= 366 * 86400:
        raise ValueError(f"time_limit must be seconds in (0, 31622400], got {value!r}")
    return seconds


def _flag(value: object) -> bool | None:
    """A row's ``checkpoint_on_notice``: true/false (JSON booleans, or the words), or None when absent."""
    if value is None or isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes", "1"):
        return True
    if word in ("false", "no", "0"):
        return False
    raise ValueError(f"checkpoint_on_notice must be true or false, got {value!r}")


def _resolve_model(truth: GroundTruth, name: str) -> str:
    if name in truth.models:
        return name
    if name in FAMILY_DEFAULT:
        return FAMILY_DEFAULT[name]
    raise ValueError(f"unknown model {name!r}; use a family ({', '.join(FAMILY_DEFAULT)}) or a Gavel job type")


def file_workload(path: Path) -> tuple[JobSpec, ...]:
    """Read a CSV or JSONL trace (format in the module docstring); every bad row is reported."""
    truth = GroundTruth()
    if not path.is_file():
        raise HopsError(f"workload file {path} not found")
    rows: list[tuple[int, dict]] = []
    if path.suffix == ".jsonl":
        for lineno, line in enumerate(read_utf8(path, "workload file").splitlines(), 1):
            if line.strip():
                try:
                    rows.append((lineno, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise HopsError(f"{path}:{lineno}: not JSON: {exc.msg}") from exc
    elif path.suffix == ".csv":
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            rows = [(i + 2, {k: v for k, v in row.items() if v not in (None, "")}) for i, row in enumerate(reader)]
    else:
        raise HopsError(f"workload file {path}: use a .csv or .jsonl file")
    errors, out = [], []
    for lineno, row in rows:
        try:
            unknown = set(row) - {"job_id", "arrival", "model", "requirements", "samples", "duration", "user",
                                  "checkpoint_interval", "checkpoint_on_notice", "time_limit"}
            if unknown:
                raise ValueError(f"unknown field(s) {sorted(unknown)}")
            for key in ("arrival", "model", "requirements"):
                if key not in row:
                    raise ValueError(f"missing {key!r}")
            arrival = float(row["arrival"])
            if not math.isfinite(arrival) or arrival < 0:
                raise ValueError(f"arrival must be >= 0 seconds, got {row['arrival']!r}")
            model = _resolve_model(truth, str(row["model"]))
            reqs = _parse_reqs(row["requirements"])
            if ("samples" in row) == ("duration" in row):
                raise ValueError("give exactly one of 'samples' or 'duration'")
            if "samples" in row:
                samples = float(row["samples"])
            else:
                samples = float(row["duration"]) * truth.samples_per_second(model, "v100", reqs[0], False)
            if not samples > 0:
                raise ValueError("samples/duration must be > 0")
            job_id = str(row.get("job_id", f"j{len(out):04d}"))
            out.append(JobSpec(job_id, arrival, model, reqs, samples, str(row.get("user", "")),
                               checkpoint_interval=_interval(row.get("checkpoint_interval")),
                               checkpoint_on_notice=_flag(row.get("checkpoint_on_notice")),
                               time_limit=_limit(row.get("time_limit"))))
        except (ValueError, TypeError) as exc:
            errors.append(f"{path}:{lineno}: {exc}")
    if errors:
        raise HopsError("invalid workload file:\n  " + "\n  ".join(errors))
    if not out:
        raise HopsError(f"workload file {path} has no jobs")
    ids = [j.job_id for j in out]
    if len(set(ids)) != len(ids):
        raise HopsError(f"workload file {path}: job_id values must be unique")
    return tuple(sorted(out, key=lambda j: (j.arrival, j.job_id)))


def _parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    name, _, rest = spec.partition(":")
    params = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq:
            raise HopsError(f"workload {spec!r}: parameters are key=value, got {part!r}")
        params[key.strip()] = value.strip()
    return name, params


def load_workload(spec: str, seed: int, *, cluster_gpus: int = 64) -> tuple[JobSpec, ...]:
    """The jobs of workload ``spec`` (see module docstring) for ``seed`` on a cluster of ``cluster_gpus``."""
    if Path(spec).suffix in (".csv", ".jsonl") or Path(spec).is_file():
        return file_workload(Path(spec))
    name, p = _parse_spec(spec)
    allowed = {"paper": {"jobs", "rate", "mix"}, "sweep": {"jobs", "rate", "mix"}, "gavel": {"jobs", "rate"},
               "philly": {"trace", "jobs"}}
    if name not in allowed:
        raise HopsError(f"unknown workload {spec!r}: use paper, sweep:rate=N, gavel, philly or a .csv/.jsonl file")
    if set(p) - allowed[name]:
        raise HopsError(f"workload {name}: unknown parameter(s) {sorted(set(p) - allowed[name])}; allowed {sorted(allowed[name])}")
    try:
        if name in ("paper", "sweep"):
            small = cluster_gpus < 128
            mix = tuple(float(x) for x in p["mix"].split("/")) if "mix" in p else ((30, 30, 28, 12) if small else (40, 30, 22, 8))
            if len(mix) != 4 or min(mix) < 0 or sum(mix) <= 0:
                raise ValueError("mix is four non-negative weights S/M/L/XL, e.g. 40/30/22/8")
            rate = float(p.get("rate", 10 if small else 100))
            jobs = int(p.get("jobs", 25 if small else 500))
            if rate <= 0 or jobs <= 0:
                raise ValueError("jobs and rate must be positive")
            return paper_workload(seed, jobs=jobs, rate=rate, mix=mix)
        if name == "gavel":
            return gavel_workload(seed, jobs=int(p.get("jobs", 100)), rate=float(p.get("rate", 30)))
        return philly_workload(p.get("trace", "0e4a51"), int(p["jobs"]) if "jobs" in p else None)
    except ValueError as exc:
        raise HopsError(f"workload {spec!r}: {exc}") from exc
