"""Which jobs and nodes are Hops's (hops_slurm.slurm.scope): the configured partitions and nothing else."""

from __future__ import annotations

from hops_slurm.directives import COMMENT_PREFIX
from hops_slurm.slurm.api import SlurmJob, SlurmNode
from hops_slurm.slurm.scope import HopsScope, ScopedSlurm

SCOPE = HopsScope(("gpu-hops", "old"))
NODES = [SlurmNode(name="a", state="idle", partitions=("gpu-hops",)), SlurmNode(name="b", state="idle", partitions=("old", "gpu")),
         SlurmNode(name="c", state="idle", partitions=("gpu",))]


def job(partition: str, comment: str = COMMENT_PREFIX + "gpus=1 samples=1 batch-size=1 model=resnet18") -> SlurmJob:
    return SlurmJob(job_id="1", state="PENDING", partition=partition, admin_comment=comment)


def test_a_hops_comment_outside_the_hops_partitions_is_not_a_hops_job() -> None:
    assert SCOPE.mark(job("gpu-hops")).is_hops and SCOPE.mark(job("old")).is_hops
    assert not SCOPE.mark(job("gpu")).is_hops and not SCOPE.mark(job("hops")).is_hops
    assert SCOPE.mark(job("gpu,old")).is_hops  # lists a Hops partition among others
    assert not SCOPE.mark(job("gpu-hops", comment="")).is_hops  # no directives: never a Hops job
    again = SCOPE.mark(job("gpu"))
    assert SCOPE.mark(again) is again  # marking twice changes nothing


def test_nodes_managed_and_a_jobs_own() -> None:
    assert SCOPE.managed(NODES) == ["a", "b"]
    assert SCOPE.nodes_of(job("old"), NODES) == {"b"}
    assert SCOPE.nodes_of(job("gpu,gpu-hops"), NODES) == {"a"}
    assert SCOPE.nodes_of(job("gpu-hops,old"), NODES) == {"a", "b"}


class Listing:
    name = "listing"
    dialect = "mine"

    def jobs(self) -> list[SlurmJob]:
        return [job("gpu-hops"), job("gpu")]

    def job(self, job_id: str) -> SlurmJob | None:
        return job("gpu")

    def now(self) -> float:
        return 5.0


def test_the_scoped_backend_marks_every_read_and_passes_the_rest_through() -> None:
    api = ScopedSlurm(Listing(), SCOPE)  # type: ignore[arg-type]
    assert [j.is_hops for j in api.jobs()] == [True, False]
    got = api.job("1")
    assert got is not None and not got.is_hops and got.outside
    assert api.jobs_of(["1"]) is None  # the backend reads no subset: the listing then
    assert api.dialect == "mine" and api.now() == 5.0
