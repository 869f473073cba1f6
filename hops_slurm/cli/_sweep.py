"""The ``--on-slurm`` flags of ``hops-slurm simulate`` and ``bench``, and a simulate sweep run as a job array.

Data flow: the command's parsed flags -> one argv per cell (a ``hops-slurm sweep-task`` per (seed, policy)
of a simulation, a ``hops-slurm bench NAME`` per benchmark or part of one,
:mod:`hops_slurm.tools.sweep.bench_cells`) -> :func:`hops_slurm.tools.sweep.job_array.run_array`
on the cluster the command runs on -> for a simulation, the cells merged into the local run's
:class:`hops_slurm.sim.runner.Comparison` (:func:`hops_slurm.tools.sweep.sim_cells.merge`). The tasks run
the Python that runs this command, with its environment, as the caller.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hops_slurm.cli._args import bounded_int
from hops_slurm.errors import HopsError
from hops_slurm.sim.runner import Comparison
from hops_slurm.tools.sweep.job_array import ArrayResult, run_array
from hops_slurm.tools.sweep.sim_cells import cells, merge, write_spec

#: the state folder of a sweep run on Slurm, under the command's --out
STATE = ".slurm-sweep"


def self_argv(*words: str) -> list[str]:
    """``hops-slurm WORDS...`` run by the Python that runs this command (a task needs no install on PATH)."""
    return [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())", *words]


def add_slurm_arguments(p: argparse.ArgumentParser, what: str) -> None:
    g = p.add_argument_group("running on Slurm (docs/simulator.md, \"Sweeps as Slurm job arrays\")")
    g.add_argument("--on-slurm", action="store_true",
                   help=f"run {what} as a task of one Slurm job array on the cluster this command runs on (sbatch "
                        "--array; each task's log under --out/.slurm-sweep/logs), wait for it, submit failed tasks "
                        "again, and write the same results as a local run; --out must be on a file system the nodes share")
    g.add_argument("--partition", default=None, help="with --on-slurm: the partition of the tasks (default: the cluster's)")
    g.add_argument("--time", default=None, help="with --on-slurm: each task's time limit, as sbatch --time takes it")
    g.add_argument("--retries", type=bounded_int(0, 10), default=2,
                   help="with --on-slurm: times a failed task is submitted again (default 2)")


def sbatch_args(args: argparse.Namespace) -> list[str]:
    out = []
    for flag, value in (("--partition", args.partition), ("--time", args.time)):
        if value is not None:
            if not value or len(value) > 200 or any(c.isspace() or not c.isprintable() for c in value):
                raise HopsError(f"{flag} {value!r}: expected one word")
            out.append(f"{flag}={value}")
    return out


def submit_cells(args: argparse.Namespace, commands: Sequence[list[str]], labels: Sequence[str], name: str) -> ArrayResult:
    return run_array(commands, Path(args.out).resolve() / STATE, name=name, sbatch_args=sbatch_args(args),
                     retries=args.retries, labels=labels)


def run_on_slurm(args: argparse.Namespace, policies: Sequence[str]) -> Comparison:
    """Every (seed, policy) run of ``hops-slurm simulate`` as a job array task, merged (module docstring)."""
    state = Path(args.out).resolve() / STATE
    pairs = cells(policies, args.seeds)
    spec = write_spec(args, pairs, state)
    commands = [self_argv("sweep-task", str(spec), str(i)) for i in range(len(pairs))]
    done = submit_cells(args, commands, [f"{p} seed {s}" for s, p in pairs], "hops-simulate")
    return merge(pairs, Path(args.out), state, done.failed)
