"""``hops-slurm report``: sacct-style accounting of Hops jobs, summaries and plots.

Reads records (engine SQLite or simulator JSONL, see :mod:`hops_slurm.report.source`): ``--records``, else
the ``[paths] records`` of ``--config``, else ``$HOPS_SLURM_RECORDS``, else those of the configuration the
daemon uses (:func:`hops_slurm.config_path.find_config`). It filters them
like ``sacct`` (-S/-E/-u/-j/--state), and prints one row per job (``--history``: per placement),
or ``--summary`` over a window; ``--plot DIR`` writes PNGs; ``--sacct`` takes Start/End from Slurm
accounting and flags where it disagrees with the engine.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pwd
import re
import sys
import time
from datetime import UTC
from pathlib import Path

from hops_slurm.cli._args import bounded_int
from hops_slurm.config_path import CONFIG_ENV, SYSTEM_CONFIG, find_config, load_found
from hops_slurm.errors import ConfigError, HopsError
from hops_slurm.report.accounting import JobFilter, build_rows, normalise_states, select_jobs
from hops_slurm.report.sacct import apply_sacct, cross_check, run_sacct
from hops_slurm.report.source import RecordSet, open_source
from hops_slurm.report.summary import summarise, summary_json, summary_text
from hops_slurm.report.table import (
    DEFAULT_FORMAT,
    TimeStyle,
    help_format,
    parse_format,
    render_json,
    render_parsable2,
    render_table,
)
from hops_slurm.report.timefmt import parse_duration, parse_time
from hops_slurm.report.timeline import timeline_problems
from hops_slurm.text import printable

#: Clocks below this many seconds are simulated (they start at 0), not the epoch (2001-09-09).
SIMULATED_CLOCK_LIMIT = 1e9
RECORDS_ENV = "HOPS_SLURM_RECORDS"


def _csv(text: str) -> frozenset[str]:
    return frozenset(s.strip() for s in text.split(",") if s.strip())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="sacct-style job accounting with latency ratios; --summary, --plot, --sacct cross-check",
        description="One row per job like sacct, with Wait, EstRun (Hops' estimated run time), LR = wait/EstRun "
                    "and FTF rho.",
    )
    p.add_argument(
        "--records",
        type=Path,
        default=None,
        help=f"engine SQLite database, or simulator JSONL file/folder (default: the [paths] records of --config, "
             f"else ${RECORDS_ENV}, else of the daemon's configuration: ${CONFIG_ENV} or {SYSTEM_CONFIG})",
    )
    p.add_argument("--config", type=Path, default=None, help="site configuration whose records to read")
    p.add_argument("-o", "--format", default=DEFAULT_FORMAT, help="columns: Name[%%[-]WIDTH],... (sacct style)")
    p.add_argument("-e", "--helpformat", action="store_true", help="list the fields --format accepts")
    p.add_argument("-P", "--parsable2", action="store_true", help="'|'-separated fields, no trailing '|'")
    p.add_argument("-p", "--parsable", action="store_true", help="'|'-separated fields with a trailing '|' (sacct -p)")
    p.add_argument("-a", "--allusers", action="store_true",
                   help="every user's jobs (as sacct: the default for root; others see their own unless -a or -u)")
    p.add_argument("-X", "--allocations", action="store_true",
                   help="one row per job, never per placement (as sacct -X: no steps; the opposite of --history)")
    p.add_argument("-n", "--noheader", action="store_true", help="no header line")
    p.add_argument("--json", action="store_true", help="JSON output (all fields, times in seconds)")
    p.add_argument("-S", "--starttime", help="jobs not ended before this time (Slurm time formats)")
    p.add_argument("-E", "--endtime", help="jobs submitted before this time (Slurm time formats)")
    p.add_argument("-u", "--user", default="", help="comma-separated user names")
    p.add_argument("-j", "--jobs", default="", help="comma-separated job ids")
    p.add_argument("-s", "--state", default="", help="comma-separated states (COMPLETED or CD, ...)")
    p.add_argument("-r", "--partition", default="", help="comma-separated partitions")
    p.add_argument("-A", "--accounts", default="", help="comma-separated accounts")
    p.add_argument("--history", action="store_true", help="also one row per placement (JOBID.N), like sacct steps")
    p.add_argument("--summary", action="store_true", help="RAQLR, LR, wait, JCT, fragments, utilisation over --window")
    p.add_argument("--window", help="summary window ending at --now: 24h, 90m, 7d, [D-]HH:MM:SS (default: the records' "
                   "own, first submission to last end, the same whenever the report is run)")
    p.add_argument("--total-gpus", type=bounded_int(1, 10**7), help="cluster size for utilisation (default: from the plan records)")
    p.add_argument("--plot", type=Path, metavar="DIR", help="write lr_jct_cdf.png, wait_vs_age.png, gpu_use.png")
    p.add_argument(
        "--sacct",
        nargs="?",
        const="parsable2",
        choices=("parsable2", "json"),
        help="take Start/End from Slurm accounting (needs slurmdbd) and flag disagreements",
    )
    p.add_argument("--now", help="the report's 'now' (default: wall clock; end of the records if simulated)")
    p.add_argument(
        "--clock",
        choices=("auto", "epoch", "sim"),
        default="auto",
        help="record times are epoch seconds or simulated seconds from 0 (default: guess)",
    )
    p.add_argument("--utc", action="store_true", help="print times in UTC instead of local time")
    p.set_defaults(func=_run)


def records_path(given: Path | None, config: Path | None) -> Path:
    """The records to read: ``given``, else those of ``config``, else ``$HOPS_SLURM_RECORDS``, else those of
    the daemon's configuration; an error naming what was tried when none is found."""
    if given is not None:
        return given
    if config is None and os.environ.get(RECORDS_ENV):
        return Path(os.environ[RECORDS_ENV])
    found = find_config(config)
    try:
        cfg = load_found(found)
    except ConfigError as exc:
        raise HopsError(f"no records: pass --records PATH (engine .sqlite or simulator .jsonl), set ${RECORDS_ENV}, "
                        f"or give a configuration: {exc}") from None
    return cfg.paths.resolve(cfg.paths.records)


