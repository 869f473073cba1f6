"""The simulator's knowledge: records ingested are seen by the next read, however many came in between."""

from __future__ import annotations

from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.knowledge import Knowledge
from hops_slurm.sim.measure import runtime_record
from planner.views import ClusterView, NodeView, freeze_config


def test_records_ingested_between_reads_reach_the_next_estimate() -> None:
    truth = GroundTruth()
    model = truth.models[0]
    nodes = (NodeView("a", "v100", "v100-x", 4, 4), NodeView("b", "v100", "v100-x", 4, 4))
    k = Knowledge(ClusterView(nodes), truth)
    try:
        k.probe("sig", model, at=0.0, probe_seconds=60.0)
        fn = k.throughput_fn("sig")
        on_a = float(fn(freeze_config({"a": 1})))
        assert on_a > 0
        assert ("fn", "sig") in k.memo
        # node a measured at half the probe's speed, three times, with no read in between
        for t in (100.0, 200.0, 300.0):
            k.ingest(runtime_record("sig", model, "v100", "a", gpus=1, nodes=1, throughput=on_a / 2, window=60.0,
                                    at=t))
        assert k.records == 3
        assert ("fn", "sig") not in k.memo  # the read brought the caches up to date: the old function is gone
        after = float(k.throughput_fn("sig")(freeze_config({"a": 1})))
        assert after < on_a * 0.75  # the records reached the estimate
        assert k.estimator.entity_factors()["a"] < 0.75  # and the entity layer (a's factor)
    finally:
        k.close()
