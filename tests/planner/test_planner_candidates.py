"""Candidates with their gains: each compact candidate carries its signature on the planning's nodes."""

from __future__ import annotations

from hops_slurm.tools.bench.solver_speeds import instance  # the bench's instances: every node its own speed
from planner.candidates import candidates_for
from planner.entities import entity_classes
from planner.ilp import solve_compact
from planner.signatures import Candidate, signature, signature_on


def test_compact_candidates_carry_their_signature_and_the_solve_reads_it() -> None:
    cluster, jobs = instance(256, 40, 4)
    ent = entity_classes(cluster, jobs, 0.05)
    by_name = {n.name: n for n in ent.nodes}
    cands = candidates_for(jobs, ent, 1.4, compact=True, spans="bucketed")
    assert cands and all(c.on is ent.nodes and c.sig == signature(c.config, by_name) for c in cands)
    # on other nodes (another view, equal or not) the signature is worked out again, not taken on trust
    wrong = Candidate(cands[0].job_id, cands[0].config, cands[0].gain, sig=(), on=ent.nodes)
    assert signature_on(wrong, tuple(list(ent.nodes)), by_name) == signature(cands[0].config, by_name)
    # the solve over candidates that carry signatures plans as over bare ones
    bare = [Candidate(c.job_id, c.config, c.gain) for c in cands]
    w = {j.job_id: 1.0 + k / 10 for k, j in enumerate(jobs)}
    assert solve_compact(cands, w, ent.nodes).assignments == solve_compact(bare, w, ent.nodes).assignments


def test_made_is_the_constructor_without_its_guarded_writes() -> None:
    from types import MappingProxyType

    cfg = MappingProxyType({"n0": 2})
    made, built = Candidate.made("j1", cfg, 1.5, ((("v", "c", 0), 2),), None), Candidate("j1", cfg, 1.5, ((("v", "c", 0), 2),))
    assert made == built and repr(made) == repr(built)
    assert (made.job_id, made.config, made.gain, made.sig, made.on) == ("j1", cfg, 1.5, ((("v", "c", 0), 2),), None)
    import dataclasses

    import pytest
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.gain = 2.0  # type: ignore[misc]


def test_gains_are_over_the_smallest_positive_estimate_and_zero_or_nan_ones_are_dropped() -> None:
    """Waiting jobs whose every config is estimated above 0 and jobs with configs at 0 or not a number: each
    kept config's gain is its estimate over the job's smallest kept one, in the configs' order."""
    import math

    from planner.configs import generate_configs
    from planner.views import ClusterView, JobView, NodeView

    cluster = ClusterView(tuple(NodeView(f"n{i}", "v100", f"c{i % 2}", 8, (8, 3)[i % 2]) for i in range(4)))
    rates = {"all": lambda c: 1.0 + sum(c.values()), "zero": lambda c: 0.0 if len(c) > 1 else 2.0 * sum(c.values()),
             "nan": lambda c: math.nan if sum(c.values()) == 4 else 3.0}
    jobs = [JobView(job_id=k, requirements=(2, 4, 8), submit_time=0.0, wait=0.0, age=1.0, sensitivity=1.0,
                    throughput=f) for k, f in rates.items()]
    got = candidates_for(jobs, cluster, 1.4, compact=True, spans="bucketed")
    by_name = {n.name: n for n in cluster.nodes}
    for job in jobs:
        firsts: dict[object, object] = {}
        for cfg in generate_configs(job, cluster, 1.4, one_per_class=True, spans="bucketed"):
            firsts.setdefault(signature(cfg, by_name), cfg)
        kept = [(cfg, float(job.throughput(cfg))) for cfg in firsts.values() if float(job.throughput(cfg)) > 0.0]
        low = min(thr for _, thr in kept)
        assert [(c.config, c.gain) for c in got if c.job_id == job.job_id] == [(cfg, thr / low) for cfg, thr in kept]
    assert {c.job_id for c in got} == {"all", "zero", "nan"} and len([c for c in got if c.job_id == "zero"]) < \
        len([c for c in got if c.job_id == "all"])
