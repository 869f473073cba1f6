"""The generated history (hops_slurm.tools.bench.sacct_history) reads back through both export formats the
same, holds no more GPUs at once than its cluster, and carries rows whatif must report."""

from __future__ import annotations

from hops_slurm.tools.bench.sacct_history import generate, to_json, to_parsable2
from hops_slurm.whatif.exports import parse_text, select
from hops_slurm.whatif.replay import peak_gpus


def test_both_formats_read_the_same_jobs() -> None:
    jobs = generate(300, seed=3, gpus=32, rate=8.0)
    a, b = select(parse_text(to_json(jobs))), select(parse_text(to_parsable2(jobs)))
    key = lambda s: [(j.job_id, j.gpus, j.submit, j.start, j.end, j.state) for j in s.jobs]  # noqa: E731
    assert key(a) == key(b) and len(a.jobs) > 250
    assert a.reading.errors == 0 and a.reading.warnings == len(jobs) - len(a.jobs) > 0
    assert peak_gpus(a.jobs) <= 32


def test_generation_is_reproducible() -> None:
    assert generate(50, seed=1) == generate(50, seed=1) != generate(50, seed=2)
