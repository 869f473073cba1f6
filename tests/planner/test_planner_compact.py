"""The compact solve as named steps (planner/compact.py) and the node packer's early refusal
(planner/signatures.py: Packer): the steps a caller's timer sees, and that refusing early places
exactly what scanning every node places."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

from hops_slurm.tools.bench.solver_instances import make_cluster, make_jobs
from planner.compact import STEPS, CompactSolve
from planner.entities import entity_classes
from planner.hops import candidates_for
from planner.ilp import solve_compact
from planner.signatures import Packer, Signature, signature
from planner.views import Config, NodeView, freeze_config


class Recorder:
    """A stage timer that writes down the names it is asked to time, in order, and checks nesting."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.open = 0

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        assert self.open == 0  # steps do not nest
        self.names.append(name)
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1


def _instance(seed: int, gpus: int = 128, n_jobs: int = 40):  # noqa: ANN202
    rng = random.Random(seed)
    cluster = make_cluster(gpus, rng)
    jobs = make_jobs(cluster, n_jobs, rng)
    ent = entity_classes(cluster, jobs, 0.05)
    cands = candidates_for(jobs, ent, 1.4, compact=True, spans="bucketed")
    w = {j.job_id: 1.0 + k / 7 for k, j in enumerate(jobs)}
    return ent.nodes, cands, w


def test_a_timer_sees_the_named_steps_in_order_and_changes_no_plan() -> None:
    for seed in range(4):
        nodes, cands, w = _instance(seed)
        timer = Recorder()
        timed = solve_compact(cands, w, nodes, timer=timer)
        plain = solve_compact(cands, w, nodes)
        assert timer.names[:2] == ["build", "solve"]
        assert timer.names == [s for s in STEPS if s in timer.names]  # each at most once, in STEPS order
        assert ("round" in timer.names) or ("branch" in timer.names)
        assert timed.assignments == plain.assignments and timed.objective == plain.objective


def test_without_lp_rounding_the_solve_goes_from_build_to_branch() -> None:
    nodes, cands, w = _instance(1)
    timer = Recorder()
    sol = CompactSolve(cands, w, nodes, lp_rounding=False, timer=timer).run()
    assert timer.names == ["build", "branch"]
    assert sol.extra["method"] == "mip"


def test_no_candidate_is_built_and_nothing_else() -> None:
    timer = Recorder()
    sol = solve_compact([], {}, [NodeView("a", "v100", "c", 8, 8)], timer=timer)
    assert timer.names == ["build"] and sol.status == "optimal" and sol.assignments == {}


def _scan_place(left: dict[str, int], nodes: list[NodeView], sig: Signature) -> Config | None:
    """Best fit over every node of each piece's kind, written out without any shortcut."""
    placed: dict[str, int] = {}
    for key, g in sorted(sig, key=lambda p: -p[1]):
        kinds = [n.name for n in nodes if n.free_gpus > 0 and (n.gpu_type, n.server_class) == key[:2]
                 and (key[2] == 0 or n.free_gpus == key[2])]
        fits = [n for n in kinds if left[n] >= g and n not in placed]
        if key[2] and g == key[2]:
            fits = [n for n in fits if left[n] == key[2]]
        if not fits:
            for n, used in placed.items():
                left[n] += used
            return None
        n = min(fits, key=lambda name: left[name])
        placed[n] = g
        left[n] -= g
    return freeze_config(placed)


def test_a_packer_that_refuses_early_places_what_a_full_scan_places() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        nodes = [NodeView(f"n{i:02d}", "v100", rng.choice(("a", "b")), 8, rng.choice((0, 2, 5, 8, 8)))
                 for i in range(12)]
        by_name = {n.name: n for n in nodes}
        packer = Packer(nodes)
        left = {n.name: n.free_gpus for n in nodes}
        for _ in range(40):
            some = rng.sample([n for n in nodes if n.free_gpus], k=min(rng.randint(1, 3), sum(1 for n in nodes
                                                                                         if n.free_gpus)))
            cfg = {n.name: rng.randint(1, n.free_gpus) for n in some}
            sig = signature(freeze_config(cfg), by_name)
            assert packer.place(sig) == _scan_place(left, nodes, sig)
            assert packer.left == left


