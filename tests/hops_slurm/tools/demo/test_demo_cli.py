"""``hops-slurm demo --hops-only`` and ``make demo HOPS_ONLY=1`` skip the run under Slurm's backfill."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import hops_slurm.cli.demo_cmd as cli_demo
from hops_slurm.cli import main
from hops_slurm.tools.demo.run import ROOT


@pytest.mark.parametrize(("flags", "hops_only"), [([], False), (["--hops-only"], True)])
def test_the_flag_reaches_the_demo(flags: list[str], hops_only: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_run_demo(out: object, spec: object, **kwargs: Any) -> int:
        seen.update(kwargs)
        return 0

    monkeypatch.setattr(cli_demo, "run_demo", fake_run_demo)
    assert main(["demo", *flags]) == 0
    assert seen["hops_only"] is hops_only


def test_make_passes_hops_only() -> None:
    def demo_line(*extra: str) -> str:
        out = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", *extra], capture_output=True, text=True, check=True).stdout
        return next(line for line in out.splitlines() if "hops-slurm demo" in line)

    assert demo_line("HOPS_ONLY=1").split()[-1] == "--hops-only"
    assert "--hops-only" not in demo_line()


def test_the_report_goes_outside_the_tracked_tree_unless_asked() -> None:
    def demo_argv(*extra: str) -> list[str]:
        out = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", *extra], capture_output=True, text=True, check=True).stdout
        return next(line for line in out.splitlines() if "hops-slurm demo" in line).split()

    assert "--out" not in demo_argv()  # the default: var/demo (git-ignored)
    argv = demo_argv("OUT=docs/demo")
    assert argv[argv.index("--out") + 1] == "docs/demo"


def test_the_default_out_folder_reaches_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    from hops_slurm.tools.demo.run import REPORT_DIR

    seen: dict[str, Any] = {}
    monkeypatch.setattr(cli_demo, "run_demo", lambda out, spec, **kwargs: seen.update(kwargs) or 0)
    assert main(["demo"]) == 0
    assert seen["report_dir"] == REPORT_DIR == ROOT / "var" / "demo"
    assert main(["demo", "--out", "docs/demo"]) == 0
    assert seen["report_dir"] == Path("docs/demo")
