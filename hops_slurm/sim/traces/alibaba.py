"""Alibaba's GPU cluster trace v2023 (``cluster-trace-gpu-v2023/csv``) -> jobs and a cluster.

Data flow: ``--workload alibaba:POD_CSV`` -> :func:`import_pods` (``openb_pod_list_*.csv``: one task per
row) -> rigid :class:`JobSpec` with GPU-type constraints; ``--cluster alibaba:NODE_CSV`` ->
:func:`import_nodes` (``openb_node_list_*.csv``) -> a :class:`ClusterSpec` of the trace's own nodes.
What was assumed goes into :class:`hops_slurm.sim.traces.rows.Imported` (docs/traces.md, "Alibaba").

* The trace has no model identity and no per-type speed: every GPU model maps onto one ground-truth
  type (:data:`TRUTH_TYPE`) and keeps its name as the node's server class (its feature), so a task runs
  as long on any node it may use as it ran in the trace: ``deletion_time - scheduled_time`` seconds on
  its GPUs in one node, as the work of :data:`MODEL` (spread over nodes it runs at the ground truth's
  spread speed: slower at 2 GPUs, faster at 4 and 8, as Gavel measured ResNet-50 on v100).
* ``num_gpu`` GPUs, rigid; ``gpu_spec`` (``V100M16|V100M32``) becomes the job's classes; a task
  sharing a GPU (``gpu_milli`` < 1000) takes a whole one (this project's job model has whole GPUs).
* Left out, and counted: CPU-only tasks (``num_gpu`` 0), tasks never scheduled (no run time), tasks
  whose run is 0 s. Tasks still running at the trace's end keep the run time the trace shows.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import MAX_NODES, ClusterSpec, ProfilerSpec, ServerKind
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.traces.rows import Imported, RowErrors, number, read_rows
from hops_slurm.sim.workload import JobSpec
from hops_slurm.text import printable

#: the ground-truth type every Alibaba GPU model runs as (the trace publishes no speeds)
TRUTH_TYPE = "v100"
#: the model whose work an Alibaba task is given (measured on 1, 2, 4 and 8 GPUs)
MODEL = "ResNet-50 (batch size 64)"
GPU_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_TASKS = 200_000
MAX_GPUS_PER_TASK = 64
MAX_CLASSES = 16


def _classes(text: str | None) -> tuple[str, ...] | None:
    if not text or text.lower() == "nan":
        return None
    parts = tuple(p.strip() for p in text.split("|"))
    if len(parts) > MAX_CLASSES or not all(GPU_MODEL.fullmatch(p) for p in parts):
        raise ValueError(f"gpu_spec must be GPU models joined by '|' (at most {MAX_CLASSES}), got {printable(text, 60)!r}")
    return tuple(sorted(set(parts)))


def import_pods(path: Path, jobs: int | None = None) -> tuple[tuple[JobSpec, ...], Imported]:
    """The GPU tasks of a pod list as rigid jobs (the first ``jobs`` by creation time when given)."""
    errors = RowErrors(path)
    rows = read_rows(path, "Alibaba pod list", ("name", "num_gpu", "creation_time", "deletion_time", "scheduled_time"),
                     max_rows=MAX_TASKS, errors=errors)
    truth = GroundTruth()
    left: Counter[str] = Counter()
    truth_less = 0
    tasks: list[tuple[float, str, int, float, tuple[str, ...] | None, bool]] = []
    for lineno, row in rows:
        try:
            name = row.get("name", "")
            if not TASK_NAME.fullmatch(name):
                raise ValueError(f"name must match {TASK_NAME.pattern}, got {printable(name, 40)!r}")
            gpus = int(number(row, "num_gpu", high=MAX_GPUS_PER_TASK, integer=True))
            created = number(row, "creation_time", high=1e10)
            milli = number(row, "gpu_milli", high=1000) if "gpu_milli" in row else 1000.0
            classes = _classes(row.get("gpu_spec"))
            if gpus == 0:
                left["CPU-only (num_gpu 0)"] += 1
                continue
            if "scheduled_time" not in row or "deletion_time" not in row:
                left["never scheduled (no run time)"] += 1
                continue
            start, end = number(row, "scheduled_time", high=1e10), number(row, "deletion_time", high=1e10)
            if start < created:
                raise ValueError(f"scheduled_time {start:g} is before creation_time {created:g}")
            if end < start:
                raise ValueError(f"deletion_time {end:g} is before scheduled_time {start:g}")
            if end == start:
                left["run of 0 s"] += 1
                continue
            if truth.samples_per_second(MODEL, TRUTH_TYPE, gpus, False) <= 0:
                truth_less += 1
                continue
            tasks.append((created, name, gpus, end - start, classes, 0 < milli < 1000))
        except ValueError as exc:
            errors.add(lineno, str(exc))
    errors.raise_if_any()
    tasks.sort()
    if jobs is not None:
        tasks = tasks[:jobs]
    if not tasks:
        raise HopsError(f"Alibaba pod list {printable(path)} has no GPU task with a run time")
    if len({t[1] for t in tasks}) != len(tasks):
        raise HopsError(f"Alibaba pod list {printable(path)}: task names must be unique")
    t0 = tasks[0][0]
    out = tuple(JobSpec(name, created - t0, MODEL, (gpus,), run * truth.samples_per_second(MODEL, TRUTH_TYPE, gpus, False),
                        "", classes=classes) for created, name, gpus, run, classes, _s in tasks)
    shared = sum(1 for t in tasks if t[5])
    constrained = sum(1 for t in tasks if t[4] is not None)
    notes = Imported([f"Alibaba pod list {path.name}: {len(out)} GPU tasks as rigid {MODEL} jobs running "
                      f"their recorded time on one node of any allowed type (no model identity, no per-type speed: "
                      f"every GPU model runs as {TRUTH_TYPE}); {constrained} with a GPU-type constraint; "
                      "cpu_milli, memory_mib, qos and pod_phase not used"])
    if shared:
        notes.notes.append(f"{shared} tasks share a GPU (gpu_milli < 1000): each given a whole GPU")
    for why, n in sorted(left.items()):
        notes.notes.append(f"{n} tasks left out: {why}")
    if truth_less:
        notes.notes.append(f"{truth_less} tasks left out: the ground truth has no speed for their GPU count")
    if jobs is not None:
        notes.notes.append(f"only the first {len(out)} tasks by creation time (jobs={jobs})")
    return out, notes


def import_nodes(path: Path) -> tuple[ClusterSpec, Imported]:
    """A cluster of the node list's GPU nodes: one server kind per (GPU model, GPUs per node)."""
    errors = RowErrors(path)
    rows = read_rows(path, "Alibaba node list", ("sn", "gpu", "model"), max_rows=MAX_NODES, errors=errors)
    kinds: Counter[tuple[str, int]] = Counter()
    cpu_only = 0
    for lineno, row in rows:
        try:
            gpus = int(number(row, "gpu", high=64, integer=True))
            model = row.get("model", "")
            if gpus == 0:
                cpu_only += 1
                continue
            if not GPU_MODEL.fullmatch(model) or model.lower() == "nan":
                raise ValueError(f"model must be a GPU model name, got {printable(model, 40)!r}")
            kinds[(model, gpus)] += 1
        except ValueError as exc:
            errors.add(lineno, str(exc))
    errors.raise_if_any()
    if not kinds:
        raise HopsError(f"Alibaba node list {printable(path)} has no GPU node")
    server_kinds = [ServerKind(name=f"{model.lower()}-{gpus}g", gpu_type=TRUTH_TYPE, gpus=gpus, count=count,
                               features=[model], paper_hardware=f"Alibaba {model}")
                    for (model, gpus), count in sorted(kinds.items())]
    spec = ClusterSpec(name=f"alibaba-{path.stem}"[:64], description=f"GPU nodes of {path.name}",
                       profiler=ProfilerSpec(gpus_per_type=1), server_kind=server_kinds)
    notes = Imported([f"Alibaba node list {path.name}: {sum(kinds.values())} GPU nodes, {spec.total_gpus} GPUs, "
                      f"{len(server_kinds)} kinds ({', '.join(sorted({m for m, _g in kinds}))}); every GPU model "
                      f"runs as {TRUTH_TYPE}, its name is the node's feature; nodes renamed <model>-<N>g-<index>"])
    if cpu_only:
        notes.notes.append(f"{cpu_only} nodes without GPUs left out")
    return spec, notes
