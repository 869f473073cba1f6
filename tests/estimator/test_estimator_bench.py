"""The estimator benchmark runs on the bundled Gavel data and writes the sections the issue names."""

from __future__ import annotations

from hops_slurm.bench import discover
from hops_slurm.bench import estimator as bench


def test_split_is_disjoint_and_covers_every_variant():
    variants = bench._variants(bench._load())
    train, test = bench._split(variants)
    assert {v.name for v in train}.isdisjoint({v.name for v in test})
    assert len(train) + len(test) == len(variants) >= 16
    assert {v.family for v in test} == set(bench.PARAMS)  # every family is tested


def test_benchmark_writes_report(tmp_path):
    assert discover()["estimator"] is bench
    path = bench.run(tmp_path)
    text = path.read_text()
    assert path.name == "estimator.md"
    assert "## Prediction check: 2-process gloo DDP" in text
    assert "filled by the profiler benchmark" in text
    assert "| **all held-out** |" in text
    assert "## Where the model's assumptions break" in text
