"""``bench paper-tables``: the lines under a table whose runs set jobs aside (issue 22): the same servable
set under every policy, or which jobs a policy left out, and what was set aside and why."""

from __future__ import annotations

from hops_slurm.tools.bench.paper_tables import served_lines
from hops_slurm.records import JobRecord
from hops_slurm.report.metrics import summarize
from hops_slurm.sim.runner import RunResult

REASON = "no configuration serves it: every placement of 2 GPU(s) is estimated at throughput 0"


def _run(policy: str, completed: list[str], aside: list[str], stalled: list[str] = ()) -> RunResult:
    jobs = [JobRecord(job_id=j, name="ResNet-18", submit=0.0, end=100.0, state="COMPLETED", requirements=[1])
            for j in completed]
    jobs += [JobRecord(job_id=j, name="A3C", submit=0.0, end=50.0, state="CANCELLED", requirements=[2], aside=REASON)
             for j in aside]
    jobs += [JobRecord(job_id=j, name="A3C", submit=0.0, end=50.0, state="CANCELLED", requirements=[2]) for j in stalled]
    return RunResult(policy, 0, jobs, [], [], summarize(jobs, []))


def test_set_aside_jobs_are_counted_apart_from_unfinished_ones() -> None:
    m = _run("p", ["a", "b"], ["x", "y"], ["z"]).metrics
    assert (m.jobs, m.set_aside, m.unfinished) == (2, 2, 1)


def test_every_policy_completing_the_same_jobs_is_said_with_what_was_set_aside() -> None:
    lines = served_lines([_run("hops", ["a", "b"], ["x"]), _run("slurm-backfill", ["a", "b"], ["x"])])
    text = "\n".join(lines)
    assert "Seed 0: 2 jobs completed by some policy; every policy completed all of them." in text
    assert "- every policy set aside the same 1: 1 A3C on 2 GPUs; reason 'no configuration serves it' (1)." in text
    lines = served_lines([_run("hops", ["a", "b"], ["x"]), _run("slurm-backfill", ["a", "b"], ["y"])])
    assert "- hops set aside 1:" in "\n".join(lines) and "- slurm-backfill set aside 1:" in "\n".join(lines)


def test_a_policy_that_misses_a_servable_job_is_named_with_the_job() -> None:
    lines = served_lines([_run("hops", ["a", "b"], ["x"]), _run("themis", ["a"], ["x", "b"])])
    assert any("not completed by themis: 1 (b)." in line for line in lines)


def test_no_lines_when_nothing_was_set_aside() -> None:
    assert served_lines([_run("hops", ["a"], [])]) == []
