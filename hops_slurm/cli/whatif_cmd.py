"""``hops-slurm whatif EXPORT``: what Slurm did with a site's jobs, beside what Slurm backfill and Hops
would have done in the simulator.

Data flow: a ``sacct --json`` / ``--parsable2`` export (and the site's configuration, for the Hops side)
-> :func:`hops_slurm.whatif.pipeline.run_whatif` -> a sacct-style table on stdout (``--format``, ``--parsable2``, ``--noheader``, ``--json``), one
``hops-slurm: error:`` / ``warning:`` line per bad or left-out row on stderr (the first
:data:`MAX_LISTED_PROBLEMS`; all of them in ``--out``/problems.txt) and a count of them, and ``--out``
files with plots (:mod:`hops_slurm.whatif.output`); then, on stderr, every assumption with its mark
(:mod:`hops_slurm.whatif.disclosure`) and whether Hops is ahead on avg JCT, and why not
(:mod:`hops_slurm.whatif.verdict`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
import sys
from pathlib import Path

from hops_slurm.cli._args import bounded_float
from hops_slurm.cli._costs import add_cost_arguments, cost_model
from hops_slurm.config_path import SYSTEM_CONFIG, find_config, load_found
from hops_slurm.config import SiteConfig, parse_config
from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from planner.policies import make_policy, split_policy_list
from hops_slurm.sim.runner import Options
from hops_slurm.text import printable
from hops_slurm.whatif import disclosure, output
from hops_slurm.whatif.verdict import verdict
from hops_slurm.whatif.assumptions import load_assumptions
from hops_slurm.whatif.history import MAX_LISTED_PROBLEMS, Problem
from hops_slurm.whatif.fidelity import fidelity, fidelity_line, warning
from hops_slurm.whatif.pipeline import DEFAULT_POLICIES, NothingToReplay, run_whatif
from hops_slurm.whatif.read_parsable2 import FORMAT

EPILOG = f"""\
exports (docs/whatif.md):
  sacct --allusers --allocations --json --starttime=... --endtime=... > history.json
      (Slurm 22.05, 24.11, 26.05)
  sacct --allusers --allocations --parsable2 --starttime=... --endtime=... \\
        --format={FORMAT} > history.txt

assumptions for jobs without #HOPS information (override with --assumptions FILE.toml):
  requirement set  the recorded (rigid) GPU count and 2 halvings of it: 8 -> 2,4,8; 1 -> 1
  model            ResNet-50 (the simulator's measured throughput table stands in for the job)
  total samples    recorded run time x the model's throughput at the recorded count on the
                   recorded GPU type (typed TRES gres/gpu:TYPE; else v100)
  time limit       the recorded Timelimit; without one, the longest run recorded in its partition
  a job whose admin comment holds the submit hook's #HOPS form keeps its gpus= and model=.

Slurm's policies (slurm-backfill, slurm-multifactor) are replayed as Slurm runs: no probes, scheduling at
each submission and job end, with the time limits; a first start costs nothing beyond the recorded run
time on every side (restarts pay --process-start-seconds).

Hops is the production engine as the daemon runs it, with the site's configuration (--config, else
$HOPS_CONFIG, else /etc/hops-slurm/hops.toml, else the documented defaults): probes in place, the round,
refresh and monitor step of the configuration. Every assumption is printed on stderr, marked export,
config, given, measured or guessed, then whether Hops is ahead on avg JCT and, when not, why.

