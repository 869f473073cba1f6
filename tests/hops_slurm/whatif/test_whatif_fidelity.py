"""The what-if's fidelity line (issue 23): how close its replay of Slurm's own policy comes to what
Slurm recorded, and a warning naming the assumptions when it misses."""

from __future__ import annotations

import json

import pytest

from hops_slurm.cli import main
from hops_slurm.whatif.fidelity import fidelity, fidelity_line, warning
from hops_slurm.whatif.output import Row
from tests_paths import DATA

SACCT = DATA / "sacct"


def row(name: str, wait: float, jct: float, makespan: float, error: str = "") -> Row:
    return Row(name, 10, 10, jct, wait, 1.0, 0.5, 0.8, makespan, 0, error)


def test_close_within_ten_percent_or_thirty_seconds() -> None:
    rows = [row("slurm-recorded", 1000.0, 2000.0, 10000.0), row("slurm-backfill", 1090.0, 1850.0, 10500.0),
            row("hops", 1.0, 2.0, 3.0)]
    f = fidelity(rows)
    assert f is not None and f.policy == "slurm-backfill" and f.ok
    assert "within 10% (or 30 s)" in fidelity_line(f) and "NOT" not in fidelity_line(f)
    seconds = fidelity([row("slurm-recorded", 10.0, 20.0, 60.0), row("slurm-backfill", 35.0, 45.0, 85.0)])
    assert seconds is not None and seconds.ok  # jobs of seconds: 25 s off is close
    far = fidelity([row("slurm-recorded", 1000.0, 2000.0, 10000.0), row("slurm-backfill", 1000.0, 2000.0, 12000.0)])
    assert far is not None and not far.ok
    text = warning(far, probe_seconds=60.0, inferred=True, refresh_seconds=30.0)
    assert "misses the recorded makespan:" in text and "60 s probe" in text and "inferred cluster" in text


def test_no_line_without_a_slurm_replay_or_a_record() -> None:
    assert fidelity([row("slurm-recorded", 1.0, 2.0, 3.0), row("hops", 1.0, 2.0, 3.0)]) is None
    assert fidelity([row("slurm-backfill", 1.0, 2.0, 3.0)]) is None
    # a failed backfill run is passed over for the next Slurm policy
    f = fidelity([row("slurm-recorded", 1.0, 2.0, 3.0), row("slurm-backfill", 0, 0, 0, error="boom"),
                  row("slurm-multifactor", 1.0, 2.0, 3.0)])
    assert f is not None and f.policy == "slurm-multifactor"


def test_whatif_prints_the_multifactor_row_and_the_fidelity_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(SACCT / "22.05" / "sacct.json"), "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [r["scheduler"] for r in doc["schedulers"]] == ["slurm-recorded", "slurm-backfill", "slurm-multifactor", "hops"]
    assert "fidelity: slurm-backfill replays the recorded schedule with avg wait" in err
    # with its defaults the replay of these jobs of seconds misses (the inferred cluster's 60 s probes)
    assert doc["meta"]["fidelity"]["ok"] is False
    assert "warning: the replay of slurm-backfill misses the recorded" in err and "60 s probe" in err
