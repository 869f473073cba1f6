"""``hops-slurm site leave [--config FILE] [--dry-run]``: hand Hops's jobs and reservations back to Slurm.

Run after stopping the daemon (and the failopen timer); see :mod:`hops_slurm.site.leave` for what it does,
in order. One line per action, then the lines to take out of the site's own ``job_submit.lua``. Exit
status 1 when something could not be done (named on its line); running it again finishes the rest.
"""

from __future__ import annotations

import argparse

from hops_slurm.cli.daemon_cmd import add_config_arg, site_config


def register_verb(verbs: argparse._SubParsersAction) -> None:
    p = verbs.add_parser("leave", help="leave Hops: release its held jobs to Slurm, delete its reservations, close "
                                       "the offer, remove hops-partitions (stop the daemon first)",
                         description="Leave Hops: every held #HOPS job is handed to Slurm's own scheduling, the "
                                     "engine's reservations are deleted, the offer is closed and hops-partitions "
                                     "removed; then the lines to take out of the site's own job_submit.lua are "
                                     "named. Stop the daemon first.")
    add_config_arg(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.site.facts import read_facts
    from hops_slurm.site.leave import leave
    from hops_slurm.slurm.cli import CliSlurm

    config = site_config(args)
    facts = read_facts(config.engine.hook_dir)
    report = leave(config, CliSlurm(), facts.hook, dry_run=args.dry_run)
    for line in report.lines():
        print(line)
    return 1 if report.failed else 0
