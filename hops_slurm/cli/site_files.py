"""``hops-slurm site files DIR [--force]``: copy out the files a site installs besides the package (the
submit hook's Lua files, the configuration template, the slurm.conf snippet, the systemd units and cron
files, the Grafana dashboard; :func:`hops_slurm.bundled.export_site_files`), one line per file. An existing
file is kept unless ``--force``."""

from __future__ import annotations

import argparse
from pathlib import Path

from hops_slurm.bundled import export_site_files
from hops_slurm.text import printable


def register_verb(verbs: argparse._SubParsersAction) -> None:
    p = verbs.add_parser("files", help="copy the site files (hooks, hops.toml, slurm.conf snippet, units) into DIR",
                         description="Copy the files a site installs besides the package into DIR, at the paths "
                                     "the admin guide names: hooks/*.lua (the submit hook module and a complete "
                                     "job_submit.lua), etc/hops.toml (the configuration template), "
                                     "etc/slurm.conf.d/, etc/systemd/, etc/cron/, etc/grafana/. One line per file; "
                                     "an existing file is kept unless --force.")
    p.add_argument("dir", type=Path, metavar="DIR", help="where to put them (created if missing)")
    p.add_argument("--force", action="store_true", help="replace files that exist")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    done = export_site_files(args.dir, force=args.force)
    for item in done:
        print(printable(f"wrote {item.path}" if item.written else f"kept {item.path} (exists; --force replaces it)"))
    kept = sum(not d.written for d in done)
    if kept:
        print(printable(f"{kept} file(s) kept as they were; {len(done) - kept} written"))
    return 0
