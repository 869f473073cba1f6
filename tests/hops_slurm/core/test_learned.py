"""The one rule for forgetting what the throughput store learned (hops_slurm/core/learned.py), used by the
live engine (hops_slurm/engine/estimates.py) and the simulator's fast path (hops_slurm/sim/knowledge.py)."""

from __future__ import annotations

from estimator.snapshot import CachedSource, JobSnapshot, MemorySource
from hops_slurm.core.jobview import Memo
from hops_slurm.core.learned import Learned


def _memo() -> Memo:
    return {("fn", "a"): 1, ("age", "a", 4.0): 2, ("fn", "b"): 3, ("age", "b", 8.0): 4}


def _cached(factors: dict[str, float]) -> tuple[MemorySource, CachedSource]:
    store = MemorySource(jobs={"a": JobSnapshot("a"), "b": JobSnapshot("b")}, factors=factors)
    source = CachedSource(store)
    source.snapshot("a"), source.snapshot("b"), source.entity_factors()  # read once, as the estimator does
    return store, source


def test_a_signature_learned_drops_its_estimates_and_snapshot_only() -> None:
    store, source = _cached({"n1": 1.0})
    learned, memo = Learned(), _memo()
    learned.add("b")
    learned.forget(source, memo)  # the first time: the factors as of it were never read, every estimate goes
    assert memo == {}
    memo = _memo()
    before_a = source.snapshot("a")
    store.jobs["b"] = JobSnapshot("b", type_aggregated={("a100", 1): 5.0})  # its new records
    learned.add("b")
    learned.forget(source, memo)
    assert memo == {("fn", "a"): 1, ("age", "a", 4.0): 2}  # a's estimates stay
    assert source.snapshot("b").type_aggregated == {("a100", 1): 5.0} and source.snapshot("a") is before_a
    assert learned.pending == set()


def test_entity_factors_that_moved_drop_every_estimate() -> None:
    store, source = _cached({"n1": 1.0})
    learned = Learned()
    learned.add("a")
    learned.forget(source, {})
    store.factors = {"n1": 0.5}  # a record of a taught Hops that node n1 is slower: every job's estimate there moves
    learned.add("a")
    memo = _memo()
    learned.forget(source, memo)
    assert memo == {}


def test_nothing_learned_forgets_nothing() -> None:
    _store, source = _cached({})
    memo = _memo()
    Learned().forget(source, memo)
    assert memo == _memo()
