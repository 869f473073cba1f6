"""``hops-slurm queue --config FILE`` after a finished run (issue 26): the engine tracks no unfinished job,
so Slurm is not asked (the demo's cluster is down by then); the header, and a note naming the records."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.cli import main
from hops_slurm.engine.state import EngineState, JobState
from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.cli import CliSlurm


def _engine(tmp_path: Path, *, ended: bool) -> Path:
    state_dir = tmp_path / "engine"
    config = tmp_path / "hops.toml"
    config.write_text(f'[paths]\nstate_dir = "{state_dir}"\n')
    state = EngineState(state_dir / "engine.sqlite")
    state.save(JobState(job_id="7", name="resnet", user="alice", directives="gpus=1,2", submit_time=100.0,
                        first_seen=100.0, last_seen=200.0, last_state="COMPLETED" if ended else "PENDING",
                        ended=200.0 if ended else None, end_state="COMPLETED" if ended else ""))
    state.close()
    return config


def test_a_finished_run_needs_no_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    config = _engine(tmp_path, ended=True)

    def unreachable(self: CliSlurm) -> list[SlurmJob]:
        raise AssertionError("Slurm was asked")

    monkeypatch.setattr(CliSlurm, "jobs", unreachable)
    assert main(["queue", "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    assert out.split() == ["JOBID", "NAME", "USER", "ST", "PRIORITY", "LR", "WAIT", "ESTRUN", "DONE", "HISTORY", "WINDOW", "PLAN"]
    assert "tracks no pending or running job" in err
    assert f"hops-slurm report --records {tmp_path / 'engine' / 'records.sqlite'}" in err
    assert "error" not in err


def test_an_unfinished_job_is_joined_with_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = _engine(tmp_path, ended=False)
    monkeypatch.setattr(CliSlurm, "jobs", lambda self: [SlurmJob(job_id="7", name="resnet", user="alice", state="PENDING")])
    assert main(["queue", "--config", str(config), "--parsable2", "--noheader", "--format", "jobid,state"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "7|PD"
    assert "note" not in err


def test_the_administrators_view_shows_the_published_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    from hops_slurm.engine.queue_summary import Summary, SummaryJob, write

    config = _engine(tmp_path, ended=False)
    monkeypatch.setattr(CliSlurm, "jobs", lambda self: [SlurmJob(job_id="7", name="resnet", user="alice", state="PENDING")])
    assert main(["queue", "--config", str(config), "--parsable2", "--noheader", "--format", "jobid,reason"]) == 0
    assert capsys.readouterr().out.strip() == "7|-"  # no summary yet
    (tmp_path / "engine").chmod(0o755)
    write(tmp_path / "engine", Summary(hops_queue_summary=1, as_of=0.0, jobs=[
        SummaryJob(job_id="7", user="alice", state="PENDING", reason="HopsQueue", reason_code="HopsQueue")]))
    assert main(["queue", "--config", str(config), "--parsable2", "--noheader", "--format", "jobid,reason"]) == 0
    assert capsys.readouterr().out.strip() == "7|HopsQueue"
