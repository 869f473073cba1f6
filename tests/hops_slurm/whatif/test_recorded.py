"""Parse tests on real exports recorded from the local cluster with slurmdbd (tests/data/sacct/<release>/,
written by tests/data/sacct/capture.py): both formats of each release give the jobs that were submitted
(jobs.txt), with their GPU counts, fates and run times."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.whatif.exports import read_export, select
from hops_slurm.whatif.history import HistoryJob
from tests_paths import DATA

SACCT = DATA / "sacct"
RELEASES = sorted(p.name for p in SACCT.iterdir() if (p / "jobs.txt").is_file())


def submitted(release: str) -> dict[str, tuple[str, int, int, str]]:
    """job id -> (name, GPUs, seconds of sleep, fate) as capture.py submitted them."""
    out = {}
    for line in (SACCT / release / "jobs.txt").read_text().splitlines():
        job, name, gpus, secs, fate = line.split("|")
        out[job] = (name, int(gpus), int(secs), fate)
    return out


def key(j: HistoryJob) -> tuple[object, ...]:
    return (j.job_id, j.name, j.state, j.gpus, j.submit, j.start, j.end, j.nodes)


def test_releases_recorded() -> None:
    assert "22.05" in RELEASES


@pytest.mark.parametrize("release", RELEASES)
def test_json_layout_is_recognised(release: str) -> None:
    r = read_export(SACCT / release / "sacct.json")
    assert (r.source, r.release) == ("sacct --json", release)
    assert r.problems == []


@pytest.mark.parametrize("release", RELEASES)
def test_json_and_parsable2_agree(release: str) -> None:
    js = read_export(SACCT / release / "sacct.json")
    p2 = read_export(SACCT / release / "sacct-parsable2.txt")
    steps = read_export(SACCT / release / "sacct-steps-parsable2.txt")
    assert p2.problems == [] and steps.problems == []
    assert sorted(map(key, js.jobs)) == sorted(map(key, p2.jobs)) == sorted(map(key, steps.jobs))
    assert steps.steps > 0 and p2.steps == 0


@pytest.mark.parametrize("release", RELEASES)
def test_jobs_as_submitted(release: str) -> None:
    want = submitted(release)
    jobs = {j.job_id: j for j in read_export(SACCT / release / "sacct.json").jobs}
    assert set(jobs) == set(want)
    for job_id, (name, gpus, secs, fate) in want.items():
        j = jobs[job_id]
        assert (j.name, j.gpus) == (name, gpus), job_id
        if fate == "ok":
            assert j.state == "COMPLETED" and j.run_time is not None and secs <= j.run_time <= secs + 3
        elif fate == "fail":
            assert j.state == "FAILED" and j.run_time is not None
        elif fate == "cancel-running":
            assert j.state == "CANCELLED" and j.start is not None and j.run_time is not None and j.run_time < secs
        else:
            assert j.state == "CANCELLED" and j.start is None
    wide = next(j for j in jobs.values() if j.name == "wide-d")
    assert wide.nodes == 2


@pytest.mark.parametrize("release", RELEASES)
def test_selection_names_every_left_out_job(release: str) -> None:
    sel = select(read_export(SACCT / release / "sacct-parsable2.txt"))
    want = submitted(release)
    left = {p.where.split("job ")[1].rstrip(")"): p.message for p in sel.reading.problems}
    cpu = next(j for j, v in want.items() if v[1] == 0)
    pending = next(j for j, v in want.items() if v[3] == "cancel-pending")
    assert left == {cpu: "no GPUs in its TRES (not a GPU job): left out",
                    pending: "never started (CANCELLED): left out"}
    assert len(sel.jobs) == len(want) - 2
    assert all(p.severity == "warning" for p in sel.reading.problems)


def test_recorded_files_are_real_sacct_output() -> None:
    for release in RELEASES:
        assert release in (SACCT / release / "sacct-version.txt").read_text()
        assert Path(SACCT / release / "sacct.json").read_text().lstrip().startswith("{")
