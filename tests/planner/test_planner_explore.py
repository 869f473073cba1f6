"""Exploration with a bounded cost (planner.explore): a pessimistic estimate is corrected on an idle cluster."""

from __future__ import annotations

from planner.explore import explore_idle
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView, freeze_config

CLUSTER = ClusterView((NodeView("k0", "k80", "k80", 4, 4), NodeView("p0", "p100", "p100", 4, 4),
                       NodeView("v0", "v100", "v100", 4, 4)))
TYPE = {"k0": "k80", "p0": "p100", "v0": "v100"}
#: the job's true samples/s on 2 GPUs of one node, its model-only estimate, its single-GPU rate
TRUTH = {"k80": 161.9, "p100": 384.6, "v100": 928.6}
MODEL = {"k80": 49.9, "p100": 152.5, "v100": 69.2}  # issue 22's: pessimistic everywhere, worst on v100
SINGLE = {"k80": 90.0, "p100": 210.0, "v100": 480.0}


class Knowledge:
    """What a store would know: the configs the job has run on are measured (truth), the others model-only."""

    def __init__(self) -> None:
        self.measured: set[str] = set()

    def throughput(self, cfg: Config) -> float:
        (t,) = {TYPE[n] for n in cfg}
        if sum(cfg.values()) != 2 or len(cfg) != 1:
            return 0.0
        return TRUTH[t] if t in self.measured else MODEL[t]

    def explore(self, cfg: Config) -> float:
        (t,) = {TYPE[n] for n in cfg}
        return 0.0 if t in self.measured or sum(cfg.values()) != 2 else SINGLE[t] * 2


def view(k: Knowledge, current: Config | None, placed_for: float) -> JobView:
    return JobView("j", (2,), 0.0, 0.0, 3600.0 * 100, 1.0, k.throughput, total_samples=1.0e8, done_samples=1.0e6,
                   current=current, placed_for=placed_for, restart_cost=60.0, explore=k.explore)


def run(params: PlannerParams, rounds: int) -> list[str]:
    """Rounds on an idle cluster: the job starts on k80 (measured there), each round the plan is
    enacted and the config it runs on becomes measured. Returns its GPU type after each round."""
    k = Knowledge()
    k.measured.add("k80")
    policy = HopsPolicy(params)
    current: Config | None = freeze_config({"k0": 2})
    placed_for = 3600.0
    types = []
    for r in range(rounds):
        plan = policy.plan(CLUSTER, (view(k, current, placed_for),), 360.0 * (r + 1))
        cfg = plan.assignments["j"]
        assert cfg is not None
        if current is None or dict(cfg) != dict(current):
            current, placed_for = freeze_config(cfg), 0.0
        placed_for += 3600.0  # past the minimum run time by the next round
        (t,) = {TYPE[n] for n in cfg}
        k.measured.add(t)  # its first runtime record there
        types.append(t)
    return types


def test_a_pessimistic_estimate_is_corrected_within_a_bounded_number_of_rounds_on_an_idle_cluster() -> None:
    types = run(PlannerParams(), 4)
    # the highest optimistic bound first (v100): measured there at 928.6 it stays; at most one round
    # per config signature of the model (three types here)
    assert "v100" in types[:3]
    assert types[-1] == "v100" and types[types.index("v100"):] == ["v100"] * (len(types) - types.index("v100"))


def test_without_exploration_the_job_stays_locked_on_the_slow_type() -> None:
    assert run(PlannerParams(explore=False), 4) == ["k80"] * 4


def test_exploration_uses_only_gpus_the_plan_leaves_idle_and_keeps_the_gpu_count() -> None:
    k = Knowledge()
    k.measured.add("k80")
    j = view(k, freeze_config({"k0": 2}), 3600.0)
    busy = {"k0": 4, "p0": 0, "v0": 0}  # p100 and v100 fully taken by the plan
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, busy, 1.4)
    assert out["j"] == {"k0": 2} and why == {}
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, {"k0": 4, "p0": 4, "v0": 2}, 1.4)
    assert out["j"] == {"v0": 2} and "optimistic" in why["j"]


