"""``hops-slurm plan --once [--dry-run] [--config FILE]``: one refresh and one round, then exit (for cron).

Takes the engine lock like the daemon (refused while the daemon runs), reconciles the journal, reads
Slurm, plans and enacts. ``--dry-run`` reads and plans only: no lock, no hold, no reservation, no
release, nothing written; it prints the plan it would enact.
"""

from __future__ import annotations

import argparse
import json

from hops_slurm.cli.daemon_cmd import add_config_arg, info_logging, site_config
from hops_slurm.errors import HopsError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="plan one round now (--once), e.g. from cron; --dry-run changes nothing",
                       description="Plan one round now (--once): refresh from Slurm, plan, and enact it, or with "
                                   "--dry-run print the plan and change nothing.")
    add_config_arg(p)
    p.add_argument("--once", action="store_true", help="one refresh + one round, then exit")
    p.add_argument("--dry-run", action="store_true", help="print the plan; change nothing in Slurm")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.engine.engine import Engine
    from hops_slurm.core.rounds import plan_summary

    if not args.once:
        raise HopsError("plan needs --once (the periodic planner is `hops-slurm daemon`)")
    info_logging()
    with Engine(site_config(args), dry_run=args.dry_run) as engine:
        planning = engine.full_round()
        if planning is None:
            summary = {"jobs": 0, "assignments": {}, "note": "no profiled Hops job to plan"}
        else:
            summary = {"jobs": len(planning.jobs), **plan_summary(planning)}
            if planning.enactment is not None:
                summary["enacted"] = {"started": planning.enactment.started, "preempted": planning.enactment.preempted,
                                      "kept": planning.enactment.kept}
        summary["dry_run"] = bool(args.dry_run)
    if args.json:
        print(json.dumps(summary, indent=1, default=str))
    else:
        print(f"{'dry run: ' if args.dry_run else ''}{summary.get('jobs', 0)} job(s) planned")
        changes = summary.get("changes", {})
        for job, cfg in sorted(summary.get("assignments", {}).items()):
            why = f" (preempted: {changes[job]})" if job in changes else ""
            print(f"  {job}: {','.join(f'{n}:{k}' for n, k in cfg.items()) if cfg else 'not placed'}{why}")
    return 0
