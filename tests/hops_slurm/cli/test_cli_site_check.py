"""``hops-slurm site check`` and ``site leave`` at the command line (``site files``: test_cli_site.py): the verbs are there, the table is
Slurm's (``--parsable2``, ``--noheader``, ``--format``), and a Slurm that cannot be read is one line, never
a traceback. The judgement itself: tests/hops_slurm/site/; on a running Slurm: test_site_live.py."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from hops_slurm.cli import build_parser
from hops_slurm.cli.site_check import DEFAULT_FORMAT, FIELDS, render
from hops_slurm.report.columns import parse_format

CLI = [sys.executable, "-c", "import sys; from hops_slurm.cli import main; sys.exit(main())"]
ROWS = [{"check": "release", "status": "OK", "needs": "Slurm 22.05", "found": "22.05.8", "outside": "none: read only"},
        {"check": "hook", "status": "MISSING", "needs": "x|y", "found": "missing: /etc/slurm/job_submit.lua",
         "outside": "the site's rules apply to every job"}]


def test_site_has_check_and_leave() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    verbs = next(a for a in sub.choices["site"]._actions if isinstance(a, argparse._SubParsersAction))
    assert {"check", "leave"} <= set(verbs.choices)


def test_the_table_is_slurms() -> None:
    columns = parse_format(DEFAULT_FORMAT, FIELDS)
    table = render(ROWS, columns, parsable=False, header=True).splitlines()
    assert table[0].split() == ["Check", "Status", "Needs", "Found", "Outside"] and set(table[1]) == {"-", " "}
    assert table[3].startswith("hook                   MISSING  x|y") and "missing: /etc/slurm/job_submit.lua" in table[3]
    parsable = render(ROWS, parse_format("Check,Status,Needs", FIELDS), parsable=True, header=False).splitlines()
    assert parsable == ["release|OK|Slurm 22.05", "hook|MISSING|x/y"]  # a '|' in a value cannot shift the fields


def test_a_slurm_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"  # a controller nobody runs: scontrol fails at once
    conf.write_text("ClusterName=nowhere\nSlurmctldHost=localhost\nSlurmctldPort=6999\nMessageTimeout=2\n")
    config = tmp_path / "hops.toml"
    config.write_text(f'[paths]\nstate_dir = "{tmp_path / "state"}"\n')
    for verb in ("check", "leave"):
        proc = subprocess.run([*CLI, "site", verb, "--config", str(config)], env={**os.environ, "SLURM_CONF": str(conf)},
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 1 and proc.stdout == "", (verb, proc)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("hops-slurm: error: `scontrol show config` failed"), proc.stderr
        assert "Traceback" not in proc.stderr
    bad = subprocess.run([*CLI, "site", "check", "--config", str(config), "-o", "Check,Bogus"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("hops-slurm: error: unknown field 'Bogus' in --format")
