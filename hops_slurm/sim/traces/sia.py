"""Sia's workloads (``workloads/<trace>/workload-K.csv`` of the Sia artifact) -> :class:`JobSpec`.

Data flow: ``--workload sia:PATH`` -> :func:`import_sia` reads the workload CSV (``name, time,
application, num_replicas, batch_size``) and, per application, its profiles
(:mod:`hops_slurm.sim.traces.sia_profiles`) -> one rigid job per row on this project's ground truth,
with what was assumed in :class:`hops_slurm.sim.traces.rows.Imported` (docs/traces.md).

How a Sia job becomes a Hops job (docs/traces.md, "Sia"):

* requirement: its ``num_replicas`` GPUs, rigid (as Sia's Gavel runs it);
* model: a Gavel job type of the same kind (:data:`MODEL`), which sets how it scales and how fast it runs
  on each ground-truth GPU type;
* work: its run time in Sia's own model on the reference type (:data:`REFERENCE`, Sia's calibration
  type) at its batch size, fixed (the steps to train its epochs x the seconds per step on its GPUs
  packed on 8-GPU nodes), made into samples at the ground truth's speed of that model on the GPU type
  the reference maps onto (:data:`SIA_TYPES`). On the other types it runs at the ground truth's speed,
  not at Sia's measured one; the import says by how much the two differ, per application.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.groundtruth import GroundTruth, family
from hops_slurm.sim.traces.rows import Imported, RowErrors, number, read_rows
from hops_slurm.sim.traces.sia_profiles import APP_NAME, Application, load_application, seconds_per_step, steps_to_complete
from hops_slurm.sim.workload import FAMILY_DEFAULT, MULTI_GPU_FAMILIES, JobSpec
from hops_slurm.text import printable

#: Sia's GPU types (its file suffixes) -> (the ground-truth type it maps onto, GPUs per node in Sia's cluster)
SIA_TYPES = {"aws": ("k80", 4), "rtx": ("p100", 8), "dgx-ext": ("v100", 8)}
#: the type whose profiles set each job's run time (Sia's own calibration type)
REFERENCE = "rtx"
#: Sia's applications -> the Gavel model family of the same kind
MODEL = {"cifar10": "ResNet-18", "imagenet": "ResNet-50", "yolov3": "ResNet-50", "bert": "Transformer",
         "deepspeech2": "LM", "ncf": "Recommendation"}
#: a model for an application not listed above
OTHER_MODEL = "ResNet-50"
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_JOBS = 100_000


def find_profiles(workload: Path) -> Path:
    """The artifact's ``traces`` folder beside the workloads: the nearest ancestor holding one."""
    for folder in list(workload.resolve().parents)[:5]:
        if (folder / "traces").is_dir():
            return folder / "traces"
    raise HopsError(f"no Sia profiles found for {printable(workload)}: no 'traces' folder in the 5 folders above "
                    "it; give one with sia:PATH,profiles=DIR")


