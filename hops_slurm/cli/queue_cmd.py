"""``hops-slurm queue``: the Hops LR queue like ``sprio``/``squeue`` (JobID, Name, User, ST, Priority, LR,
Wait, Age, Window, Plan); see :mod:`hops_slurm.engine.queue`. Read-only: the engine database is opened through a
read-only URI (:meth:`hops_slurm.engine.state.EngineState.read_only`); a foreign or newer one is one error line.

The engine's state (``engine.sqlite`` in the ``paths.state_dir`` of the configuration the daemon uses,
:func:`hops_slurm.config_path.find_config`, or of ``--config``) names the jobs; Slurm says
which of them are still pending or running. When the engine tracks no unfinished job (a finished demo,
an idle site) Slurm is not asked: the queue is empty whatever it says, so the command works with the
cluster down, and a note on stderr says where the ended jobs are (``hops-slurm report``)."""

from __future__ import annotations

import argparse
import sys

from hops_slurm.cli.daemon_cmd import add_config_arg, site_config
from hops_slurm.engine.queue import FIELDS, parse_format, queue_rows, render
from hops_slurm.text import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="show the Hops latency-ratio queue (priority, LR, wait, age, window, plan)",
                       description="Show the jobs the Hops engine has pending or running, in its latency-ratio "
                                   "order, like sprio/squeue; reads the engine's state (--config says where), "
                                   "changes nothing.")
    add_config_arg(p)
    p.add_argument("--format", "-o", default=None, help=f"comma-separated fields (default {','.join(FIELDS)})")
    p.add_argument("--parsable2", action="store_true", help="'|' between fields, no padding (like sacct)")
    p.add_argument("--noheader", action="store_true", help="no header line")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.engine.state import EngineState
    from hops_slurm.slurm.cli import CliSlurm

    cfg = site_config(args)
    fields = parse_format(args.format)
    path = cfg.paths.resolve(cfg.paths.engine_db)
    if not path.exists():
        from hops_slurm.errors import HopsError

        raise HopsError(f"{path} does not exist: the engine has not run yet (hops-slurm daemon)")
    state = EngineState.read_only(path)  # never creates, migrates or writes it: only the engine does
    try:
        unfinished = state.jobs()
        rows = queue_rows(state, CliSlurm().jobs()) if unfinished else []
    finally:
        state.close()
    out = render(rows, fields, parsable=args.parsable2, header=not args.noheader, as_json=args.json)
    if out:
        print(out)
    if not unfinished:
        records = cfg.paths.resolve(cfg.paths.records)
        print(printable(f"hops-slurm: note: the engine ({path}) tracks no pending or running job; the ended ones: "
                        f"hops-slurm report --records {records}", 600), file=sys.stderr)
    return 0
