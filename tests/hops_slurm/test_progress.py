"""The CLI progress bar: drawn on a terminal only, never on a log or a pipe."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest

from hops_slurm.progress import StepBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_draws_on_a_terminal_and_clears_itself(capsys: pytest.CaptureFixture[str]) -> None:
    tty = Terminal()
    with StepBar(2, "benchmarks", stream=tty) as bar:
        bar.start("solver")
        time.sleep(0.6)  # the ticker redraws a long step
        bar.done()
        bar.print("solver: wrote x")
    text = tty.getvalue()
    assert "[------------------------] 0/2 benchmarks; solver" in text
    assert "[############------------] 1/2 benchmarks" in text
    assert text.endswith("\r\033[K")
    assert capsys.readouterr().out == "solver: wrote x\n"


def test_quiet_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    log = io.StringIO()
    with StepBar(1, "benchmarks", stream=log) as bar:
        bar.start("solver")
        bar.done()
        bar.print("solver: wrote x")
    assert log.getvalue() == ""
    assert capsys.readouterr().out == "solver: wrote x\n"


def test_simulate_is_quiet_on_a_pipe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hops_slurm.cli import main

    assert main(["simulate", "--cluster", "paper-64", "--workload", "paper:jobs=4", "--policies", "slurm-backfill",
                 "--out", str(tmp_path)]) == 0
    assert "runs;" not in capsys.readouterr().err
