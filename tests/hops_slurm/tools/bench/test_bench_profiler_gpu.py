"""``hops-slurm bench profiler --device cuda``: one-line refusal without CUDA; the check itself on the CPU."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from hops_slurm.tools.bench.profiler_gpu import check_model
from hops_slurm.cli import main


def test_refuses_in_one_line_without_cuda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "results"
    assert main(["bench", "profiler", "--device", "cuda", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("hops-slurm: error: --device cuda: CUDA is not available on this machine (torch ")
    assert "the GPU check runs only where a GPU is present" in captured.err
    assert not out.exists()  # nothing ran, nothing written


def test_only_the_profiler_has_a_gpu_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "solver", "--device", "cuda"]) == 1
    assert capsys.readouterr().err == (
        "hops-slurm: error: --device cuda: only the profiler benchmark has a GPU check "
        "(hops-slurm bench profiler --device cuda)\n")


def test_the_check_runs_on_the_cpu_at_tiny_size() -> None:
    c = check_model("resnet18", size="tiny", device="cpu", iterations=6, warmup=1)
    assert c.model == "resnet18" and c.batch > 0 and c.probe_seconds > 0
    assert c.predicted > 0 and c.measured > 0 and c.probe_free_running > 0
    assert math.isfinite(c.error) and c.error == pytest.approx(c.predicted / c.measured - 1)
