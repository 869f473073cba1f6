"""A ``hops-slurm bench`` run as the tasks of one job array: one task per benchmark, or per part of a
benchmark that has parts, and those parts assembled into the document a local run writes.

Data flow: ``hops-slurm bench NAME|all --on-slurm`` (:mod:`hops_slurm.cli.bench_cmd`) -> :func:`cells`:
one :class:`BenchCell` per benchmark, except that a benchmark module exposing ``parts(env)`` (the parts a
run under ``env`` writes, ``HOPS_BENCH_PARTS``) and ``assemble(out_dir)`` (its document from the parts
written so far) gives one cell per part -> :func:`argv`: the task's command, ``hops-slurm bench NAME --out
OUT`` (with ``HOPS_BENCH_PARTS=<part>`` for a part) -> :func:`hops_slurm.tools.sweep.job_array.run_array`
-> :func:`assemble`: each split benchmark's document assembled once every task has ended (tasks that end
together may each have assembled it before the other's part was there), under the header
``ran_on="slurm job array ID on cluster NAME, N tasks"``; each part says in its own text where it ran.
A benchmark that starts its own minicluster (``ON_SLURM = False``: root and the Slurm packages) is no task:
the command runs it where it runs, once the array has ended.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from hops_slurm.tools import results_header


@dataclass(frozen=True)
class BenchCell:
    """One task: a benchmark, or one part of it."""

    bench: str
    part: str | None = None

    @property
    def label(self) -> str:
        return self.bench if self.part is None else f"{self.bench} part {self.part}"


def split(module: ModuleType) -> bool:
    """Whether a benchmark runs as one task per part (it can write one part and assemble the whole)."""
    return callable(getattr(module, "parts", None)) and callable(getattr(module, "assemble", None))


def local(module: ModuleType) -> bool:
    """Whether a benchmark runs where the command runs, never as a task: it says ``ON_SLURM = False`` (it
    starts its own minicluster, which needs root and the Slurm packages, not a node of someone's cluster)."""
    return getattr(module, "ON_SLURM", True) is False


def cells(chosen: Sequence[str], benches: Mapping[str, ModuleType], env: Mapping[str, str]) -> list[BenchCell]:
    """The tasks of ``chosen``, in order (a benchmark's parts in the order it runs them); a :func:`local`
    benchmark has none."""
    out: list[BenchCell] = []
    for name in chosen:
        module = benches[name]
        if local(module):
            continue
        parts = module.parts(env) if split(module) else []  # an unknown part fails here, before any submission
        out += [BenchCell(name, part) for part in parts] if len(parts) > 1 else [BenchCell(name)]
    return out


def argv(cell: BenchCell, out: Path, self_argv: Callable[..., list[str]]) -> list[str]:
    """The command of ``cell``'s task (``self_argv``: ``hops-slurm WORDS`` run by this Python)."""
    command = self_argv("bench", cell.bench, "--out", str(out))
    return command if cell.part is None else ["env", f"HOPS_BENCH_PARTS={cell.part}", *command]


def assemble(all_cells: Sequence[BenchCell], benches: Mapping[str, ModuleType], out: Path, array: str,
             cluster: str) -> list[Path]:
    """Every split benchmark's document, assembled from its parts under ``out``, its header saying it ran as
    that many tasks of job array ``array`` on ``cluster``."""
    paths = []
    for name, count in Counter(c.bench for c in all_cells if c.part is not None).items():
        with results_header.running_on(f"slurm job array {array} on cluster {cluster}, {count} tasks"):
            paths.append(benches[name].assemble(out))
    return paths


__all__ = ["BenchCell", "argv", "assemble", "cells", "local", "split"]
