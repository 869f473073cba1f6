"""The report's sacct parsers on what ``sacct`` of Slurm 22.05.8, 24.11.5 and 26.05.5 printed (with slurmdbd)
for the scenario in tests/data/slurm-output/ (README.md there): the commands are the report's own
(:func:`hops_slurm.report.sacct.sacct_command` for jobs 1-21, ``SLURM_TIME_FORMAT=standard``)."""

from __future__ import annotations

from datetime import UTC

import pytest

from hops_slurm.report.sacct import SacctJob, parse_sacct_json, parse_sacct_parsable2
from tests_paths import DATA

RECORDED = DATA / "slurm-output"


def _last(jobs: list[SacctJob]) -> dict[str, SacctJob]:
    """The latest record of each job id (22.05's --json also lists a requeued job's earlier run)."""
    out: dict[str, SacctJob] = {}
    for j in jobs:
        out[j.job_id] = j
    return out


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_recorded_sacct_of_every_release_reads_the_same(release: str) -> None:
    d = RECORDED / release
    from_json = _last(parse_sacct_json((d / "sacct.json").read_text()))
    # the parsable2 form prints the recording machine's wall-clock time, which was UTC
    from_text = _last(parse_sacct_parsable2((d / "sacct-parsable2.txt").read_text(), tz=UTC))
    assert sorted(from_json, key=int) == sorted(from_text, key=int) == [str(i) for i in range(1, 22)]
    for job_id, j in from_json.items():
        t = from_text[job_id]
        assert (j.state, j.submit, j.start, j.end, j.nodes, j.name, j.user) == \
            (t.state, t.submit, t.start, t.end, t.nodes, t.name, t.user), job_id
        assert not j.provisional and not t.provisional
        if j.start is not None:
            assert j.gpus == t.gpus, job_id
    hops = from_json["17"]
    assert (hops.state, hops.nodes, hops.gpus) == ("RUNNING", ("a100-1", "a100-2"), 5)
    assert hops.start is not None and hops.end is None
    for job_id in ("2", "6", "11", "12", "15"):
        assert from_json[job_id].state == "CANCELLED" and from_json[job_id].end is not None
    assert from_json["9"].state == "PENDING" and from_json["9"].start is None  # requeue-held: waiting again
    assert from_json["18"].state == from_json["21"].state == "PENDING"
