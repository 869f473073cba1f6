"""A ``hops-slurm simulate`` sweep as cells: one (seed, policy) run per cell, and the cells merged back.

Data flow: ``hops-slurm simulate --on-slurm`` writes the command's arguments to ``STATE/sweep.json``
(:func:`write_spec`), and each task of the job array (:mod:`hops_slurm.tools.sweep.job_array`) runs
``hops-slurm sweep-task STATE/sweep.json K``, which :func:`run_cell` answers: the K-th (seed, policy) pair
in :func:`hops_slurm.sim.runner.compare`'s order, simulated as ``compare`` simulates it, its records
written with :func:`hops_slurm.sim.runner.write_run` to the same ``out/<policy>/seed<k>/`` folder
(``error.txt`` for a run that raised), and what the folder does not hold exactly (the throughput series at
full precision, the wall time, the workload's physical bound) in ``STATE/cells/K.json``. :func:`merge`
reads every cell back into the :class:`hops_slurm.sim.runner.Comparison` the local run returns, so the
summary, table and plots are written by the same code from the same values.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from hops_slurm.records import JobRecord, RoundRecord
from hops_slurm.report.metrics import summarize
from hops_slurm.sim.bound import physical_bound
from hops_slurm.sim.cluster_spec import ClusterSpec
from hops_slurm.sim.runner import Comparison, Options, RunFailure, RunResult, simulate, write_run
from hops_slurm.sim.traces.specs import load_any_workload
from hops_slurm.validation import reason

#: the spec file's size limit (it holds a command's arguments)
MAX_SPEC = 1 << 20


class CellMeta(BaseModel):
    """What a cell's run folder does not hold exactly."""

    model_config = ConfigDict(extra="forbid")
    policy: str
    seed: int
    error: str | None = None
    wall_seconds: float = 0.0
    bound_avg_jct: float | None = None
    series: list[tuple[float, int, float]] = Field(default_factory=list)


def cells(policies: Sequence[str], seeds: Sequence[int]) -> list[tuple[int, str]]:
    """The (seed, policy) pairs in the order :func:`hops_slurm.sim.runner.compare` runs them."""
    return [(seed, name) for seed in seeds for name in policies]


def write_spec(args: argparse.Namespace, pairs: Sequence[tuple[int, str]], state: Path) -> Path:
    """The simulate command's arguments and its cells as JSON (paths absolute: a task may start elsewhere)."""
    values = {k: (str(Path(v).resolve()) if isinstance(v, Path) else v) for k, v in vars(args).items()
              if k != "func" and not callable(v)}
    state.mkdir(parents=True, exist_ok=True)
    path = state / "sweep.json"
    path.write_text(json.dumps({"simulate": values, "cells": [list(p) for p in pairs]}, indent=1) + "\n")
    return path


def read_spec(path: Path) -> tuple[argparse.Namespace, list[tuple[int, str]]]:
    """The arguments and cells :func:`write_spec` wrote (the namespace as the simulate command parsed it)."""
    if path.stat().st_size > MAX_SPEC:
        raise ValueError(f"{path}: over {MAX_SPEC} bytes: not a sweep spec")
    data = json.loads(path.read_text(encoding="utf-8"))
    values = data.get("simulate") if isinstance(data, dict) else None
    pairs = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(values, dict) or not isinstance(values.get("out"), str) or not isinstance(pairs, list) or \
            not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], int) and isinstance(p[1], str) for p in pairs):
        raise ValueError(f"{path}: not a sweep spec written by hops-slurm simulate --on-slurm")
    values["out"] = Path(values["out"])
    return argparse.Namespace(**values), [(seed, name) for seed, name in pairs]


def cell_path(state: Path, index: int) -> Path:
    return state / "cells" / f"{index}.json"


def run_cell(cluster: ClusterSpec, workload: str, seed: int, policy: str, options: Options, out: Path,
             meta: Path, run: Callable[..., RunResult] | None = None) -> CellMeta:
    """Simulate one cell as :func:`hops_slurm.sim.runner.compare` does and write its folder and ``meta``."""
    jobs = load_any_workload(workload, seed, cluster)
    bound = physical_bound(cluster, jobs).avg_jct
    folder = out / policy / f"seed{seed}"
    try:
        result = (run or simulate)(cluster, jobs, policy, seed, options, on_round=None)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's failure, as compare records it
        got = CellMeta(policy=policy, seed=seed, error=reason(exc))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "error.txt").write_text(f"{got.error}\n")
    else:
        result.bound_avg_jct = bound
        write_run(result, folder)
        got = CellMeta(policy=policy, seed=seed, wall_seconds=result.wall_seconds, bound_avg_jct=bound,
                       series=list(result.series))
    meta.parent.mkdir(parents=True, exist_ok=True)
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(got.model_dump_json() + "\n")
    tmp.replace(meta)
    return got


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def merge(pairs: Sequence[tuple[int, str]], out: Path, state: Path, missing: dict[int, str] | None = None) -> Comparison:
    """Every cell's result read back, in the order of ``pairs``; a cell with no result (its task never
    succeeded) is a failure naming ``missing[index]`` (its log) when given."""
    results = Comparison()
    for index, (seed, policy) in enumerate(pairs):
        path = cell_path(state, index)
        if not path.is_file():
            why = f"its Slurm task left no result (log {missing[index]})" if missing and index in missing \
                else "its Slurm task left no result"
            results.failures.append(RunFailure(policy, seed, why))
            continue
        meta = CellMeta.model_validate_json(path.read_text(encoding="utf-8"))
        if (meta.policy, meta.seed) != (policy, seed):
            raise ValueError(f"{path}: holds {meta.policy} seed {meta.seed}, expected {policy} seed {seed}")
        if meta.error is not None:
            results.failures.append(RunFailure(policy, seed, meta.error))
            continue
        folder = out / policy / f"seed{seed}"
        jobs = [JobRecord.model_validate_json(line) for line in _lines(folder / "jobs.jsonl")]
        rounds = [RoundRecord.model_validate_json(line) for line in _lines(folder / "rounds.jsonl")]
        results.append(RunResult(policy, seed, jobs, rounds, [tuple(p) for p in meta.series],
                                 summarize(jobs, rounds), meta.wall_seconds, meta.bound_avg_jct))
    return results


__all__ = ["CellMeta", "cell_path", "cells", "merge", "read_spec", "run_cell", "write_spec"]
