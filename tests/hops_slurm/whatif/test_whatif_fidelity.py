"""The what-if's fidelity line (issue 23): how close its replay of Slurm's own policy comes to what
Slurm recorded, and a warning naming the assumptions when it misses. With the defaults, the replay of the
recorded exports of every release (both formats) and of the busy-queue export (60 jobs on 16 GPUs,
tests/data/sacct-busy/capture.py) lands within 10 % (or 30 s) of the record."""

from __future__ import annotations

import json

import pytest

from hops_slurm.cli import main
from hops_slurm.sim.runner import Options
from hops_slurm.whatif.assumptions import Assumptions
from hops_slurm.whatif.fidelity import fidelity, fidelity_line, warning
from hops_slurm.whatif.output import Row
from hops_slurm.whatif.pipeline import run_whatif
from tests_paths import DATA

SACCT = DATA / "sacct"
RELEASES = ("22.05", "24.11", "26.05")
#: the exports of a busy queue (tests/data/sacct-busy/<release>/): 60 jobs of 1-8 GPUs with their own time
#: limits, backfilled by Slurm
BUSY = sorted(f"busy {p.name}" for p in (DATA / "sacct-busy").iterdir() if (p / "sacct.json").is_file())


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
    text = warning(far, inferred=True, assumed_limits=3, replayed=10, limit_seconds=3600.0)
    assert "misses the recorded makespan:" in text and "3 of 10 jobs have no recorded time limit" in text
    assert "01:00:00" in text and "inferred" in text
    assert "time limit" not in warning(far, inferred=False, assumed_limits=0, replayed=10)


def test_no_line_without_a_slurm_replay_or_a_record() -> None:
    assert fidelity([row("slurm-recorded", 1.0, 2.0, 3.0), row("hops", 1.0, 2.0, 3.0)]) is None
    assert fidelity([row("slurm-backfill", 1.0, 2.0, 3.0)]) is None
    # a failed backfill run is passed over for the next Slurm policy
    f = fidelity([row("slurm-recorded", 1.0, 2.0, 3.0), row("slurm-backfill", 0, 0, 0, error="boom"),
                  row("slurm-multifactor", 1.0, 2.0, 3.0)])
    assert f is not None and f.policy == "slurm-multifactor"


@pytest.mark.parametrize("export", ["sacct.json", "sacct-parsable2.txt"])
@pytest.mark.parametrize("release", [*RELEASES, *BUSY])
def test_replay_of_slurm_matches_each_recorded_export_with_the_defaults(release: str, export: str) -> None:
    """The inferred cluster, the default options and assumptions: the replay of Slurm's backfill is within
    10 % (or 30 s) of the recorded avg wait, avg JCT and makespan (it was 1.8x-2.9x off when it charged
    Hops' 60 s probes and a 35 s process start to jobs of seconds and minutes and planned on a 30 s timer)."""
    busy = release in BUSY
    path = DATA / "sacct-busy" / release.split()[-1] / export if busy else SACCT / release / export
    result = run_whatif(path, None, Assumptions(), ("slurm-backfill",), Options())
    f = fidelity(result.rows)
    assert f is not None and f.policy == "slurm-backfill"
    assert set(f.values) == {"avg wait", "avg JCT", "makespan"}
    assert f.ok, fidelity_line(f)
    sources = {d.limit_source for d in result.derived}
    # the small exports' --parsable2 has no Timelimit (assumed); the busy one's has it
    assert sources == ({"recorded"} if export == "sacct.json" or busy else {"assumed"})
    if busy:
        assert len(result.derived) == 60 and {d.rigid for d in result.derived} == {1, 2, 4, 8}
        return
    # the record's start order holds: the 8-GPU job starts only after the jobs before it, nobody jumps it
    rec = {j.job_id: j for s in result.sides if s.label == "slurm-recorded" for j in s.jobs}
    sim = {j.job_id: j for s in result.sides if s.label == "slurm-backfill" for j in s.jobs}
    wide = next(i for i, j in rec.items() if j.requirements == [8])
    assert [i for i in sim if (sim[i].start or 0.0) < (sim[wide].start or 0.0)] == \
        [i for i in rec if (rec[i].start or 0.0) < (rec[wide].start or 0.0)]


def test_the_busy_queue_export_is_here() -> None:
    assert "busy 22.05" in BUSY


def test_whatif_prints_the_multifactor_row_and_the_fidelity_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(SACCT / "22.05" / "sacct.json"), "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [r["scheduler"] for r in doc["schedulers"]] == ["slurm-recorded", "slurm-backfill", "slurm-multifactor", "hops"]
    assert "fidelity: slurm-backfill replays the recorded schedule with avg wait" in err
    assert doc["meta"]["fidelity"]["ok"] is True and "within 10% (or 30 s)" in err
    assert doc["meta"]["time_limits"] == {"recorded": 12}
    assert "warning: the replay" not in err


def test_a_miss_is_a_warning_naming_the_assumptions(tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    """A cluster twice the recorded one: the replay no longer queues where Slurm did; the warning names the
    assumed time limits and the cluster."""
    cluster = tmp_path / "big.toml"  # type: ignore[operator]
    cluster.write_text('name = "big"\n[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 8\ncount = 2\n')
    assert main(["whatif", str(SACCT / "24.11" / "sacct-parsable2.txt"), "--cluster", str(cluster), "--json",
                 "--policies", "slurm-backfill"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["meta"]["fidelity"]["ok"] is False
    assert "NOT within 10% (or 30 s)" in err
    assert "warning: the replay of slurm-backfill misses the recorded" in err
    assert "12 of 12 jobs have no recorded time limit" in err and "the cluster is the one --cluster names" in err
