"""``bench table4-frontier``: the rows (each a valid Hops policy combining rules that cut preemptions), the
frontier (no row beaten on both preemptions and avg JCT), the worst seed's value, and a whole run of the bench
on a small cluster and workload."""

from __future__ import annotations

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import compare
from hops_slurm.tools.bench import table4_frontier as bench
from hops_slurm.tools.bench import table4_targets as targets
from hops_slurm.tools.results_header import parse

SMALL = ("paper-64", "paper:jobs=12")


def test_the_rows_are_valid_policies_each_combining_rules_against_preemptions() -> None:
    from planner.params import PlannerParams
    from planner.policies import make_policy

    assert bench.rows({}) == list(bench.COMBINATIONS) and bench.COMBINATIONS[0] == ("today's defaults", "hops")
    names = [n for _, n in bench.COMBINATIONS]
    assert len(set(names)) == len(names)
    defaults = PlannerParams()
    for name in names[1:]:
        params = make_policy(name).params
        diff = {k for k in vars(defaults) if getattr(params, k) != getattr(defaults, k)}
        assert len(diff) >= 2, name  # a combination, not one rule (those are table4-targets' ablation)
    assert bench.rows({"HOPS_BENCH_SETTINGS": "hops;hops:move_toll=1"})[1] == ("hops:move_toll=1", "hops:move_toll=1")
    with pytest.raises(HopsError, match="HOPS_BENCH_SETTINGS: 'gavel'"):
        bench.rows({"HOPS_BENCH_SETTINGS": "gavel"})


def test_the_frontier_keeps_only_the_rows_no_other_beats_on_both() -> None:
    points = {"a": (1.5, 0.75), "b": (1.0, 0.80), "c": (1.2, 0.82), "d": (0.9, 0.90), "e": (1.5, 0.76),
              "f": (1.0, 0.80)}
    # c is beaten by b on both; e by a; f ties b exactly, so neither beats the other
    assert bench.frontier(points) == ["d", "b", "f", "a"]
    assert bench.frontier({}) == []


@pytest.fixture(scope="module")
def runs():
    return compare(load_cluster(SMALL[0]), SMALL[1], ["hops", "hops:move_toll=1,requeue_toll=0.5", "sia-lr"], [0, 1],
                   None, progress=False)


def test_the_worst_seed_is_the_highest_value_and_a_missing_run_gives_none(runs) -> None:
    base = {r.seed: r for r in runs if r.policy == "sia-lr"}
    jct = [r.metrics.avg_jct / base[r.seed].metrics.avg_jct for r in runs if r.policy == "hops"]
    assert bench.worst("hops", targets.TARGETS[0], runs, [0, 1]) == max(jct)
    assert bench.worst("hops", targets.TARGETS[0], runs, [0, 1, 2]) is None
    assert bench.worst("hops:x=1", targets.TARGETS[0], runs, [0, 1]) is None
    lines = bench.frontier_section([("defaults", "hops"), ("tolls", "hops:move_toll=1,requeue_toll=0.5")], runs,
                                   [0, 1])
    text = "\n".join(lines)
    assert "## The frontier" in text
    assert "| defaults (`hops`) | " in text or "| tolls (`hops:move_toll=1,requeue_toll=0.5`) | " in text
    assert ("Least avg JCT with <= 1.0 preemptions" in text) or ("No row has <= 1.0 preemptions" in text)


def test_the_bench_writes_its_table_under_its_header(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(targets, "CLUSTER", SMALL[0])
    monkeypatch.setattr(targets, "WORKLOAD", SMALL[1])
    monkeypatch.setenv("HOPS_BENCH_SEEDS", "0")
    monkeypatch.setenv("HOPS_BENCH_SETTINGS", "hops;hops:move_toll=1,requeue_toll=0.5")
    text = bench.run(tmp_path).read_text()
    head = parse(text.splitlines()[0])
    assert head is not None and head.generator == "hops_slurm.tools.bench.table4_frontier:run"
    assert "HOPS_BENCH_SEEDS=0" in head.command and "| hops | `hops` | " in text
    assert "sia-lr, the ratios' base: avg JCT " in text and "## The frontier" in text
    assert "### Where the preemptions come from" in text and "Failed runs" not in text
