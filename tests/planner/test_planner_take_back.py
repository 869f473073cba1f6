"""planner.take_back: a job a round plan requeued does not take its GPUs back from the job started on them."""

from __future__ import annotations

from planner.hops import HopsPolicy, fits
from planner.params import PlannerParams
from planner.take_back import TURNS, Displaced, forget_pairs, forget_stale, keep_started, note_requeues
from planner.views import ClusterView, Config, JobView, NodeView

#: one 8-GPU node: two rigid 8-GPU jobs can only take turns on it
NODE = ClusterView((NodeView("n0", "v100", "v100", 8, 8),))


def per_gpu(cfg: Config) -> float:
    return 10.0 * sum(cfg.values())


def job(job_id: str, *, wait: float, current: Config | None = None, placed_for: float = 0.0) -> JobView:
    # an hour of expected run time: the latency ratio is wait / 3600
    return JobView(job_id, (8,), submit_time=0.0, wait=wait, age=3600.0, sensitivity=1.0, throughput=per_gpu,
                   total_samples=10.0 * 8 * 3600.0, current=current, run_time=placed_for, placed_for=placed_for)


def test_a_requeued_job_is_remembered_with_the_job_started_on_its_nodes_and_forgotten_once_stale() -> None:
    a = job("a", wait=0.0, current={"n0": 8}, placed_for=600.0)
    b = job("b", wait=7200.0)
    book: Displaced = {}
    note_requeues(book, [a], [a, b], {"a": None, "b": {"n0": 8}})
    assert book == {"a": {"b": {"n0": 8}}}
    note_requeues(book, [a], [a, b], {"a": {"n0": 8}, "b": None})  # a kept its GPUs: nothing new
    assert book == {"a": {"b": {"n0": 8}}}
    a_waits, b_runs = job("a", wait=600.0), job("b", wait=7200.0, current={"n0": 8}, placed_for=360.0)
    forget_stale(book, [a_waits, b_runs])
    assert book == {"a": {"b": {"n0": 8}}}
    forget_stale(book, [a_waits])  # b ended
    assert book == {}
    book = {"a": {"b": {"n0": 8}}}
    forget_stale(book, [job("a", wait=600.0, current={"n0": 8}), b_runs])  # a runs again
    assert book == {}


def test_a_take_back_is_undone_where_the_capacity_allows_and_kept_where_another_job_needs_the_gpus() -> None:
    book: Displaced = {"a": {"b": {"n0": 8}}}
    room = lambda chosen: fits(chosen, {"n0": 8})  # noqa: E731
    chosen, kept = keep_started(book, {"a": {"n0": 8}, "b": None}, {}, room)
    assert chosen == {"a": None, "b": {"n0": 8}} and kept == {"b": "a"}
    # a third job placed on b's GPUs too: undoing would over-allocate, so the plan stays
    plan = {"a": {"n0": 4}, "c": {"n0": 4}, "b": None}
    assert keep_started(book, plan, {}, room) == (plan, {})
    # a placed elsewhere: nothing to undo
    assert keep_started(book, {"a": {"n1": 8}, "b": None}, {}, lambda c: True)[1] == {}
    # counted per pair: undone only once the pair has requeued each other TURNS times
    pair = frozenset(("a", "b"))
    assert keep_started(book, {"a": {"n0": 8}, "b": None}, {}, room, {pair: TURNS - 1})[1] == {}
    assert keep_started(book, {"a": {"n0": 8}, "b": None}, {}, room, {pair: TURNS})[1] == {"b": "a"}
    turns: dict[frozenset[str], int] = {pair: 2, frozenset(("a", "c")): 1}
    forget_pairs(turns, [job("a", wait=0.0), job("b", wait=0.0)])
    assert turns == {pair: 2}


def test_two_rigid_jobs_do_not_take_turns_on_the_only_gpus_that_fit_them() -> None:
    def rounds(params: PlannerParams) -> list[str]:
        policy = HopsPolicy(params)
        out: list[str] = []
        # each round 6 min apart; the running job 10 min into its placement, the waiting one's latency ratio
        # higher than the running one's (wait / an hour), so each round plan would give the GPUs to the other
        for now, (run, wait) in enumerate((("a", "b"), ("b", "a"), ("a", "b"))):
            jobs = (job(run, wait=3600.0 * now, current={"n0": 8}, placed_for=600.0),
                    job(wait, wait=3600.0 * now + 7200.0))
            plan = policy.plan(NODE, jobs, now=360.0 * now)
            out.append(next(iter(plan.placed())))
        return out + [str(plan.diagnostics["kept_from_take_back"])]

    # rounds 1 and 2: b for a, then a for b (one turn each); round 3: a keeps them, b is kept off
    assert rounds(PlannerParams()) == ["b", "a", "a", "{'a': 'b'}"]
    assert PlannerParams().no_take_back is True and TURNS == 2
    # without the rule the GPUs change hands every round
    assert rounds(PlannerParams(no_take_back=False)) == ["b", "a", "b", "{}"]