output fields (--format): {", ".join(f.name for f in output.FIELDS.values())}
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("whatif", help="replay a site's sacct export: Slurm as recorded vs simulated Slurm backfill and Hops",
                       description="Replay a site's own Slurm job history (a sacct export) in the simulator and show, side "
                                   "by side, what Slurm did (as recorded), Slurm backfill as simulated and Hops.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("export", type=Path, help="a `sacct --json` or `sacct --parsable2` export file")
    p.add_argument("--cluster", default=None,
                   help="the simulated cluster: a name in etc/clusters or a TOML file (default: inferred from the "
                        "export, the smallest cluster of 8-GPU servers the recorded schedule fits on)")
    p.add_argument("--assumptions", type=Path, default=None, help="TOML file overriding the assumptions (see below)")
    p.add_argument("--policies", default=",".join(DEFAULT_POLICIES),
                   help=f"simulated policies, comma-separated (default {','.join(DEFAULT_POLICIES)})")
    p.add_argument("--out", type=Path, default=None,
                   help="folder for results.md, summary.json, plots, per-side jobs.jsonl, workload.csv, problems.txt")
    p.add_argument("--format", "-o", default=output.DEFAULT_FORMAT, help=f"fields, as sacct (default {output.DEFAULT_FORMAT})")
    p.add_argument("--parsable2", "-P", action="store_true", help="'|' between fields, none at the end")
    p.add_argument("--noheader", "-n", action="store_true", help="no header line")
    p.add_argument("--json", action="store_true", help="every field as JSON (seconds and fractions), and every problem")
    p.add_argument("--config", type=Path, default=None,
                   help=f"the site configuration the Hops side runs with (its [scheduler] round and refresh, [engine] "
                        f"monitor step, probes in place and restart price, [planner]); default $HOPS_CONFIG, else "
                        f"{SYSTEM_CONFIG} if present, else the documented defaults (etc/hops.toml's)")
    p.add_argument("--round-seconds", type=bounded_float(0, 86400, low_open=True), default=None,
                   help="round length (default: the configuration's [scheduler] round_length)")
    p.add_argument("--refresh-seconds", type=bounded_float(0, 86400, low_open=True), default=None,
                   help="queue refresh / fragment plans (default: the configuration's [scheduler] queue_refresh)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr (shown only when stderr is a terminal)")
    add_cost_arguments(p)
    p.set_defaults(func=_run)


def _print_problems(problems: list[Problem], out: Path | None) -> None:
    for p in problems[:MAX_LISTED_PROBLEMS]:
        print(printable(p.line(), 600), file=sys.stderr)
    if len(problems) > MAX_LISTED_PROBLEMS:
        more = f" (all in {printable(out / 'problems.txt', 200)})" if out else " (--out DIR lists them all)"
        print(f"hops-slurm: warning: {len(problems) - MAX_LISTED_PROBLEMS} more problems not shown{more}", file=sys.stderr)


def _site_config(given: Path | None) -> tuple[SiteConfig, str]:
    """The configuration the Hops side runs with, and where it came from ("" for the documented defaults):
    the daemon's (:func:`hops_slurm.config_path.find_config`: ``--config``, else ``$HOPS_CONFIG``, else the
    system file) when there is one, else the defaults (etc/hops.toml's values)."""
    found = find_config(given)
    if given is not None or found.source != "system path" or found.path.exists():
        return load_found(found), (f"--config {printable(given, 200)}" if given is not None
                                   else f"{found.source} ({printable(found.path, 200)})")
    return parse_config({}, "defaults"), ""


def _run(args: argparse.Namespace) -> int:
    columns = output.parse_format(args.format)  # a bad --format fails before any work
    policies = split_policy_list(args.policies)
    if not policies:
        raise HopsError("--policies names no policy")
    for name in policies:
        make_policy(name)
    assumptions = load_assumptions(args.assumptions)
    cluster = load_cluster(args.cluster) if args.cluster else None
    site, site_source = _site_config(args.config)
    round_s = args.round_seconds if args.round_seconds is not None else site.scheduler.round_length
    refresh_s = args.refresh_seconds if args.refresh_seconds is not None else min(site.scheduler.queue_refresh, round_s)
    options = Options(round_s, refresh_s, cost_model(args), monitor_seconds=site.engine.monitor_interval)
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        result = run_whatif(args.export, cluster, assumptions, policies, options, progress, site)
    except NothingToReplay as exc:
        _print_problems(exc.problems, None)
        raise
    problems = result.problems
    _print_problems(problems, args.out)
    c = result.cluster
    meta = {"export": str(args.export), "source": result.selection.reading.source, "release": result.selection.reading.release,
            "rows": result.selection.reading.rows, "replayed": len(result.derived),
            "errors": result.selection.reading.errors, "warnings": result.selection.reading.warnings,
            "cluster": c.name, "cluster_gpus": c.total_gpus, "cluster_inferred": result.inferred,
            "policies": list(policies), "round_seconds": round_s, "refresh_seconds": refresh_s,
            "monitor_seconds": site.engine.monitor_interval, "config": site_source or "defaults",
            "assumed_from": dict(Counter(d.source for d in result.derived)),
            "time_limits": dict(Counter(d.limit_source for d in result.derived))}
    assumed = [d for d in result.derived if d.limit_source == "assumed"]
    fid = fidelity(result.rows)  # how close the replay of Slurm's own policy comes to the record
    if fid is not None:
        meta["fidelity"] = {"policy": fid.policy, "ok": fid.ok, "recorded_vs_replayed": fid.values}
    ctx = disclosure.Context(c, str(args.cluster or ""), site, site_source, round_s, refresh_s,
                             args.round_seconds is not None or args.refresh_seconds is not None, options.costs,
                             assumptions, args.assumptions is not None)
    stated = disclosure.assumptions_made(result.selection.jobs, result.derived, ctx)
    meta["assumptions"] = disclosure.as_json(stated)
    judged = verdict(result.sides, result.rows, result.derived, site.engine.monitor_interval, c.profiler.probe_seconds)
    if judged is not None:
        meta["verdict"] = {"hops": judged.hops, "slurm": judged.slurm, "ahead": judged.ahead, "reasons": judged.reasons}
    if args.json:
        sys.stdout.write(json.dumps(output.document(result.rows, meta, problems), indent=2) + "\n")
    else:
        sys.stdout.write(output.render(result.rows, columns, args.parsable2, not args.noheader))
    print(f"hops-slurm: whatif: {result.summary()}; cluster {printable(c.name, 60)} ({c.total_gpus} GPUs"
          f"{', inferred' if result.inferred else ''})", file=sys.stderr)
    if fid is not None:
        print(f"hops-slurm: whatif: {fidelity_line(fid)}", file=sys.stderr)
        if not fid.ok:
            longest = max((d.spec.time_limit or 0.0 for d in assumed), default=0.0)
            text = warning(fid, inferred=result.inferred, assumed_limits=len(assumed), replayed=len(result.derived),
                           limit_seconds=longest)
            print(f"hops-slurm: warning: {text}", file=sys.stderr)
    notes = disclosure.lines(stated) + (judged.lines() if judged is not None else [])
    for line in notes:
        print(line if line.startswith("  ") else f"hops-slurm: whatif: {line}", file=sys.stderr)
    if args.out:
        title = (f"What-if: {printable(args.export.name, 80)} on {printable(c.name, 60)} ({c.total_gpus} GPUs), "
                 f"{len(result.derived)} jobs")
        output.write_out(args.out, result.sides, result.rows, result.derived, c, problems, meta, title, notes)
        print(f"hops-slurm: whatif: wrote {printable(args.out, 200)}/results.md, summary.json, plots and per-side records",
              file=sys.stderr)
    return 1 if any(r.error for r in result.rows) else 0
