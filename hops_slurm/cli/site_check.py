"""``hops-slurm site check [--config FILE] [-o FIELDS] [--parsable2] [--noheader] [--json]``.

Reads the running Slurm and the installed hook (:mod:`hops_slurm.site.facts`), judges them against the
Hops configuration (:mod:`hops_slurm.site.check`) and prints one row per check, Slurm-style: what Hops
needs, what is there, OK / MISSING / CONFLICT / WARN, and what the setting does to jobs outside Hops.
Exit status 1 on a blocker (MISSING or CONFLICT), with one line per blocker on standard error.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from hops_slurm.cli.daemon_cmd import add_config_arg, site_config
from hops_slurm.report.columns import Column, fit, parse_format
from hops_slurm.text import printable


@dataclass(frozen=True)
class CheckField:
    name: str
    width: int
    key: str


FIELDS = {f.name.lower(): f for f in (
    CheckField("Check", 22, "check"), CheckField("Status", 8, "status"), CheckField("Needs", 40, "needs"),
    CheckField("Found", 44, "found"), CheckField("Outside", 60, "outside"))}
DEFAULT_FORMAT = "Check%-22,Status%-8,Needs%-40,Found%-44,Outside%-60"


def register_verb(verbs: argparse._SubParsersAction) -> None:
    p = verbs.add_parser("check", help="what Hops needs from the running Slurm, what is there, and what each "
                                       "setting does to jobs outside Hops (exit 1 on a blocker)",
                         description="Read the running Slurm (scontrol show config, partitions, nodes, reservations, "
                                     "the installed hook, the release) and say, per check, what Hops needs, what is "
                                     "there, OK/MISSING/CONFLICT/WARN, and what the setting does to jobs outside "
                                     "Hops. Exit status 1 when something Hops cannot run without is missing or in "
                                     "conflict. Fields: " + ",".join(f.name for f in FIELDS.values()))
    add_config_arg(p)
    p.add_argument("--format", "-o", default=DEFAULT_FORMAT, help="comma-separated fields, Name%%WIDTH (as sacct)")
    p.add_argument("--parsable2", action="store_true", help="'|' between fields, no padding, nothing cut")
    p.add_argument("--noheader", action="store_true", help="no header line")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(func=_run)


def render(rows: list[dict[str, str]], columns: list[Column[CheckField]], *, parsable: bool, header: bool) -> str:
    lines = []
    if parsable:
        if header:
            lines.append("|".join(c.field.name for c in columns))
        lines += ["|".join(printable(r[c.field.key]).replace("|", "/") for c in columns) for r in rows]
    else:
        if header:
            lines.append(" ".join(fit(c.field.name, c) for c in columns))
            lines.append(" ".join("-" * c.width for c in columns))
        lines += [" ".join(fit(r[c.field.key], c) for c in columns) for r in rows]
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from hops_slurm.site.check import blockers, check_site
    from hops_slurm.site.facts import read_facts

    columns = parse_format(args.format, FIELDS)
    config = site_config(args)
    findings = check_site(read_facts(config.engine.hook_dir), config)
    rows = [f.as_dict() for f in findings]
    bad = blockers(findings)
    if args.json:
        print(json.dumps({"checks": rows, "blockers": len(bad)}, indent=1))
    else:
        print(render(rows, columns, parsable=args.parsable2, header=not args.noheader))
    for f in bad:
        print(f"hops-slurm: site check: {f.status} {f.check}: {printable(f.found, 300)} (needs {printable(f.needs, 200)})",
              file=sys.stderr)
    return 1 if bad else 0