def test_the_collector_is_back_on_after_a_solve_and_stays_off_when_it_was_off() -> None:
    import gc

    nodes, cands, w = _instance(2)
    assert gc.isenabled()
    solve_compact(cands, w, nodes)
    assert gc.isenabled()
    gc.disable()
    try:
        solve_compact(cands, w, nodes)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_candidate_repeated_with_a_higher_gain_is_its_columns_best() -> None:
    """Candidates that carry their signatures, one (job, signature) twice: the column takes the higher gain, at
    the place of its first candidate, as when the candidates carry none."""
    from hops_slurm.tools.bench.solver_speeds import instance
    from planner.candidates import candidates_for
    from planner.compact import CompactSolve
    from planner.entities import entity_classes
    from planner.signatures import Candidate

    cluster, jobs = instance(256, 30, 2)
    ent = entity_classes(cluster, jobs, 0.05)
    cands = candidates_for(jobs, ent, 1.4, compact=True, spans="bucketed")
    twice = cands + [Candidate(cands[3].job_id, cands[3].config, cands[3].gain * 2, cands[3].sig, cands[3].on)]
    w = {j.job_id: 1.0 for j in jobs}
    carried, bare = (CompactSolve(cs, w, ent.nodes) for cs in (twice, [Candidate(c.job_id, c.config, c.gain) for c in twice]))
    assert carried.build() and bare.build()
    assert carried.keys == bare.keys and len(carried.keys) == len(cands)
    assert carried.best[carried.keys[3]].gain == cands[3].gain * 2 == bare.best[bare.keys[3]].gain
    assert carried.gains == bare.gains


def test_auto_keeps_cbc_below_its_size_and_highs_prices_at_cbcs_lp_bound() -> None:
    """solver "auto": CBC (the very plan) for every model but a priced one of HIGHS_FROM columns or more,
    which is HiGHS's; HiGHS (columns in batches, planner.lp_columns) prices a model to CBC's LP optimum."""
    from hops_slurm.tools.bench.solver_instances import node_speeds
    from planner.columns import MIN_SIGNATURES
    from planner.solution import HIGHS_FROM, pick_solver

    assert pick_solver("auto", True, HIGHS_FROM) == "HiGHS"
    assert pick_solver("auto", True, HIGHS_FROM - 1) == pick_solver("auto", False, 10 * HIGHS_FROM) == "CBC"
    assert pick_solver("CBC", True, 10 * HIGHS_FROM) == "CBC" and pick_solver("HiGHS", False) == "HiGHS"
    nodes, cands, w = _instance(0)
    small, cbc = solve_compact(cands, w, nodes, solver="auto"), solve_compact(cands, w, nodes, solver="CBC")
    assert small.solver == "CBC" and "pricing_rounds" not in small.extra
    assert small.assignments == cbc.assignments and small.objective == cbc.objective
    rng = random.Random(5)
    cluster = make_cluster(512, rng)
    jobs = make_jobs(cluster, 300, rng, node_speeds(cluster, 6))
    ent = entity_classes(cluster, jobs, 0.05)
    cands = candidates_for(jobs, ent, 1.4, compact=True, spans="bucketed")
    w = {j.job_id: 1.0 + k / 7 for k, j in enumerate(jobs)}
    auto = solve_compact(cands, w, ent.nodes, solver="auto")
    big, cbc = solve_compact(cands, w, ent.nodes, solver="HiGHS"), solve_compact(cands, w, ent.nodes, solver="CBC")
    assert auto.solver == "CBC" and auto.assignments == cbc.assignments  # (fewer columns than HIGHS_FROM)
    assert big.extra["signatures"] >= MIN_SIGNATURES and big.extra["pricing_rounds"] >= 1  # type: ignore[operator]
    assert big.solver == "HiGHS" and big.status == "optimal"
    lp, lp_cbc = float(big.extra["lp_bound"]), float(cbc.extra["lp_bound"])  # type: ignore[arg-type]
    assert abs(lp - lp_cbc) <= 1e-7 * abs(lp_cbc)
    assert big.objective is not None and big.objective >= (1 - 0.01) * lp  # within the gap of the LP bound