#: a Slurm job id as sacct -j takes it: JOBID, JOBID_TASK (array), either with .STEP
SLURM_JOB_ID = re.compile(r"^[0-9]{1,10}(_[0-9]{1,10})?(\.[0-9a-z]{1,10})?$")
#: a simulated job's id (the workload's own, e.g. j0001)
SIM_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def job_ids(text: str, simulated: bool) -> frozenset[str]:
    """``-j``'s ids; one that is no job id (``-j abc`` on a live cluster's records) is an error, as in sacct."""
    ids = _csv(text)
    pattern = SIM_JOB_ID if simulated else SLURM_JOB_ID
    for job_id in sorted(ids):
        if not pattern.match(job_id):
            raise HopsError(printable(f"-j/--jobs: invalid job id {job_id[:64]!r}"
                                      + ("" if simulated else " (a Slurm job id: 123, 123_4 or 123.batch)"), 200))
    return frozenset(j.split(".", 1)[0] for j in ids)


def _users(args: argparse.Namespace, simulated: bool) -> frozenset[str]:
    """``-u``'s users; without ``-u`` or ``-a``, an ordinary user sees their own jobs of a live cluster (as
    sacct); root, and every simulated run, see all."""
    users = _csv(args.user)
    if users or args.allusers or simulated or os.geteuid() == 0:
        return users
    try:
        return frozenset({pwd.getpwuid(os.getuid()).pw_name})
    except KeyError:
        return frozenset({str(os.getuid())})


def _load(args: argparse.Namespace) -> RecordSet:
    args.records = records_path(args.records, args.config)
    return open_source(args.records).load()


def _run(args: argparse.Namespace) -> int:
    if args.helpformat:
        sys.stdout.write(help_format())
        return 0
    records = _load(args)
    wall = time.time()
    last = records.last_time()
    simulated = args.clock == "sim" or (args.clock == "auto" and last is not None and last < SIMULATED_CLOCK_LIMIT)
    tz = UTC if args.utc or simulated else None
    default_now = (last if last is not None else 0.0) if simulated else wall
    now = parse_time(args.now, default_now, tz) if args.now else default_now
    style = TimeStyle(simulated=simulated, tz=tz)

    flt = JobFilter(
        start=parse_time(args.starttime, now, tz) if args.starttime else None,
        end=parse_time(args.endtime, now, tz) if args.endtime else None,
        users=_users(args, simulated),
        jobs=job_ids(args.jobs, simulated),
        states=normalise_states(_csv(args.state)),
        partitions=_csv(args.partition),
        accounts=_csv(args.accounts),
    )
    jobs = select_jobs(records.jobs, flt)
    if args.allocations and args.history:
        raise HopsError("-X/--allocations (one row per job) and --history (rows per placement) contradict")
    rows = build_rows(jobs, now, history=args.history)

    disagreements = None
    if args.sacct and jobs:
        accounting = run_sacct([j.job_id for j in jobs], json_output=args.sacct == "json")
        found = cross_check(jobs, accounting)
        for d in found:
            print(f"hops-slurm: warning: {d.message()}", file=sys.stderr)
        disagreements = [dataclasses.asdict(d) for d in found]
        rows = apply_sacct(rows, accounting)

    if args.summary:
        window = parse_duration(args.window) if args.window is not None else None
        summary = summarise(jobs, records.rounds, now, window, args.total_gpus)
        sys.stdout.write(summary_json(summary) if args.json else summary_text(summary, style.instant))
    elif args.json:
        sys.stdout.write(render_json(rows, now, simulated, disagreements))
    else:
        columns = parse_format(args.format)
        if args.parsable2 or args.parsable:
            sys.stdout.write(render_parsable2(rows, columns, style, header=not args.noheader,
                                              trailing=args.parsable and not args.parsable2))
        else:
            sys.stdout.write(render_table(rows, columns, style, header=not args.noheader))

    if args.plot is not None:
        from hops_slurm.report import plots  # matplotlib: imported only when plotting (slow import)

        label = "simulated" if simulated else "cluster"
        written = plots.write_plots(args.plot, {label: (jobs, records.rounds)}, now)
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    if args.summary or args.plot is not None:  # a timeline above the cluster is said, never clipped
        problems = timeline_problems(jobs, args.total_gpus or records.total_gpus(), now)
        for problem in problems[:5]:
            print(f"hops-slurm: warning: GPU accounting: {problem}", file=sys.stderr)
        if len(problems) > 5:
            print(f"hops-slurm: warning: GPU accounting: and {len(problems) - 5} more", file=sys.stderr)
    if not records.jobs:
        print(f"hops-slurm: note: {args.records} holds no job records (as of {style.instant(now)})", file=sys.stderr)
    return 0
