"""Spans per speed bucket and column generation (planner.configs, planner.columns, planner.ilp):
the fast model against today's full one on small instances with every node its own speed."""

from __future__ import annotations

import random

import pytest

from hops_slurm.tools.bench.solver_speeds import instance  # the bench's instances: every node its own speed
from planner.columns import first_columns, price_columns
from planner.configs import SpanIndex, bucketed_spans, class_speeds, distributed_configs
from planner.hops import HopsPolicy, candidates_for
from planner.ilp import solve_compact
from planner.entities import entity_classes
from planner.params import PlannerParams
from planner.priorities import weights
from planner.views import ClusterView, JobView, NodeView


def todays_value(cluster: ClusterView, jobs: tuple[JobView, ...], plan_every, assignments) -> float:
    """Eq. 11 of ``assignments`` with today's gains (every span; each job's smallest candidate throughput)."""
    by = {j.job_id: j for j in jobs}
    d = plan_every.diagnostics
    planned = [by[j] for j in d["window"]]
    ent = entity_classes(cluster, planned, PlannerParams().entity_tolerance)
    low: dict[str, float] = {}
    for c in candidates_for(planned, ent, 1.4, compact=True, spans="every"):
        low[c.job_id] = min(low.get(c.job_id, float("inf")), float(by[c.job_id].throughput(c.config)))
    w = weights({j.job_id: d["priorities"][j.job_id] for j in planned}, 1.0)
    return sum(w[j] * float(by[j].throughput(c)) / low[j] for j, c in assignments.items() if c)


@pytest.mark.parametrize("seed", [1, 2])
def test_bucketed_model_within_gap_of_every_span_model(seed: int) -> None:
    # 2048 GPUs: more nodes per GPU type than 3 x its speed buckets, so spans per bucket apply
    cluster, jobs = instance(2048, 150, seed)
    gap = PlannerParams().gap
    every = HopsPolicy(PlannerParams(spans="every", gap=gap)).plan(cluster, jobs, now=0.0)
    fast = HopsPolicy(PlannerParams(gap=gap)).plan(cluster, jobs, now=0.0)
    assert fast.diagnostics["fallback"] is None and every.diagnostics["fallback"] is None
    assert int(fast.diagnostics["candidates"]) < int(every.diagnostics["candidates"])  # fewer spans
    old = todays_value(cluster, jobs, every, every.placed())
    new = todays_value(cluster, jobs, every, fast.placed())
    # both stop within `gap` of their bounds; entity classes bound speeds within entity_tolerance
    assert new >= old * (1 - gap) / (1 + PlannerParams().entity_tolerance)


def test_small_clusters_keep_the_papers_spans() -> None:
    """Where a GPU type has no more nodes with free GPUs than 3 x its buckets, the candidates are today's."""
    cluster, jobs = instance(64, 80, 3)
    ent = entity_classes(cluster, jobs, 0.05)
    every = candidates_for(jobs, ent, 1.4, compact=True, spans="every")
    bucketed = candidates_for(jobs, ent, 1.4, compact=True, spans="bucketed")
    assert [(c.job_id, dict(c.config), c.gain) for c in every] == [(c.job_id, dict(c.config), c.gain) for c in bucketed]


def test_solve_compact_columns_zero_and_default_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """With gap 0 the model that prices columns in and the one holding every column from the start reach
    the same optimum (columns change the route, not the answer)."""
    import planner.compact
    monkeypatch.setattr(planner.compact, "MIN_SIGNATURES", 0)  # price columns in on this small model too
    cluster, jobs = instance(64, 60, 6)
    ent = entity_classes(cluster, jobs[:30], 0.05)
    cands = candidates_for(jobs[:30], ent, 1.4, compact=True, spans="bucketed")
    w = {j.job_id: 1.0 + k / 10 for k, j in enumerate(jobs[:30])}
    a = solve_compact(cands, w, ent.nodes, gap=0.0, columns=0)
    b = solve_compact(cands, w, ent.nodes, gap=0.0)
    assert a.status == b.status == "optimal"
    assert b.objective == pytest.approx(a.objective, rel=1e-6)
    assert int(b.extra["columns"]) < int(a.extra["columns"])  # fewer columns reached the same optimum


def node(name: str, free: int, cls: str) -> NodeView:
    return NodeView(name, "v100", cls, 8, free)


def test_bucketed_spans_one_per_slowest_class_and_variant() -> None:
    nodes = (node("a0", 8, "fast"), node("a1", 3, "fast"), node("b0", 8, "slow"), node("b1", 2, "slow"),
             node("b2", 5, "slow"))
    index = SpanIndex(ClusterView(nodes))
    speed = {"fast": 2.0, "slow": 1.0}
    got = {tuple(sorted(c.items())) for c in bucketed_spans(index, "v100", 12, speed)}
    # slowest = slow: slow nodes first, most free first: b0 8 + b2 4; fragments only (< 12 free each,
    # all nodes here): the same; smallest first: b1 2 + b2 5 + b0 5. Slowest = fast: a0 8 + a1 3 = 11 < 12
    assert got == {(("b0", 8), ("b2", 4)), (("b0", 5), ("b1", 2), ("b2", 5))}
    # the number of spans does not grow with the nodes of a class
    many = tuple(node(f"n{i:03d}", 1 + i % 7, "slow") for i in range(200))
    assert len(bucketed_spans(SpanIndex(ClusterView(many)), "v100", 12, {"slow": 1.0})) <= 3
    assert len(distributed_configs(many, 12)) > 100