def test_a_move_that_does_not_pay_at_the_optimistic_rate_is_not_explored() -> None:
    k = Knowledge()
    k.measured.add("k80")
    nearly_done = JobView("j", (2,), 0.0, 0.0, 3600.0, 1.0, k.throughput, total_samples=1.0e6,
                          done_samples=1.0e6 - 1000.0, current=freeze_config({"k0": 2}), placed_for=3600.0,
                          restart_cost=600.0, explore=k.explore)
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (nearly_done,), CLUSTER, {"k0": 4, "p0": 4, "v0": 4}, 1.4)
    assert out["j"] == {"k0": 2} and why == {}


def test_spreading_the_same_gpus_over_more_servers_of_their_type_is_never_explored() -> None:
    # three V100 servers: the job measured on two GPUs of one; the split (one GPU on each) is unmeasured and
    # its optimistic bound (twice the single-GPU rate, no communication) beats the measured rate, but the
    # same type over more servers cannot be faster
    three = ClusterView(tuple(NodeView(f"v{i}", "v100", "v100", 4, 4) for i in range(3)))
    free = {"v0": 2, "v1": 1, "v2": 1}  # the job's own two on v0, one idle GPU on each of the others

    def measured(cfg: Config) -> float:
        return 700.0 if len(cfg) == 1 else 500.0

    def optimistic(cfg: Config) -> float:
        return 0.0 if len(cfg) == 1 else 2 * 480.0

    for current in (None, freeze_config({"v0": 2})):
        j = JobView("j", (2,), 0.0, 0.0, 3600.0 * 100, 1.0, measured, total_samples=1.0e8, done_samples=1.0e6,
                    current=current, placed_for=3600.0, restart_cost=1.0, explore=optimistic)
        out, why = explore_idle({"j": freeze_config({"v0": 2})}, (j,), three, free, 1.4)
        assert out["j"] == {"v0": 2} and why == {}
    # a config of another type is still tried (the rule is about spreading, not about exploring)
    k = Knowledge()
    k.measured.add("k80")
    j = view(k, None, 0.0)
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, {"k0": 4, "p0": 4, "v0": 4}, 1.4)
    assert out["j"] == {"v0": 2}


def preempted_view(k: Knowledge) -> JobView:
    """The issue-22 job: preempted twice early, now running on two K80s (measured there)."""
    return JobView("j", (2,), 0.0, 0.0, 3600.0 * 100, 1.0, k.throughput, total_samples=1.0e8, done_samples=1.0e6,
                   current=freeze_config({"k0": 2}), placed_for=3600.0, restart_cost=60.0, explore=k.explore,
                   preemptions=2)


def test_a_preempted_job_explores_onto_gpus_idle_for_a_whole_round_and_only_those() -> None:
    k = Knowledge()
    k.measured.add("k80")
    j = preempted_view(k)
    now_free = {"k0": 4, "p0": 4, "v0": 4}
    # the previous round's plan left the V100s idle too: a whole round idle, the job tries them
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4,
                            idle_before={"k0": 2, "p0": 0, "v0": 4})
    assert out["j"] == {"v0": 2} and "optimistic" in why["j"]
    # idle now but busy in the previous plan (a job just ended): no move yet
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4,
                            idle_before={"k0": 2, "p0": 0, "v0": 0})
    assert out["j"] == {"k0": 2} and why == {}
    # unknown history (the first plan of a planner): no move for a preempted job
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4)
    assert out["j"] == {"k0": 2} and why == {}


def test_a_preempted_job_on_a_slow_type_reaches_the_fast_one_within_rounds_on_an_idle_cluster() -> None:
    # the whole planner, rounds on an idle cluster: the job was preempted twice before it settled on K80s
    k = Knowledge()
    k.measured.add("k80")
    policy = HopsPolicy(PlannerParams())
    current: Config = freeze_config({"k0": 2})
    preemptions, types = 2, []
    for r in range(5):
        j = JobView("j", (2,), 0.0, 0.0, 3600.0 * 100, 1.0, k.throughput, total_samples=1.0e8, done_samples=1.0e6,
                    current=current, placed_for=3600.0, restart_cost=60.0, explore=k.explore, preemptions=preemptions)
        cfg = policy.plan(CLUSTER, (j,), 360.0 * (r + 1)).assignments["j"]
        assert cfg is not None
        if dict(cfg) != dict(current):
            current, preemptions = freeze_config(cfg), preemptions + 1
        (t,) = {TYPE[n] for n in cfg}
        k.measured.add(t)
        types.append(t)
    # round 1 only learns what is idle; from round 2 on the V100s have been idle a whole round
    assert types[0] == "k80" and "v100" in types[1:4] and types[-1] == "v100"


