"""Configuration generation: aggregated, consecutive distributed, sensitivity rule, O(N_type)."""

from __future__ import annotations

from planner.configs import distributed_configs, generate_configs
from planner.views import ClusterView, JobView, NodeView


def node(name: str, free: int, total: int = 8, gpu_type: str = "v100", cls: str = "v100-a") -> NodeView:
    return NodeView(name, gpu_type, cls, total, free)


def job(reqs: tuple[int, ...], sens: float, current=None) -> JobView:
    return JobView(job_id="j", requirements=reqs, submit_time=0.0, wait=0.0, age=1.0, sensitivity=sens,
                   throughput=lambda c: 1.0, current=current)


def as_set(configs) -> set[tuple[tuple[str, int], ...]]:
    return {tuple(sorted(c.items())) for c in configs}


def test_aggregated_uses_r_le_free() -> None:
    cluster = ClusterView((node("n0", 2), node("n1", 4), node("n2", 1)))
    got = as_set(generate_configs(job((2, 4), sens=2.0), cluster, sigma=1.4))
    assert got == {(("n0", 2),), (("n1", 2),), (("n1", 4),)}


def test_distributed_fills_consecutive_nodes_hand_example() -> None:
    nodes = (node("n0", 3), node("n1", 0), node("n2", 2), node("n3", 4), node("n4", 1))
    # R = 5 over the nodes with free GPUs n0(3) n2(2) n3(4) n4(1):
    #   from n0: 3 + 2 -> {n0:3, n2:2}; from n2: 2 + 3 of 4 -> {n2:2, n3:3}; from n3: 4 + 1 -> {n3:4, n4:1};
    #   from n4: 1 < 5, nothing more
    got = as_set(distributed_configs(nodes, 5))
    assert got == {(("n0", 3), ("n2", 2)), (("n2", 2), ("n3", 3)), (("n3", 4), ("n4", 1))}
    # a start whose node alone holds R is the aggregated config, not a distributed one
    assert as_set(distributed_configs(nodes, 4)) == {(("n0", 3), ("n2", 1)), (("n2", 2), ("n3", 2))}


def test_low_sensitivity_gets_distributed_high_only_aggregated() -> None:
    cluster = ClusterView((node("n0", 3), node("n1", 3)))
    low = as_set(generate_configs(job((2, 4), sens=1.2), cluster, sigma=1.4))
    high = as_set(generate_configs(job((2, 4), sens=1.8), cluster, sigma=1.4))
    assert (("n0", 3), ("n1", 1)) in low
    assert high == {(("n0", 2),), (("n1", 2),)}


def test_high_sensitivity_spans_when_it_must() -> None:
    cluster = ClusterView((node("n0", 8), node("n1", 8), node("n2", 8)))
    high = as_set(generate_configs(job((16,), sens=3.0), cluster, sigma=1.4))
    assert high == {(("n0", 8), ("n1", 8)), (("n1", 8), ("n2", 8))}


def test_configs_stay_within_one_type() -> None:
    cluster = ClusterView((node("a0", 4, gpu_type="k80", cls="k80"), node("b0", 4), node("b1", 4)))
    got = as_set(generate_configs(job((6,), sens=1.0), cluster, sigma=1.4))
    assert got == {(("b0", 4), ("b1", 2))}


def test_distributed_count_is_linear_in_nodes() -> None:
    nodes = tuple(node(f"n{i:03d}", 1 + i % 7) for i in range(200))
    assert len(distributed_configs(nodes, 12)) <= len(nodes)


def test_current_config_is_a_candidate_and_one_per_class_option() -> None:
    cluster = ClusterView((node("n0", 4), node("n1", 4), node("n2", 4, cls="v100-b")))
    cur = {"n0": 1, "n1": 1}  # not consecutive-filled, but where the job runs now
    got = as_set(generate_configs(job((2,), sens=1.0, current=cur), cluster, sigma=1.4))
    assert (("n0", 1), ("n1", 1)) in got
    one = as_set(generate_configs(job((2,), sens=2.0), cluster, sigma=1.4, one_per_class=True))
    assert one == {(("n0", 2),), (("n2", 2),)}


