"""``hops-slurm sweep-task SPEC INDEX``: one task of a sweep that ``hops-slurm simulate --on-slurm`` submitted.

Data flow: SPEC (the simulate command's arguments and cells, :func:`hops_slurm.tools.sweep.sim_cells.write_spec`)
-> the cluster, workload and options built as the simulate command builds them -> the INDEX-th (seed,
policy) run -> its records under the command's --out and its cell file beside SPEC
(:func:`hops_slurm.tools.sweep.sim_cells.run_cell`). A run that raises is recorded as the run's failure
(exit 0, as a local run records it); anything else that stops the task exits non-zero, and the
submitting command submits the task again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hops_slurm.cli.simulate_cmd import options_of, runner_of
from hops_slurm.errors import HopsError
from hops_slurm.sim.traces.specs import load_any_cluster
from hops_slurm.text import printable
from hops_slurm.tools.sweep.sim_cells import cell_path, read_spec, run_cell


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep-task", help="run one task of a sweep submitted with --on-slurm (the job array runs it)",
                       description="Run the INDEX-th (seed, policy) cell of the sweep SPEC that hops-slurm simulate "
                                   "--on-slurm wrote; the job array's tasks run this.")
    p.add_argument("spec", type=Path, help="the sweep's sweep.json")
    p.add_argument("index", type=int, help="the cell (the array task id)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    sim, pairs = read_spec(args.spec)
    if not 0 <= args.index < len(pairs):
        raise HopsError(f"cell {args.index} is not in the sweep ({len(pairs)} cells)")
    seed, policy = pairs[args.index]
    cluster, _imported = load_any_cluster(sim.cluster)
    got = run_cell(cluster, sim.workload, seed, policy, options_of(sim), sim.out,
                   cell_path(args.spec.parent, args.index), runner_of(sim))
    outcome = f"failed: {got.error}" if got.error else "done"
    print(printable(f"{policy} seed {seed}: {outcome} ({got.wall_seconds:.1f} s)", 2000))
    return 0