def import_sia(path: Path, profiles: Path | None = None) -> tuple[tuple[JobSpec, ...], Imported]:
    """The jobs of one Sia workload CSV, and the notes on what the import assumed."""
    profiles = profiles or find_profiles(path)
    truth = GroundTruth()
    errors = RowErrors(path)
    rows = read_rows(path, "Sia workload", ("name", "time", "application", "num_replicas", "batch_size"),
                     max_rows=MAX_JOBS, errors=errors)
    apps: dict[str, Application] = {}
    out: list[JobSpec] = []
    clipped: Counter[str] = Counter()
    per_app: Counter[str] = Counter()
    extra = sorted({k for _n, row in rows for k in row} - {"name", "time", "application", "num_replicas", "batch_size"})
    ref_type = SIA_TYPES[REFERENCE][0]
    for lineno, row in rows:
        try:
            name = row.get("name", "")
            if not JOB_NAME.fullmatch(name):
                raise ValueError(f"name must match {JOB_NAME.pattern}, got {printable(name, 40)!r}")
            arrival = number(row, "time", high=10 * 365 * 86400.0)
            app_name = row.get("application", "")
            if not APP_NAME.fullmatch(app_name):
                raise ValueError(f"application must match {APP_NAME.pattern}, got {printable(app_name, 40)!r}")
            gpus = int(number(row, "num_replicas", low=1, high=4096, integer=True))
            batch = number(row, "batch_size", low=1, high=1e7, integer=True)
            if not (profiles / app_name).is_dir():
                raise ValueError(f"application {app_name!r}: no profiles in {printable(profiles)}")
            if app_name not in apps:  # a bad profile file is its own error, with its own rows
                apps[app_name] = load_application(profiles / app_name, REFERENCE)
            app = apps[app_name]
            model = FAMILY_DEFAULT[MODEL.get(app_name, OTHER_MODEL)]
            if family(model) not in MULTI_GPU_FAMILIES and gpus > 1:
                clipped[app_name] += 1
                gpus = 1
            per_step = seconds_per_step(app, gpus, SIA_TYPES[REFERENCE][1], batch)
            if per_step is None:
                raise ValueError(f"{app_name}'s profiles on {REFERENCE} say nothing about {gpus} GPUs")
            run = steps_to_complete(app, batch) * per_step
            speed = truth.samples_per_second(model, ref_type, gpus, gpus > SIA_TYPES[REFERENCE][1])
            if speed <= 0:
                raise ValueError(f"the ground truth's {model} cannot run on {gpus} {ref_type} GPUs")
            out.append(JobSpec(name, arrival, model, (gpus,), run * speed, ""))
            per_app[app_name] += 1
        except ValueError as exc:
            errors.add(lineno, str(exc))
    errors.raise_if_any()
    if not out:
        raise HopsError(f"Sia workload {printable(path)} has no jobs")
    if len({j.job_id for j in out}) != len(out):
        raise HopsError(f"Sia workload {printable(path)}: job names must be unique")
    notes = Imported()
    notes.notes.append(f"Sia workload {path.name}: {len(out)} rigid jobs ("
                       + ", ".join(f"{a} {n} as {MODEL.get(a, OTHER_MODEL)}" for a, n in sorted(per_app.items()))
                       + f"); work = run time at the trace's batch size on Sia's {REFERENCE} profiles "
                       f"(= {ref_type} here); Sia's batch-size tuning and goodput are not modelled")
    if extra:
        notes.notes.append(f"columns ignored: {', '.join(printable(e, 40) for e in extra[:8])} (every job is rigid)")
    for a, n in sorted(clipped.items()):
        notes.notes.append(f"{n} {a} jobs asked for several GPUs; {MODEL.get(a, OTHER_MODEL)} runs on one: given 1")
    notes.notes.extend(speed_notes(profiles, sorted(per_app), truth))
    return tuple(sorted(out, key=lambda j: (j.arrival, j.job_id))), notes


def speed_notes(profiles: Path, apps: list[str], truth: GroundTruth) -> list[str]:
    """Per application: Sia's measured speed of each type against its reference, beside the ground truth's
    for the mapped types (1 GPU, the smallest validated batch size) - where the two disagree, the
    simulated jobs run at the ground truth's."""
    out = []
    for name in apps:
        parts = []
        try:
            ref = load_application(profiles / name, REFERENCE)
            base = seconds_per_step(ref, 1, 8, ref.init_batch)
            model = FAMILY_DEFAULT[MODEL.get(name, OTHER_MODEL)]
            ref_truth = truth.samples_per_second(model, SIA_TYPES[REFERENCE][0], 1, False)
            for sia_type, (ours, per_node) in SIA_TYPES.items():
                if sia_type == REFERENCE or not (profiles / name / f"placements-{sia_type}.csv").is_file():
                    continue
                other = seconds_per_step(load_application(profiles / name, sia_type), 1, per_node, ref.init_batch)
                if base and other and ref_truth > 0:
                    mine = truth.samples_per_second(model, ours, 1, False) / ref_truth
                    parts.append(f"{sia_type} {base / other:.2f}x in Sia, {ours} {mine:.2f}x here")
        except HopsError:
            continue
        if parts:
            out.append(f"speed vs {REFERENCE} ({name}): " + "; ".join(parts))
    return out
