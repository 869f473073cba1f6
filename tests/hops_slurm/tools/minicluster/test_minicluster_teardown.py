"""Taking a minicluster down with thousands of jobs queued: a cancel that times out never stops the teardown."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import load_test_spec
from tests_paths import DATA


class SlowCancel(Minicluster):
    """A cluster whose ``scancel`` runs past its time limit, as it did with 13,000 jobs on a busy machine."""

    ran: list[str]

    def run(self, argv: list[str], check: bool = True, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        self.ran.append(argv[0])
        if argv[0] == "scancel":
            raise subprocess.TimeoutExpired(argv, timeout)
        return subprocess.CompletedProcess(argv, 0, "13005\n13006\n", "")


def test_a_cancel_that_times_out_is_logged_and_the_teardown_goes_on(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    spec = load_test_spec(DATA / "minicluster-lifecycle.toml").model_copy(update={"state_dir": tmp_path / "mc"})
    cluster = SlowCancel(spec)
    cluster.ran = []
    cluster._cancel_all_jobs(timeout=0.1)
    assert cluster.ran == ["squeue", "scancel"]
    assert "`scancel` timed out" in caplog.text
