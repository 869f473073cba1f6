"""``hops-slurm failopen [--config FILE] [--dry-run]``: hand held #HOPS jobs to Slurm when the daemon is gone.

Run every minute by a Slurm-side timer (``etc/systemd/hops-slurm-failopen.timer``, or
``etc/cron/hops-slurm-failopen``); it does nothing unless ``[failopen] mode = "release"`` and the daemon
has been silent for ``grace`` seconds (see :mod:`hops_slurm.engine.failopen`). One line per action.
"""

from __future__ import annotations

import argparse

from hops_slurm.cli.daemon_cmd import add_config_arg, site_config


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("failopen", help="release held #HOPS jobs to Slurm's own scheduling when the daemon is gone "
                                        "(per [failopen] in hops.toml; for a timer)",
                       description="When the Hops daemon is gone, release the #HOPS jobs it holds to Slurm's own "
                                   "scheduling, as [failopen] in hops.toml says (run from a timer).")
    add_config_arg(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be released, change nothing")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.engine.failopen import fail_open
    from hops_slurm.slurm.cli import CliSlurm

    report = fail_open(site_config(args), CliSlurm(), dry_run=args.dry_run)
    for line in report.lines():
        print(line)
    return 0
