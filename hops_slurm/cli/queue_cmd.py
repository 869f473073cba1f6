"""``hops-slurm queue``: two views of the Hops queue.

For every user (:mod:`hops_slurm.cli.queue_user`): the queue summary the daemon writes each refresh
(:mod:`hops_slurm.engine.queue_summary`), with squeue's filters, each job's place and reason; it is the view
whenever squeue's filters are given (``-u``, ``--me``, ``-j``, ``-p``, ``-t``, ``-A``, ``--start``) or
``--summary``, or the caller is not the engine's own user (the owner of its database: an ordinary user),
or there is none yet.

For the administrator (root, who can read the engine's state; no user filter given): the Hops LR queue like
``sprio``/``squeue`` (JobID, Name, User, ST, Priority, LR, Wait, Age, Window, Plan); see
:mod:`hops_slurm.engine.queue`. Read-only: the engine database is opened through a
read-only URI (:meth:`hops_slurm.engine.state.EngineState.read_only`); a foreign or newer one is one error line.

The engine's state (``engine.sqlite`` in the ``paths.state_dir`` of the configuration the daemon uses,
:func:`hops_slurm.config_path.find_config`, or of ``--config``) names the jobs; Slurm says
which of them are still pending or running. When the engine tracks no unfinished job (a finished demo,
an idle site) Slurm is not asked: the queue is empty whatever it says, so the command works with the
cluster down, and a note on stderr says where the ended jobs are (``hops-slurm report``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hops_slurm.cli import queue_user
from hops_slurm import config_path
from hops_slurm.cli.daemon_cmd import add_config_arg, site_config
from hops_slurm.config import PathsConfig, SiteConfig
from hops_slurm.engine.queue_summary import NAME, read as read_summary
from hops_slurm.errors import HopsError
from hops_slurm.engine.queue import FIELDS, parse_format, queue_rows, render
from hops_slurm.text import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="show the Hops queue: why each job waits, its place (any user), or the "
                                     "latency-ratio view (administrator)",
                       description="Show the Hops jobs pending or running, in the Hops queue's order. Any user: "
                                   "each job's place and reason from the summary the daemon writes each refresh, "
                                   "with squeue's filters (-u, --me, -j, -p, -t, -A, --start). The "
                                   "administrator (who can read the engine's state; no filter given): priority, "
                                   "latency ratio, wait, age, window and plan, like sprio. Changes nothing.")
    add_config_arg(p)
    p.add_argument("--format", "-o", default=None,
                   help=f"comma-separated fields (users' view: default {','.join(queue_user.DEFAULT)}, known "
                        f"{','.join(queue_user.FIELDS)}; administrator's view: default {','.join(FIELDS)})")
    p.add_argument("-u", "--user", default=None, help="only these users' jobs (comma-separated names or uids)")
    p.add_argument("--me", action="store_true", help="only your own jobs")
    p.add_argument("-j", "--jobs", default=None, help="only these job ids (comma-separated)")
    p.add_argument("-p", "--partition", default=None, help="only these partitions (comma-separated)")
    p.add_argument("-A", "--account", default=None, help="only these accounts (comma-separated)")
    p.add_argument("-t", "--states", default=None, help="only these states (PD, R, ... or PENDING, RUNNING, ...; all)")
    p.add_argument("--start", action="store_true", help="pending jobs with their forecast start and end (like "
                                                        "squeue --start; N/A where Hops has none)")
    p.add_argument("--summary", type=Path, default=None,
                   help="the queue summary to read (default: queue-summary.json in the daemon's paths.state_dir)")
    p.add_argument("--parsable2", action="store_true", help="'|' between fields, no padding (like sacct)")
    p.add_argument("--noheader", action="store_true", help="no header line")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(func=_run)


USER_OPTIONS = ("user", "me", "jobs", "partition", "account", "states", "start", "summary")


def _config(args: argparse.Namespace) -> SiteConfig | None:
    """The site configuration; None when the file exists but this user may not read it (an ordinary user
    where the administrator keeps it private: the summary's default place is used). A missing file is
    the usual one-line error naming it."""
    found = config_path.find_config(args.config)
    if found.path.is_file() and not os.access(found.path, os.R_OK):
        return None
    return site_config(args)


def _engines_own(path: Path) -> bool:
    """Whether the caller is the engine's own user (the owner of its database, root) and may read it: the
    administrator's view. Anyone else gets the users' view, whatever the database's mode."""
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.geteuid() and os.access(path, os.R_OK)


def _published(state_dir: Path) -> dict[str, str]:
    """Job id -> the REASON the daemon last published in its queue summary ({} without a readable one)."""
    try:
        return {r.job_id: r.reason for r in read_summary(state_dir / NAME).jobs if r.state == "PENDING"}
    except HopsError:
        return {}


def _run(args: argparse.Namespace) -> int:
    cfg = _config(args) if args.summary is None or args.config is not None else None
    wanted = any(getattr(args, o) for o in USER_OPTIONS)
    engine_db = cfg.paths.resolve(cfg.paths.engine_db) if cfg is not None else None
    if wanted or engine_db is None or not _engines_own(engine_db):
        f = queue_user.filters(args.user, args.me, args.jobs, args.partition, args.account, args.states, args.start)
        fields = queue_user.parse_format(args.format, args.start)
        state_dir = cfg.paths.state_dir if cfg is not None else PathsConfig().state_dir
        return queue_user.run(args.summary or state_dir / NAME, f, fields, parsable=args.parsable2,
                              header=not args.noheader, as_json=args.json)
    return _admin(args, cfg, engine_db)


def _admin(args: argparse.Namespace, cfg: SiteConfig, path: Path) -> int:
    from hops_slurm.engine.state import EngineState
    from hops_slurm.slurm.cli import CliSlurm

    fields = parse_format(args.format)
    state = EngineState.read_only(path)  # never creates, migrates or writes it: only the engine does
    try:
        unfinished = state.jobs()
        rows = queue_rows(state, CliSlurm().jobs(), reasons=_published(cfg.paths.state_dir)) if unfinished else []
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
