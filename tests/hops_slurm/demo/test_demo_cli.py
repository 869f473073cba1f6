"""``hops-slurm demo --hops-only`` and ``make demo HOPS_ONLY=1`` skip the run under Slurm's backfill."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import hops_slurm.cli.demo as cli_demo
from hops_slurm.cli import main
from hops_slurm.demo.run import ROOT


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