def spans_by_comparison(index, gpu_type: str, requirement: int, speed) -> list:
    """Spans per speed bucket as the module docstring states them, class against class (O(C^2) per call):
    the reference the bisected walk of ``bucketed_spans`` must reproduce, configs and order."""
    of_type, free = index.classes[gpu_type], index.free[gpu_type]
    by_speed = sorted(of_type, key=lambda c: (speed[c], c))
    out: dict = {}
    for slowest in by_speed:
        eligible = [slowest] + [c for c in by_speed if c != slowest and speed[c] >= speed[slowest]]
        if sum(free[c] for c in eligible) < requirement:
            continue
        for fragments in (0, 1, 2):
            placed: dict[str, int] = {}
            left = requirement
            for c in eligible:
                nodes = of_type[c] if not fragments else index.fragments(gpu_type, c, requirement)
                for n in (nodes if fragments < 2 else reversed(nodes)):
                    placed[n.name] = min(n.free_gpus, left)
                    left -= placed[n.name]
                    if not left:
                        break
                if not left:
                    break
            if not left and len(placed) > 1:
                out.setdefault(tuple(sorted(placed.items())), placed)
    return [tuple(sorted(p.items())) for p in out.values()]


def test_bucketed_spans_match_the_class_by_class_reading() -> None:
    """Many classes, tied speeds, fragments in some classes only, a class whose nodes alone fall short: the
    same spans in the same order as comparing every class with every other."""
    import math
    import random

    from planner.configs import SpanIndex, bucketed_spans

    rng = random.Random(3)
    for trial in range(40):
        classes = [f"c{k}" for k in range(rng.randint(1, 30))]
        nodes = tuple(node(f"n{i:03d}", rng.choice((1, 2, 3, 5, 8, 8, 8)), cls=rng.choice(classes))
                      for i in range(rng.randint(1, 120)))
        index = SpanIndex(ClusterView(nodes))
        speed = {c: rng.choice((0.5, 1.0, 1.0, 1.5)) if trial % 2 else rng.uniform(0.5, 1.5) for c in classes}
        for requirement in (2, 3, 4, 8, 12, 16, 40):
            want = spans_by_comparison(index, "v100", requirement, speed)
            assert [tuple(c.items()) for c in bucketed_spans(index, "v100", requirement, speed)] == want
        speed[classes[0]] = math.nan  # an estimate that is not a number: compared as before, no crash
        for requirement in (2, 12):
            want = spans_by_comparison(index, "v100", requirement, speed)
            assert [tuple(c.items()) for c in bucketed_spans(index, "v100", requirement, speed)] == want


def test_single_node_configs_are_made_once_per_view() -> None:
    """The verdicts' lazy walk and the candidates read the same single-node configs of a view (made once
    per GPU type and requirement, not once per job)."""
    from planner.configs import iter_configs

    cluster = ClusterView((node("n0", 8), node("n1", 4, cls="v100-b"), node("n2", 2)))
    first = list(iter_configs(job((2,), sens=2.0), cluster, sigma=1.4))
    again = list(iter_configs(job((2,), sens=1.0), cluster, sigma=1.4))
    made = generate_configs(job((2,), sens=2.0), cluster, sigma=1.4, one_per_class=True)
    assert as_set(first) == {(("n0", 2),), (("n1", 2),)}
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert all(a is b for a, b in zip(first, made, strict=True))


def test_span_index_shares_the_spans_of_jobs_whose_classes_order_alike() -> None:
    """Two jobs whose speeds differ but order the classes alike (ties included) get the very same span
    objects, equal to each job's own walk; another order, or a speed that is not a number, gets its own."""
    import math

    from planner.configs import SpanIndex, bucketed_spans

    nodes = tuple(node(f"n{i}", (8, 3, 5, 2)[i % 4], cls=f"c{i % 3}") for i in range(12))
    index = SpanIndex(ClusterView(nodes))
    slow, fast = {"c0": 1.0, "c1": 2.0, "c2": 2.0}, {"c0": 0.5, "c1": 0.9, "c2": 0.9}
    a, b = index.spans("v100", (4, 12), slow), index.spans("v100", (4, 12), fast)
    assert all(x is y for x, y in zip(a, b, strict=True))
    for got, r in zip(a, (4, 12), strict=True):
        assert list(got.values()) == bucketed_spans(index, "v100", r, slow) == bucketed_spans(index, "v100", r, fast)
    untied = {"c0": 1.0, "c1": 2.0, "c2": 2.5}  # the same order without the tie: its own spans
    assert index.spans("v100", (12,), untied)[0] is not a[1]
    assert list(index.spans("v100", (12,), untied)[0].values()) == bucketed_spans(index, "v100", 12, untied)
    odd = {"c0": math.nan, "c1": 2.0, "c2": 2.0}
    assert index.spans("v100", (12,), odd)[0] is not index.spans("v100", (12,), odd)[0]
