"""``--workload`` and ``--cluster`` specs that name a foreign trace -> jobs, a cluster, and notes.

Data flow: ``hops-slurm simulate`` / :func:`hops_slurm.sim.runner.compare` -> :func:`load_any_workload`
(``sia:PATH[,profiles=DIR]``, ``alibaba:PATH[,jobs=N]``; anything else goes to
:func:`hops_slurm.sim.workload.load_workload`; any of them may end in the time-scaled replay's keys,
``speedup=K``, ``start=S``, ``end=E``: :mod:`hops_slurm.sim.traces.timescale`) and
:func:`load_any_cluster` (``alibaba:NODE_CSV``; anything
else to :func:`hops_slurm.sim.cluster_spec.load_cluster`). The notes say what each import assumed; the
command prints them (docs/traces.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from hops_slurm.errors import HopsError
from hops_slurm.sim.classes import allowed_nodes
from hops_slurm.sim.cluster_spec import ClusterSpec, load_cluster
from hops_slurm.sim.traces.alibaba import import_nodes, import_pods
from hops_slurm.sim.traces.timescale import split_replay
from hops_slurm.sim.traces.rows import Imported
from hops_slurm.sim.traces.sia import import_sia
from hops_slurm.sim.workload import JobSpec, load_workload
from hops_slurm.text import printable

PREFIXES = ("sia:", "alibaba:")


def is_trace(spec: str) -> bool:
    return spec.startswith(PREFIXES)


def has_notes(spec: str) -> bool:
    """Whether loading ``spec`` says what it assumed: an imported trace, or any time-scaled replay."""
    return is_trace(spec) or split_replay(spec)[1] is not None


def _split(spec: str, allowed: set[str]) -> tuple[Path, dict[str, str]]:
    """``prefix:PATH[,key=value...]`` -> (PATH, {key: value}); a key must be one of ``allowed``."""
    body = spec.partition(":")[2]
    params: dict[str, str] = {}
    while True:
        m = re.search(r",([a-z]+)=([^,]*)$", body)
        if not m or m.group(1) not in allowed:
            break
        params[m.group(1)] = m.group(2)
        body = body[: m.start()]
    if not body:
        raise HopsError(f"workload {printable(spec, 200)!r}: give a path after the colon")
    return Path(body), params


def _natural(path: Path) -> tuple[object, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path.name))


def sia_file(path: Path, seed: int) -> Path:
    """A workload CSV, or for a folder its (seed+1)-th ``*.csv`` in natural order (workload-1 for seed 0)."""
    if not path.is_dir():
        return path
    files = sorted((p for p in path.glob("*.csv") if p.is_file()), key=_natural)[:10_000]
    if not files:
        raise HopsError(f"Sia workload folder {printable(path)} has no .csv file")
    if not 0 <= seed < len(files):
        raise HopsError(f"Sia workload folder {printable(path)} has {len(files)} workloads: seeds 0-{len(files) - 1} "
                        f"pick one each, got seed {seed}")
    return files[seed]


def workload_and_notes(spec: str, seed: int, cluster: ClusterSpec) -> tuple[tuple[JobSpec, ...], Imported]:
    """The jobs of any workload spec and what loading it assumed, after its time-scaled replay if any."""
    base, replay = split_replay(spec)
    if is_trace(base):
        jobs, notes = _trace(base, seed, cluster)
    else:
        jobs, notes = load_workload(base, seed, cluster_gpus=cluster.total_gpus), Imported()
    if replay is not None:
        jobs, note = replay.apply(jobs)
        notes.notes.append(note)
    return jobs, notes


def trace_workload(spec: str, seed: int, cluster: ClusterSpec) -> tuple[tuple[JobSpec, ...], Imported]:
    """The jobs of a ``sia:`` or ``alibaba:`` spec (with its replay keys, if any) and what the import assumed."""
    if not is_trace(spec):
        raise HopsError(f"not a trace workload: {printable(spec, 200)!r} (use {' or '.join(PREFIXES)})")
    return workload_and_notes(spec, seed, cluster)


def _trace(spec: str, seed: int, cluster: ClusterSpec) -> tuple[tuple[JobSpec, ...], Imported]:
    """The jobs of a ``sia:`` or ``alibaba:`` spec and what the import assumed; jobs whose GPU-type
    constraint names no class of ``cluster`` are left out (and counted in the notes)."""
    if spec.startswith("sia:"):
        path, params = _split(spec, {"profiles"})
        jobs, notes = import_sia(sia_file(path, seed), Path(params["profiles"]) if "profiles" in params else None)
    elif spec.startswith("alibaba:"):
        path, params = _split(spec, {"jobs"})
        count = params.get("jobs")
        if count is not None and not (count.isdigit() and 0 < int(count) <= 1_000_000):
            raise HopsError(f"workload {printable(spec, 200)!r}: jobs must be a whole number in 1-1000000")
        jobs, notes = import_pods(path, int(count) if count else None)
    else:
        raise HopsError(f"not a trace workload: {printable(spec, 200)!r} (use {' or '.join(PREFIXES)})")
    kept = tuple(j for j in jobs if j.classes is None or allowed_nodes(cluster, j.classes))
    if len(kept) < len(jobs):
        notes.notes.append(f"{len(jobs) - len(kept)} jobs left out: their GPU-type constraint names no server class "
                           f"of cluster {cluster.name}")
    if not kept:
        raise HopsError(f"workload {printable(spec, 200)!r}: no job can run on cluster {cluster.name}")
    return kept, notes


def load_any_workload(spec: str, seed: int, cluster: ClusterSpec) -> tuple[JobSpec, ...]:
    """A trace spec's jobs, else :func:`hops_slurm.sim.workload.load_workload`'s; replayed as its keys ask."""
    return workload_and_notes(spec, seed, cluster)[0]


def load_any_cluster(spec: str) -> tuple[ClusterSpec, Imported]:
    """``alibaba:NODE_CSV`` -> the trace's cluster; else a cluster file or name (no notes)."""
    if spec.startswith("alibaba:"):
        path = spec.partition(":")[2]
        if not path:
            raise HopsError("cluster 'alibaba:': give the node list's path after the colon")
        return import_nodes(Path(path))
    return load_cluster(spec), Imported()
