"""``python -m profiler.probe``: one JSON result on success; a failure record, a clear message and
a distinct exit status for a bad entrypoint, running out of memory and the time limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from profiler.probe import EXIT_BAD_ENTRYPOINT, EXIT_OOM, EXIT_TIME_LIMIT, main
from profiler.records import ProbeFailure, ProbeResult, read_records

USER_JOBS = textwrap.dedent(
    """
    import time
    import torch
    from torch import nn


    class Greedy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            torch.empty(1 << 60, dtype=torch.uint8)  # an exabyte: no machine has it
            return self.lin(x)


    class Slow(nn.Linear):
        def forward(self, x):
            time.sleep(0.3)
            return super().forward(x)


    def _job(model):
        data = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(4)]
        return model, data, torch.optim.SGD(model.parameters(), lr=0.1), nn.functional.cross_entropy


    def ok():
        return _job(nn.Linear(4, 2))


    def oom():
        return _job(Greedy())


    def slow():
        return _job(Slow(4, 2))


    def broken():
        raise ValueError("dataset path /nonexistent not found")


    def wrong_shape():
        return 42
    """
)


@pytest.fixture()
def user_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "userjobs.py").write_text(USER_JOBS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_module_entry_writes_one_result(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-m", "profiler.probe", "--model", "resnet18", "--size", "tiny", "--iterations", "10",
         "--device", "cpu", "--threads", "1", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (record,) = read_records(out)
    assert isinstance(record, ProbeResult)
    assert record.model == "resnet18" and record.source == "zoo" and record.size == "tiny"
    assert record.iterations == 10
    assert json.loads(out.read_text())["kind"] == "probe"


def test_user_entrypoint_tuple_form(user_jobs: Path) -> None:
    out = user_jobs / "ok.json"
    assert main(["--entrypoint", "userjobs:ok", "--iterations", "10", "--device", "cpu", "--out", str(out)]) == 0
    (record,) = read_records(out)
    assert isinstance(record, ProbeResult)
    assert record.source == "entrypoint" and record.model == "userjobs:ok"
    assert (record.params, record.batch_size, record.input_shape) == (4 * 2 + 2, 8, (4,))


@pytest.mark.parametrize(
    ("entrypoint", "message"),
    [
        ("userjobs:broken", "raised ValueError: dataset path /nonexistent not found"),
        ("userjobs:missing", "has no callable 'missing'"),
        ("nosuchpackage.mod:build", "cannot import module 'nosuchpackage.mod'"),
        ("userjobs", "must look like 'pkg.module:build'"),
        ("userjobs:wrong_shape", "must return a profiler.job.ProbeJob or (model, loader, optimizer, loss_fn)"),
    ],
)
def test_bad_entrypoint(user_jobs: Path, capsys: pytest.CaptureFixture[str], entrypoint: str, message: str) -> None:
    out = user_jobs / "f.json"
    assert main(["--entrypoint", entrypoint, "--device", "cpu", "--out", str(out)]) == EXIT_BAD_ENTRYPOINT
    assert message in capsys.readouterr().err
    (record,) = read_records(out)
    assert isinstance(record, ProbeFailure) and record.error == "bad_entrypoint" and message in record.reason


def test_out_of_memory(user_jobs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = user_jobs / "f.json"
    assert main(["--entrypoint", "userjobs:oom", "--device", "cpu", "--out", str(out)]) == EXIT_OOM
    err = capsys.readouterr().err
    assert "ran out of memory" in err and "smaller per-GPU batch size" in err
    (record,) = read_records(out)
    assert isinstance(record, ProbeFailure) and record.error == "out_of_memory"


def test_time_limit(user_jobs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Each iteration sleeps 0.3 s; 3 warm-up + 2x10 measured iterations cannot fit in 1 s.
    out = user_jobs / "f.json"
    assert main(["--entrypoint", "userjobs:slow", "--iterations", "10", "--device", "cpu", "--time-limit", "1",
                 "--out", str(out)]) == EXIT_TIME_LIMIT
    assert "exceeded its time limit of 1 s" in capsys.readouterr().err
    (record,) = read_records(out)
    assert isinstance(record, ProbeFailure) and record.error == "time_limit"
