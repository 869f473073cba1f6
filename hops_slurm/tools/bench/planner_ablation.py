"""Benchmark ``planner-ablation``: each change of issue 13 measured on its own, on Table 4's setup.

Data flow: hops_slurm.sim.runner.compare (through :func:`hops_slurm.tools.bench.paper_tables.section`) on
paper-512 with the paper workload -> docs/results/planner-ablation.md, per-run records under
docs/results/planner-ablation/.

The paper rules as docs/design.md reads them, each switchable (planner.params, the loop's
``fragment_at_once``): the service window over the waiting queue (``window``; ``active`` is the
earlier reading), fragment plans at the round plan's instant (``--fragment-plans``), moves priced
(``restart_penalty``, ``pin_running``) and entity classes (``entity_tolerance``). Two views: each
change added alone to the earlier planner ("before + X"), and each change taken out of the current one
("after - X"). sia-lr runs beside them. ``HOPS_BENCH_SEEDS`` (default ``0,1,2``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.tools.bench.paper_tables import section, write_report
from hops_slurm.sim.runner import Options
from hops_slurm.tools import results_header

NAME = "planner-ablation"
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ("HOPS_BENCH_SEEDS", "HOPS_BENCH_POLICIES", "HOPS_BENCH_WORKERS")


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


BEFORE = "hops:window=active,restart_penalty=0,pin_running=false,entity_tolerance=0"
#: the planner of issue 13 (restart penalty 0.1); the settings below change only what they name, on top of
#: the defaults of the commit that runs them (since issue 37 the JCT combination of docs/design.md, "The
#: defaults"), so no row below is today's planner and a rerun is not the historical document's table
AFTER = "hops:restart_penalty=0.1"
AT_TICKS = [
    BEFORE,                                                          # the planner before issue 13
    "hops:restart_penalty=0,pin_running=false,entity_tolerance=0",   # before + window over waiting jobs
    "hops:window=active,restart_penalty=0.1,entity_tolerance=0",     # before + priced moves (penalty, pinning)
    AFTER,                                                           # after - fragment plans at once
]
AT_ONCE = [
    BEFORE,                                                          # before + fragment plans at once
    AFTER,                                                           # the planner of issue 13
    "hops:window=active,restart_penalty=0.1",                        # after - window over waiting jobs
    "hops:restart_penalty=0,pin_running=false",                      # after - priced moves
    "hops:restart_penalty=0",                                        # after - the restart penalty (pinning kept)
    "hops:restart_penalty=0.1,pin_running=false",                    # after - pinning (penalty kept)
    "hops:restart_penalty=0.1,entity_tolerance=0",                   # after - entity classes
    "sia-lr",
]


INTRO = [
    "# Planner ablation: the paper rules of docs/design.md, one at a time (512 GPUs, paper workload)",
    "",
    "Written by `hops-slurm bench planner-ablation`. Policy names carry the planner parameters",
    "(planner/params.py): `window=active` cuts the service window from every active job (the earlier",
    "reading; the default `waiting` cuts it from the waiting queue and always plans running jobs);",
    "`restart_penalty=p` prices a move of a running job with one restart ((1 - p) of its gain);",
    "`pin_running=false` lets a compact plan move running jobs to equivalent nodes; `entity_tolerance=0`",
    "turns entity classes off. The first table plans fragments only at the 30 s refresh ticks (as before),",
    "the second also right after each round plan, at the same instant (the paper's); Avg.frag is counted",
    "after the plans of the round's instant in both. Same columns as docs/results/paper-tables.md.",
    "\"After\" is the planner of issue 13 (`restart_penalty=0.1`); today's defaults (planner/params.py) price",
    "moves and preemptions higher and are not a row here.",
    "",
]


def _sections(seeds: list[int], data: Path) -> list[str]:
    return [
        section("Fragment plans at refresh ticks only", "paper-512", "paper", AT_TICKS, seeds, data, "ticks",
                options=Options(fragment_at_once=False), note="`--fragment-plans at-ticks`."),
        section("Fragment plans at once after the round plan (the paper's) and at refresh ticks", "paper-512",
                "paper", AT_ONCE, seeds, data, "once", note="`--fragment-plans at-once` (the default)."),
    ]


def run(out_dir: Path) -> Path:
    return write_report(out_dir, NAME, INTRO, _sections, generator=f"{__name__}:run", command=command(os.environ))
