"""``bench table4-targets``: its variables (one-line errors), each cell's values and misses against the
target, the count of targets met, and a whole run of the bench (both paths) on a small cluster and workload."""

from __future__ import annotations

import pytest

from hops_slurm.errors import HopsError
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.runner import compare
from hops_slurm.tools.bench import table4_targets as bench
from hops_slurm.tools.results_header import parse

SMALL = ("paper-64", "paper:jobs=12")


def test_the_variables_are_read_and_bad_values_name_the_variable() -> None:
    assert bench.seeds({}) == [0, 1] and bench.seeds({"HOPS_BENCH_SEEDS": "3, 4"}) == [3, 4]
    with pytest.raises(HopsError, match="HOPS_BENCH_SEEDS"):
        bench.seeds({"HOPS_BENCH_SEEDS": "0;rm -rf"})
    assert bench.settings({}) == list(bench.SETTINGS) and bench.SETTINGS[0] == ("today's defaults", "hops")
    got = bench.settings({"HOPS_BENCH_SETTINGS": "hops; hops:preempt_penalty=0.5;"})
    assert got == [("hops", "hops"), ("hops:preempt_penalty=0.5", "hops:preempt_penalty=0.5")]
    with pytest.raises(HopsError, match="HOPS_BENCH_SETTINGS: 'sia-lr'"):
        bench.settings({"HOPS_BENCH_SETTINGS": "hops;sia-lr"})
    rows = [("a", "hops"), ("b", "hops:move_toll=1")]
    assert bench.engine_rows({}, rows) == rows[:1] and bench.engine_rows({"HOPS_BENCH_ENGINE": "all"}, rows) == rows
    assert bench.engine_rows({}, bench.SETTINGS) == list(bench.NOISE)
    assert bench.engine_rows({"HOPS_BENCH_ENGINE": "first"}, bench.SETTINGS) == list(bench.NOISE[:1])
    assert bench.engine_rows({"HOPS_BENCH_ENGINE": "none"}, rows) == []
    with pytest.raises(HopsError, match="HOPS_BENCH_ENGINE: 'some'"):
        bench.engine_rows({"HOPS_BENCH_ENGINE": "some"}, rows)


@pytest.fixture(scope="module")
def runs():
    return compare(load_cluster(SMALL[0]), SMALL[1], ["hops", "hops:preempt_penalty=0.5", "sia-lr"], [0], None,
                   progress=False)


def test_each_cell_gives_the_seeds_values_and_marks_a_miss(runs) -> None:
    hops = next(r for r in runs if r.policy == "hops")
    base = {0: next(r for r in runs if r.policy == "sia-lr")}
    jct = bench.TARGETS[0]
    ratio = hops.metrics.avg_jct / base[0].metrics.avg_jct
    text, met = bench.cell(jct, [hops], base)
    assert text.startswith(f"{ratio:.3f}") and met == (ratio <= 0.75) and text.endswith("✗") == (not met)
    strict = bench.Target("x", lambda r, b: 1.0, 0.5, 1)
    assert bench.cell(strict, [hops, hops], base) == ("1.0 ✗ / 1.0 ✗", False)
    just_over = bench.Target("x", lambda r, b: 0.75031, 0.75, 3)  # 0.750 would read as met
    assert bench.cell(just_over, [hops], base) == ("0.75031 ✗", False)
    lines = bench.table([("defaults", "hops"), ("priced", "hops:preempt_penalty=0.5"), ("gone", "hops:x=1")], runs, [0])
    assert len(lines) == 5 and lines[2].startswith("| defaults | `hops` | " + text + " | ")
    counted = sum(bench.cell(t, [hops], base)[1] for t in bench.TARGETS)
    assert lines[2].endswith(f" | {counted} of 5 |") and lines[4].endswith("failed | – |")


def test_the_bench_writes_its_table_under_its_header(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(bench, "CLUSTER", SMALL[0])
    monkeypatch.setattr(bench, "WORKLOAD", SMALL[1])
    monkeypatch.setenv("HOPS_BENCH_SEEDS", "0")
    monkeypatch.setenv("HOPS_BENCH_SETTINGS", "hops")
    path = bench.run(tmp_path)
    text = path.read_text()
    head = parse(text.splitlines()[0])
    assert head is not None and head.generator == "hops_slurm.tools.bench.table4_targets:run"
    assert "HOPS_BENCH_SEEDS=0" in head.command and "| hops | `hops` | " in text
    assert "sia-lr, the ratios' base: avg JCT " in text and "Most targets met on every seed: `hops`" in text
    fast, engine = text.split("## The engine path")
    assert "| hops | `hops` | " in engine and "--engine" in engine and "sia-lr, the ratios' base: avg JCT " in engine
    assert "Failed runs" not in text


def test_each_ablation_row_changes_the_rule_it_names_and_nothing_else() -> None:
    """Every row is a valid Hops policy; a rules-off row sets a rule that is on by default to off, a rules-on
    row one that is off by default to on; the noise rows change only ``wait_offset``; no row is repeated."""
    from planner.params import PlannerParams
    from planner.policies import make_policy

    defaults = PlannerParams()
    names = [n for _, n in bench.SETTINGS]
    assert len(set(names)) == len(names) and len(names) <= 50
    for group, changed in ((bench.RULES_OFF, "off"), (bench.RULES_ON, "on"), (bench.NOISE[1:], "noise")):
        for _, name in group:
            params = make_policy(name).params
            diff = {k for k in vars(defaults) if getattr(params, k) != getattr(defaults, k)}
            assert diff, name
            if changed == "noise":
                assert diff == {"wait_offset"}
            elif len(diff) == 1:
                key = diff.pop()
                before, after = getattr(defaults, key), getattr(params, key)
                off = {"min_run_growth": 1.0}.get(key, 0)  # the value that turns the rule off
                assert (before != off) == (changed == "off") and (after != off) == (changed == "on"), name


def test_the_noise_band_spans_the_noise_rows(runs) -> None:
    rows = (("defaults", "hops"), ("priced", "hops:preempt_penalty=0.5"))
    text = bench.band(rows, runs, [0])[0]
    base = next(r for r in runs if r.policy == "sia-lr")
    ratios = sorted(r.metrics.avg_jct / base.metrics.avg_jct for r in runs if r.policy != "sia-lr")
    assert f"avg JCT x sia-lr's {ratios[0]:.3f}-{ratios[-1]:.3f};" in text
    assert bench.band((("gone", "hops:x=1"),), runs, [0]) == []
