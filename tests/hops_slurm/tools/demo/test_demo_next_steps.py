"""The block ``make demo`` ends with (issue 26): the commands that look at what it made, printed so that
they run as printed (hops_slurm.tools.demo.next_steps), and the demo's own sacct export (hops_slurm.tools.demo.export)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from hops_slurm.tools.demo.export import missing_jobs
from hops_slurm.tools.demo.next_steps import DemoOutputs, commands, demo_steps, hops_slurm_command, render, shown
from hops_slurm.tools.demo.run import REPORT_DIR, ROOT
from tests_paths import DATA

STATE = Path("/var/tmp/hops-minicluster/demo")


def _outputs(report_dir: Path | None = ROOT / "var" / "demo", hops_only: bool = False, export: Path | None = None) -> DemoOutputs:
    return DemoOutputs(records=STATE / "engine" / "records.sqlite", config=STATE / "hops.toml", report_dir=report_dir,
                       slurm_records=None if hops_only else ROOT / "var" / "demo" / "records-slurm-backfill-rigid.jsonl",
                       export=export, example_export=ROOT / "tests" / "data" / "sacct" / "22.05" / "sacct.json")


def test_the_default_report_folder_is_ignored_by_git() -> None:
    assert REPORT_DIR == ROOT / "var" / "demo"
    assert "/var/" in (ROOT / ".gitignore").read_text().splitlines()


def test_the_block_names_report_queue_and_whatif_with_paths_from_here() -> None:
    block = render(demo_steps(_outputs()), [".venv/bin/hops-slurm"], ROOT, ROOT / "var" / "demo")
    cmds = commands(block)
    assert cmds == [
        [".venv/bin/hops-slurm", "report", "--records", str(STATE / "engine" / "records.sqlite")],
        [".venv/bin/hops-slurm", "report", "--records", str(STATE / "engine" / "records.sqlite"), "--summary"],
        [".venv/bin/hops-slurm", "report", "--records", "var/demo/records-slurm-backfill-rigid.jsonl"],
        [".venv/bin/hops-slurm", "queue", "--config", str(STATE / "hops.toml")],
        [".venv/bin/hops-slurm", "whatif", "tests/data/sacct/22.05/sacct.json"],
    ]
    assert "# the report page, its plots and the runs' records: var/demo/" in block
    for line in block.splitlines()[1:]:  # every line a comment or a command: the block pastes into a shell
        assert line.startswith("   # ") or line.startswith("   .venv/bin/hops-slurm ")


def test_hops_only_and_an_own_export() -> None:
    own = ROOT / "var" / "demo" / "sacct.json"
    cmds = commands(render(demo_steps(_outputs(hops_only=True, export=own)), ["hops-slurm"], Path("/elsewhere")))
    assert [c[1] for c in cmds] == ["report", "report", "queue", "whatif"]
    assert cmds[-1] == ["hops-slurm", "whatif", str(own)]  # absolute: not under the folder it runs from


def test_paths_with_spaces_are_quoted_so_they_run_as_printed(tmp_path: Path) -> None:
    odd = tmp_path / "my demo" / "records.sqlite"
    o = DemoOutputs(records=odd, config=tmp_path / "hops.toml", report_dir=None, slurm_records=None, export=None,
                    example_export=None)
    block = render(demo_steps(o), ["hops-slurm"], Path("/elsewhere"))
    assert f"hops-slurm report --records {shlex.quote(str(odd))}" in block
    assert commands(block)[0] == ["hops-slurm", "report", "--records", str(odd)]


def test_hops_slurm_is_called_as_the_demo_was(tmp_path: Path, monkeypatch) -> None:
    assert hops_slurm_command(".venv/bin/hops-slurm", "/x/bin/python") == [".venv/bin/hops-slurm"]
    assert hops_slurm_command("-c", str(tmp_path / "python")) == ["hops-slurm"]  # no script beside it
    script = tmp_path / "bin" / "hops-slurm"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert hops_slurm_command("-c", str(tmp_path / "bin" / "python")) == [str(script)]
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}/usr/bin")
    assert hops_slurm_command("-c", str(tmp_path / "bin" / "python")) == ["hops-slurm"]


def test_shown_paths() -> None:
    assert shown(ROOT / "var" / "demo", ROOT) == "var/demo"
    assert shown(Path("/var/tmp/x"), ROOT) == "/var/tmp/x"


def test_the_export_is_settled_once_every_job_has_ended_with_its_partition() -> None:
    text = (DATA / "sacct" / "22.05" / "sacct.json").read_text()
    ids = [line.split("|")[0] for line in (DATA / "sacct" / "22.05" / "jobs.txt").read_text().splitlines()]
    assert missing_jobs(text, ids[:3]) == []
    assert missing_jobs(text, [*ids[:3], "99999"]) == ["99999"]


def test_the_block_names_no_absolute_path_under_the_folder_it_runs_from() -> None:
    """The demo's output is committed (docs/demo/make-demo-output.txt): the hops-slurm it was started as and
    the paths under the folder it ran in are printed from that folder, and the folder itself is not named."""
    block = render(demo_steps(_outputs()), [str(ROOT / ".venv" / "bin" / "hops-slurm")], ROOT, ROOT / "var" / "demo")
    assert str(ROOT) not in block
    assert {c[0] for c in commands(block)} == {".venv/bin/hops-slurm"}
    elsewhere = render(demo_steps(_outputs()), ["/opt/hops/bin/hops-slurm"], ROOT)
    assert {c[0] for c in commands(elsewhere)} == {"/opt/hops/bin/hops-slurm"}
