"""The solver benchmark's instances look like the paper's simulation, and a small row measures."""

from __future__ import annotations

import random
from collections import Counter

from hops_slurm.tools.bench.solver import make_cluster, make_jobs, measure


def test_cluster_has_the_papers_five_classes_in_proportion() -> None:
    cluster = make_cluster(512, random.Random(1))
    assert len(cluster.nodes) == 64 and cluster.total_gpus == 512
    counts = Counter(n.server_class for n in cluster.nodes)
    assert sorted(counts.values()) == [8, 8, 16, 16, 16]
    assert len(cluster.gpu_types) == 3
    assert 0 < cluster.free_gpus < cluster.total_gpus  # some nodes partly held by other jobs


def test_jobs_have_requirement_sets_within_1_to_16() -> None:
    cluster = make_cluster(64, random.Random(2))
    jobs = make_jobs(cluster, 50, random.Random(3))
    assert all(1 <= r <= 16 for j in jobs for r in j.requirements)
    cfg = {cluster.nodes[0].name: 1}
    assert all(j.throughput(cfg) > 0 for j in jobs)


def test_a_small_row_solves_within_the_gap() -> None:
    row = measure(64, "compact", "CBC", range(2), time_limit=30.0)
    assert row.fallbacks == 0 and all(g <= 0.01 + 1e-9 for g in row.gaps)
    assert all(v > 0 for v in row.n_vars)