def test_without_explore_moves_a_running_job_explores_only_onto_gpus_idle_for_a_whole_round() -> None:
    # explore_moves=false: a running job never preempted no longer pays a move to explore GPUs that just
    # became idle; GPUs idle for a whole round it still tries, and a job that starts explores at its start
    k = Knowledge()
    k.measured.add("k80")
    j = view(k, freeze_config({"k0": 2}), 3600.0)
    now_free = {"k0": 4, "p0": 4, "v0": 4}
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4,
                            idle_before={"k0": 2, "p0": 0, "v0": 0})
    assert out["j"] == {"v0": 2}  # the default: it explores at the price of a move
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4,
                            idle_before={"k0": 2, "p0": 0, "v0": 0}, move_running=False)
    assert out["j"] == {"k0": 2} and why == {}
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (j,), CLUSTER, now_free, 1.4,
                            idle_before={"k0": 2, "p0": 0, "v0": 4}, move_running=False)
    assert out["j"] == {"v0": 2} and "optimistic" in why["j"]
    starting = view(k, None, 0.0)
    out, why = explore_idle({"j": freeze_config({"k0": 2})}, (starting,), CLUSTER, now_free, 1.4, move_running=False)
    assert out["j"] == {"v0": 2}


def test_explore_moves_reach_the_planner() -> None:
    assert PlannerParams().explore_moves is True
    k = Knowledge()
    k.measured.add("k80")
    plan = HopsPolicy(PlannerParams(explore_moves=False)).plan(CLUSTER, (view(k, freeze_config({"k0": 2}), 3600.0),), 360.0)
    assert plan.assignments["j"] == {"k0": 2}  # the first plan of a planner: no round of idle GPUs known yet
    assert run(PlannerParams(explore_moves=True), 1) != ["k80"]


def test_without_explore_spanning_a_running_job_is_not_moved_to_explore_a_config_on_several_servers() -> None:
    # an 8-GPU job on two 4-GPU K80 servers (measured); two idle V100 servers, unmeasured: the optimistic rate
    # (8 x the single-GPU rate, no communication) beats the measured one, but a restart for it is no bargain
    four = ClusterView(tuple(NodeView(f"{t}{i}", t, t, 4, 4) for t in ("k80", "v100") for i in range(2)))

    def measured(cfg: Config) -> float:
        return 300.0 if all(n.startswith("k80") for n in cfg) else 100.0

    def optimistic(cfg: Config) -> float:
        return 0.0 if all(n.startswith("k80") for n in cfg) else 8 * 480.0

    def job(current: Config | None) -> JobView:
        return JobView("j", (8,), 0.0, 0.0, 3600.0 * 100, 1.0, measured, total_samples=1.0e8, done_samples=1.0e6,
                       current=current, placed_for=3600.0, restart_cost=60.0, explore=optimistic)

    on_k80 = freeze_config({"k800": 4, "k801": 4})
    free = {n.name: 4 for n in four.nodes}
    out, _ = explore_idle({"j": on_k80}, (job(on_k80),), four, free, 1.4, idle_before=free)
    assert out["j"] == {"v1000": 4, "v1001": 4}  # the default: it pays a move to explore them
    out, why = explore_idle({"j": on_k80}, (job(on_k80),), four, free, 1.4, idle_before=free, move_spanning=False)
    assert out["j"] == on_k80 and why == {}
    out, _ = explore_idle({"j": on_k80}, (job(None),), four, free, 1.4, move_spanning=False)
    assert out["j"] == {"v1000": 4, "v1001": 4}  # at a start it costs nothing: still tried
    assert PlannerParams().explore_spanning is True
