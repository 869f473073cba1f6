"""slurm-backfill: age order, rigid largest request, no preemption, type-blind placement, EASY backfill."""

from __future__ import annotations

from dataclasses import replace

from baseline_helpers import check_plan, cluster, job, run_rounds, typed_throughput

from planner.policies import make_policy
from planner.views import freeze_config


def test_age_order_and_largest_request() -> None:
    view = cluster([("n0", "v100", 8)])
    thr = typed_throughput(view, {"v100": 1.0})
    young = job("young", (1, 2), thr, submit=10.0)
    old = job("old", (2, 4, 8), thr, submit=0.0)
    plan = make_policy("slurm-backfill").plan(view, (young, old), 20.0)
    check_plan(view, (young, old), plan)
    assert plan.diagnostics["queue"] == ["old", "young"]
    assert plan.assignments["old"] == freeze_config({"n0": 8})  # asks for 8, not 2 or 4
    assert plan.assignments["young"] is None  # would fit at 2 GPUs, but Slurm cannot shrink a request


def test_running_jobs_are_never_preempted() -> None:
    view = cluster([("n0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 1.0})
    running = job("r", (4,), thr, submit=100.0, current=freeze_config({"n0": 4}), run_time=50.0)
    older = job("o", (4,), thr, submit=0.0, wait=150.0)
    plan = make_policy("slurm-backfill").plan(view, (running, older), 150.0)
    assert plan.assignments == {"r": freeze_config({"n0": 4}), "o": None}


def test_type_blind_placement_takes_the_first_type_in_node_order() -> None:
    view = cluster([("k0", "k80", 4), ("v0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 10.0, "k80": 1.0})
    plan = make_policy("slurm-backfill").plan(view, (job("x", (2,), thr),), 0.0)
    assert plan.assignments["x"] == freeze_config({"k0": 2})  # 10x slower, but first


def test_multi_node_request_fills_nodes_in_order_within_one_type() -> None:
    view = cluster([("k0", "k80", 4), ("v0", "v100", 4), ("v1", "v100", 4)], free={"k0": 4, "v0": 3, "v1": 4})
    thr = typed_throughput(view, {"v100": 1.0, "k80": 1.0})
    plan = make_policy("slurm-backfill").plan(view, (job("x", (6,), thr),), 0.0)
    assert plan.assignments["x"] == freeze_config({"v0": 3, "v1": 3})


def test_easy_backfill_respects_the_reservation() -> None:
    # One 8-GPU node; r holds 4 GPUs until t = 100 (started at 0, limit 100). Head job h wants 8:
    # reserved at t = 100 with no GPUs to spare then. s (2 GPUs, 50 s) ends before 100: backfilled.
    # l (2 GPUs, 500 s) would still run at 100 and delay h: not started, although 2 GPUs are idle.
    view = cluster([("n0", "v100", 8)])
    thr = typed_throughput(view, {"v100": 1.0})
    r = job("r", (4,), thr, submit=0.0, age=100.0, current=freeze_config({"n0": 4}), run_time=0.0)
    h = job("h", (8,), thr, submit=1.0, age=1000.0)
    long_ = job("l", (2,), thr, submit=2.0, age=500.0)
    short = job("s", (2,), thr, submit=3.0, age=50.0)
    plan = make_policy("slurm-backfill").plan(view, (r, h, long_, short), 0.0)
    assert plan.diagnostics["reservation"] == {"job": "h", "start": 100.0, "config": freeze_config({"n0": 8})}
    assert plan.diagnostics["backfilled"] == ["s"]
    assert plan.assignments["l"] is None and plan.assignments["h"] is None


def test_backfill_may_use_gpus_outside_the_reservation() -> None:
    # Nodes a, b (4 GPUs), c (2). r holds a until 100, big holds b until 1000. Head job h (4 GPUs) is
    # reserved on a at 100. l (1 GPU, 5000 s) outlives the reservation but runs on c, which h does not need.
    view = cluster([("a", "v100", 4), ("b", "v100", 4), ("c", "v100", 2)])
    thr = typed_throughput(view, {"v100": 1.0})
    r = job("r", (4,), thr, submit=0.0, age=100.0, current=freeze_config({"a": 4}))
    big = job("big", (4,), thr, submit=0.2, age=1000.0, current=freeze_config({"b": 4}))
    h = job("h", (4,), thr, submit=1.0, age=1000.0)
    small = job("l", (1,), thr, submit=2.0, age=5000.0)
    plan = make_policy("slurm-backfill").plan(view, (r, big, h, small), 0.0)
    assert plan.diagnostics["reservation"] == {"job": "h", "start": 100.0, "config": freeze_config({"a": 4})}
    assert plan.assignments["l"] == freeze_config({"c": 1})
    # if h needed every GPU (10), c would be reserved too and l would have to wait
    h10 = job("h", (10,), thr, submit=1.0, age=1000.0)
    plan = make_policy("slurm-backfill").plan(view, (r, big, h10, small), 0.0)
    assert plan.diagnostics["reservation"]["start"] == 1000.0
    assert plan.assignments["l"] is None


def test_fragment_plan_starts_pending_jobs_on_idle_gpus() -> None:
    view = cluster([("n0", "v100", 4)], free={"n0": 2})
    thr = typed_throughput(view, {"v100": 1.0})
    plan = make_policy("slurm-backfill").plan(view, (job("p", (2,), thr),), 10.0, fragment=True)
    assert plan.assignments == {"p": freeze_config({"n0": 2})}


def test_round_loop_finishes_all_jobs() -> None:
    view = cluster([("v0", "v100", 4), ("p0", "p100", 4), ("k0", "k80", 4)])
    jobs = [job(f"j{i}", (1, 2, 4), typed_throughput(view, {"v100": 3.0, "p100": 2.0, "k80": 1.0}),
                total=3000.0 * (i + 1), submit=float(i), age=1000.0 * (i + 1)) for i in range(8)]
    done = run_rounds(make_policy("slurm-backfill"), view, jobs, rounds=60)
    assert set(done) == {j.job_id for j in jobs}


def test_a_known_time_limit_replaces_the_run_time_estimate() -> None:
    # As above, but every job carries Slurm's time limit (a replayed export's): s runs 50 s but may run
    # 300 s, past h's reserved start at r's limit (t = 200): Slurm does not backfill it; a job whose limit
    # ends before 200 is backfilled whatever its run time.
    view = cluster([("n0", "v100", 8)])
    thr = typed_throughput(view, {"v100": 1.0})
    r = replace(job("r", (4,), thr, submit=0.0, age=100.0, current=freeze_config({"n0": 4}), run_time=0.0), time_limit=200.0)
    h = replace(job("h", (8,), thr, submit=1.0, age=1000.0), time_limit=300.0)
    short = replace(job("s", (2,), thr, submit=3.0, age=50.0), time_limit=300.0)
    tight = replace(job("t", (2,), thr, submit=4.0, age=500.0), time_limit=150.0)
    plan = make_policy("slurm-backfill").plan(view, (r, h, short, tight), 0.0)
    assert plan.diagnostics["reservation"]["start"] == 200.0  # type: ignore[index]
    assert plan.diagnostics["backfilled"] == ["t"] and plan.assignments["s"] is None


def test_a_type_where_the_job_cannot_run_is_passed_over_as_its_user_would() -> None:
    # estimate 0 on k80 (no progress there, or no fit): the job goes to the next type in node order
    view = cluster([("k0", "k80", 4), ("v0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 1.0, "k80": 0.0})
    plan = make_policy("slurm-backfill").plan(view, (job("x", (2,), thr),), 0.0)
    assert plan.assignments["x"] == freeze_config({"v0": 2})
    assert plan.diagnostics["unservable"] == {}


def test_a_running_job_that_makes_no_progress_is_requeued_and_placed_where_it_runs() -> None:
    view = cluster([("k0", "k80", 4), ("v0", "v100", 4)])
    thr = typed_throughput(view, {"v100": 1.0, "k80": 0.0})
    stuck = job("x", (2,), thr, current=freeze_config({"k0": 2}), run_time=600.0)
    plan = make_policy("slurm-backfill").plan(view, (stuck,), 600.0)
    assert plan.assignments["x"] == freeze_config({"v0": 2})


def test_a_job_no_type_can_run_is_named_unservable_and_not_placed() -> None:
    from planner.servable import NO_USABLE_CONFIG

    view = cluster([("k0", "k80", 4), ("v0", "v100", 4)])
    zero = typed_throughput(view, {"v100": 0.0, "k80": 0.0})
    fine = typed_throughput(view, {"v100": 1.0, "k80": 1.0})
    stuck = job("stuck", (2,), zero, submit=0.0, current=freeze_config({"k0": 2}), run_time=600.0)
    later = job("later", (4,), fine, submit=10.0)
    for policy in ("slurm-backfill", "slurm-multifactor"):
        plan = make_policy(policy).plan(view, (stuck, later), 600.0)
        assert plan.assignments["stuck"] is None
        assert plan.diagnostics["unservable"]["stuck"].startswith(NO_USABLE_CONFIG)
        assert plan.placed()["later"] == freeze_config({"k0": 4})  # its GPUs are free: no reservation for it
