"""One configuration, found (issue 33 item 6): ``config check`` with no FILE checks the file the daemon uses
(``$HOPS_CONFIG``, else /etc/hops-slurm/hops.toml) and names it; a missing one is an error naming it; the
bundled sample only with ``--sample``; ``report`` reads the records of that same configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hops_slurm import config_path
from hops_slurm.bundled import sample_config
from hops_slurm.cli import main

DATA = Path(__file__).resolve().parents[1] / "report" / "data"


@pytest.fixture(autouse=True)
def no_site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No $HOPS_CONFIG, no $HOPS_SLURM_RECORDS, and the system path somewhere that does not exist."""
    monkeypatch.delenv("HOPS_CONFIG", raising=False)
    monkeypatch.delenv("HOPS_SLURM_RECORDS", raising=False)
    missing = tmp_path / "etc-hops-slurm" / "hops.toml"
    monkeypatch.setattr(config_path, "SYSTEM_CONFIG", missing)
    return missing


def _config(tmp_path: Path, body: str = "") -> Path:
    path = tmp_path / "site.toml"
    path.write_text(f'[paths]\nstate_dir = "{tmp_path / "state"}"\n{body}')
    return path


def test_no_argument_checks_the_daemons_file_and_names_it(tmp_path: Path, no_site: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check"]) == 1  # the system path: missing, named, never the sample instead
    err = capsys.readouterr().err
    assert str(no_site) in err and "no such file" in err and "system path" in err

    no_site.parent.mkdir()
    shutil.copyfile(_config(tmp_path), no_site)
    assert main(["config", "check"]) == 0
    assert capsys.readouterr().out.startswith(f"{no_site}: OK (system path)")

    bad = tmp_path / "bad.toml"
    bad.write_text("[scheduler]\nround_length = -1\n[planner]\ngap = 2\n")
    monkeypatch.setenv("HOPS_CONFIG", str(bad))  # $HOPS_CONFIG before the system path, as the daemon reads it
    assert main(["config", "check"]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err and "scheduler.round_length" in err and "planner.gap" in err


def test_the_sample_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", "--sample"]) == 0
    assert capsys.readouterr().out.startswith(f"{sample_config()}: OK (sample)")
    assert main(["config", "check", str(sample_config()), "--sample"]) == 1  # one or the other


def test_daemon_commands_name_the_missing_file(no_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["queue"], ["failopen", "--dry-run"], ["plan", "--once", "--dry-run"]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert str(no_site) in err and "no such file" in err, (argv, err)


def test_report_reads_the_records_of_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 1
    err = capsys.readouterr().err
    assert "--records" in err and "no such file" in err  # what to pass, and the configuration it looked for

    config = _config(tmp_path, f'records = "{tmp_path / "state" / "runs.jsonl"}"\n')
    (tmp_path / "state").mkdir()
    shutil.copyfile(DATA / "sim_records.jsonl", tmp_path / "state" / "runs.jsonl")
    assert main(["report", "--records", str(DATA / "sim_records.jsonl"), "-P"]) == 0
    expected = capsys.readouterr().out
    assert main(["report", "--config", str(config), "-P"]) == 0
    assert capsys.readouterr().out == expected
    monkeypatch.setenv("HOPS_CONFIG", str(config))  # the daemon's configuration: no flag at all
    assert main(["report", "-P"]) == 0
    assert capsys.readouterr().out == expected