def test_class_speeds_orders_by_the_jobs_estimate() -> None:
    nodes = (node("a0", 8, "fast"), node("b0", 8, "slow"))
    job = JobView("j", (2,), 0.0, 0.0, 1.0, 1.0, throughput=lambda c: 3.0 if "a0" in c else 1.0)
    assert class_speeds(job, SpanIndex(ClusterView(nodes)), "v100") == {"fast": 3.0, "slow": 1.0}


def test_small_models_hold_every_column() -> None:
    cluster, jobs = instance(64, 60, 6)
    ent = entity_classes(cluster, jobs[:30], 0.05)
    cands = candidates_for(jobs[:30], ent, 1.4, compact=True, spans="bucketed")
    sol = solve_compact(cands, {j.job_id: 1.0 for j in jobs[:30]}, ent.nodes)
    assert sol.extra["columns"] == sol.extra["signatures"]


def test_pricing_picks_positive_reduced_costs_per_job() -> None:
    keys = [("j", 1), ("j", 2), ("j", 3), ("k", 1)]
    gain = {("j", 1): 5.0, ("j", 2): 4.0, ("j", 3): 1.0, ("k", 1): 2.0}
    assert first_columns(keys, gain, 1, {}, []) == [("j", 1), ("k", 1)]
    assert set(first_columns(keys, gain, 1, {"j": {}}, [])) == {("j", 1), ("j", 2), ("j", 3), ("k", 1)}
    rows = {("j", 1): {"j": 1.0}, ("j", 2): {"j": 1.0, "r": 1.0}, ("j", 3): {"j": 1.0, "r": 1.0},
            ("k", 1): {"k": 1.0, "none": 1.0}}
    # j's row dual 2: ("j", 2) costs 2 + 1 = 3 < 4 enters; ("j", 3) costs 3 > 1 stays out; ("k", 1) uses a
    # row with no room anywhere (no dual): never enters
    assert price_columns(keys, {("j", 1)}, rows, gain, {"j": 2.0, "r": 1.0, "k": 0.0}, 6) == [("j", 2)]


def test_a_pricer_over_shared_templates_prices_as_the_per_column_one() -> None:
    """Columns sharing their eq. 13 rows (a template) priced per template: the same reduced costs bit for
    bit and the same columns entering, whatever the duals (rows without a dual never enter)."""
    import numpy as np

    from planner.columns import Pricer

    rng = random.Random(5)
    rows = [("r", i) for i in range(12)]
    templates = [{r: float(rng.randint(1, 3)) for r in rng.sample(rows, rng.randint(1, 5))} for _ in range(9)]
    keys = [(f"j{j}", s) for j in range(30) for s in range(rng.randint(1, 6))]
    template_of = [rng.randrange(len(templates)) for _ in keys]
    touch = {k: {k[0]: 1.0, **templates[t]} for k, t in zip(keys, template_of, strict=True)}
    gain = {k: rng.uniform(0.5, 4.0) for k in keys}
    every, shared = Pricer(keys, touch, gain), Pricer.shared(keys, templates, template_of, gain)
    for k in keys[::4]:
        every.add(k)
        shared.add(k)
    for _ in range(20):
        duals: dict[object, float] = {r: rng.choice((0.0, rng.uniform(0.0, 2.0), 1e-12))
                                      for r in [*rows, *{k[0] for k in keys}] if rng.random() < 0.95}
        costs = []
        for pricer in (every, shared):
            pi = np.full(len(pricer.row_ids), np.inf)
            for row, i in pricer.row_ids.items():
                pi[i] = duals.get(row, 0.0 if row == ("pricer padding",) else np.inf)
            costs.append(pricer._costs(pi))
        assert np.array_equal(costs[0], costs[1])
        assert every.enter(duals, 2) == shared.enter(duals, 2)


def test_positions_name_the_same_columns_as_keys() -> None:
    """The compact solve works on positions (first_positions, Pricer.enter_at/add_at): they name exactly the
    columns first_columns and Pricer.enter name, and a column added by position is not priced in again."""
    from planner.columns import Pricer, first_positions

    rng = random.Random(9)
    keys = [(f"j{j}", s) for j in range(20) for s in range(rng.randint(1, 7))]
    gains = [rng.choice((1.0, 2.0, rng.uniform(0.5, 3.0))) for _ in keys]
    templates = [{("r", r): 1.0} for r in range(6)]
    template_of = [rng.randrange(6) for _ in keys]
    at = first_positions(keys, gains, 2, {"j3": {}}, [keys[-1]])
    assert [keys[i] for i in at] == first_columns(keys, gains, 2, {"j3": {}}, [keys[-1]]) and at == sorted(at)
    by_key, by_position = (Pricer.shared(keys, templates, template_of, gains) for _ in range(2))
    for i in at:
        by_key.add(keys[i])
    by_position.add_at(at)
    duals: dict[object, float] = {("r", r): rng.uniform(0.0, 1.0) for r in range(6)}
    duals.update({k[0]: 0.1 for k in keys})
    entering = by_position.enter_at(duals, 2)
    assert entering and [keys[i] for i in entering] == by_key.enter(duals, 2)
    by_position.add_at(entering)
    assert not set(by_position.enter_at(duals, 2)) & set(entering)
