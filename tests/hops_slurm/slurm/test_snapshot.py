"""Cluster views built from Slurm's node and job records (pure)."""

from __future__ import annotations

from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.snapshot import cluster_view, current_configs

HOPS = "hops:gpus=1,2 samples=10 batch-size=1 model=m"
NODES = [
    SlurmNode(name="a100-1", state="mixed", gpu_type="a100", gpus_total=8, gpus_used=(0, 1, 2, 3, 4), partitions=("hops",),
              features=("a100", "a100-dgx")),
    SlurmNode(name="v100-1", state="mixed", gpu_type="v100", gpus_total=4, gpus_used=(0,), partitions=("hops",), features=("v100",)),
    SlurmNode(name="v100-2", state="idle", flags=("DRAIN",), gpu_type="v100", gpus_total=4, partitions=("hops",)),
    SlurmNode(name="cpu-1", state="idle", partitions=("hops",)),
    SlurmNode(name="p-1", state="idle", gpu_type="v100", gpus_total=4, partitions=("profiler",)),
]
JOBS = [
    # a Hops job on a100-1 (3 GPUs) and v100-1 (1); a non-Hops job holds the other 2 GPUs of a100-1
    SlurmJob(job_id="1", state="RUNNING", admin_comment=HOPS, gpu_alloc={"a100-1": (0, 1, 2), "v100-1": (0,)}),
    SlurmJob(job_id="2", state="RUNNING", gpu_alloc={"a100-1": (3, 4)}),
    SlurmJob(job_id="3", state="PENDING", admin_comment=HOPS),
]


def test_round_view_counts_running_hops_gpus_as_free() -> None:
    view = cluster_view(NODES, JOBS, fragment=False)
    assert [(n.name, n.server_class, n.total_gpus, n.free_gpus) for n in view.nodes] == [
        ("a100-1", "a100-dgx", 8, 6),  # 8 - 2 held by the non-Hops job
        ("v100-1", "v100", 4, 4),
    ]


def test_fragment_view_counts_only_idle_gpus() -> None:
    view = cluster_view(NODES, JOBS, fragment=True)
    assert [(n.name, n.free_gpus) for n in view.nodes] == [("a100-1", 3), ("v100-1", 3)]
    assert [n.name for n in cluster_view(NODES, JOBS, fragment=True, partition=None).nodes] == ["a100-1", "v100-1", "p-1"]


def test_current_configs() -> None:
    assert {k: dict(v) for k, v in current_configs(JOBS).items()} == {"1": {"a100-1": 3, "v100-1": 1}}


# ----- facts from one snapshot: free GPUs and placed-and-pending ------------------------------------
def test_free_gpus_counts_freed_jobs_free_and_takes_promised_gpus_out() -> None:
    from hops_slurm.slurm.snapshot import Snapshot

    snap = Snapshot(tuple(JOBS), tuple(NODES))
    assert snap.free_gpus()["a100-1"] == 3  # indices 0-4 in use
    assert snap.free_gpus(freed=["1"])["a100-1"] == 6  # job 1's 0,1,2 free; job 2's 3,4 not
    assert snap.free_gpus(freed=["1"], promised={"3": {"a100-1": 2}})["a100-1"] == 4
    # a job's GPUs count as used even when the node's record lags behind the listing
    lagging = Snapshot(tuple(JOBS), tuple(n.model_copy(update={"gpus_used": ()}) for n in NODES))
    assert lagging.free_gpus()["a100-1"] == 3 and lagging.free_gpus()["v100-1"] == 3


def _placed_journal(job_id: str, config: dict[str, int], fields: dict[str, str], last: str = "release"):  # noqa: ANN202
    from hops_slurm.journal import Journal

    journal = Journal(":memory:")
    for kind, args in (("hold", {}), ("place", {"config": config, "fields": fields}), ("reserve", {}),
                       ("attach", {}), ("release", {"config": config})):
        with journal.action(kind, job_id, args, "r1"):
            pass
    if last != "release":
        with journal.action(last, job_id, {}, "r2"):
            pass
    return journal


def test_placed_and_pending_is_one_definition() -> None:
    from hops_slurm.slurm.api import SlurmReservation
    from hops_slurm.slurm.snapshot import Snapshot, placed_config

    cfg = {"a100-1": 2}
    fields = {"TresPerNode": "gres:gpu:2", "TresPerJob": "", "NumNodes": "1", "NodeList": "a100-1"}
    job = SlurmJob(job_id="9", state="PENDING", priority=100, admin_comment=HOPS, reservation="hops-j9",
                   required_nodes=("a100-1",), tres_per_node="gres:gpu:2")
    resv = {"hops-j9": SlurmReservation(name="hops-j9", nodes=("a100-1",))}
    journal = _placed_journal("9", cfg, fields)
    assert placed_config(job, journal) == cfg and placed_config(job, journal, resv) == cfg
    assert Snapshot((job,), tuple(NODES), tuple(resv.values())).placed_pending(journal) == {"9": cfg}
    # the owner edited it (more GPUs per node, other nodes), it is held, or its reservation is gone/elsewhere
    assert placed_config(job.model_copy(update={"tres_per_node": "gres:gpu:4"}), journal) is None
    assert placed_config(job.model_copy(update={"required_nodes": ("a100-1", "v100-1")}), journal) is None
    assert placed_config(job.model_copy(update={"priority": 0}), journal) is None
    assert placed_config(job, journal, {}) is None
    assert placed_config(job, journal, {"hops-j9": SlurmReservation(name="hops-j9", nodes=("v100-1",))}) is None
    # a later placement step (a hold, a requeue) ends the placement; so does a release never confirmed
    assert placed_config(job, _placed_journal("9", cfg, fields, last="hold")) is None
    unconfirmed = _placed_journal("9", cfg, fields)
    unconfirmed.intend("release", "9", {"config": cfg}, "r2")
    assert placed_config(job, unconfirmed) is None


class _StartsDuringListing:
    """Slurm as the engine meets it right after a round released a job: the job is pending when the job
    listing is taken and starts before the listing's reader gets to the nodes (a listing of 10,000 jobs
    takes seconds on 22.05; Slurm starts a released job within one)."""

    def __init__(self) -> None:
        self.started = False

    def now(self) -> float:
        return 100.0

    def jobs(self) -> list[SlurmJob]:
        listing = [SlurmJob(job_id="9", state="RUNNING" if self.started else "PENDING", priority=1, admin_comment=HOPS,
                            reservation="hops-j9", required_nodes=("a100-1",), tres_per_node="gres:gpu:8",
                            gpu_alloc={"a100-1": tuple(range(8))} if self.started else {})]
        self.started = True  # it starts right after the listing was taken
        return listing

    def nodes(self) -> list[SlurmNode]:
        used = tuple(range(8)) if self.started else ()
        return [SlurmNode(name="a100-1", state="idle", gpu_type="a100", gpus_total=8, gpus_used=used, partitions=("hops",))]

    def reservations(self) -> list[object]:
        return []


def test_a_job_starting_while_the_listing_is_read_keeps_its_gpus_for_the_round_plan() -> None:
    """The round after a start: the job released into its reservation starts during the read; the round
    plan, which re-plans every Hops job, must still see the GPUs it was placed on (not withdraw it)."""
    from hops_slurm.slurm.snapshot import Snapshot

    snap = Snapshot.read(_StartsDuringListing())  # type: ignore[arg-type]
    assert [(n.name, n.free_gpus) for n in snap.cluster_view(fragment=False).nodes] == [("a100-1", 8)]
