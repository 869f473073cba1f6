"""One contract for every Slurm backend, run on the live minicluster against each backend that can run here.

The pyslurm backend needs pyslurm built against this Slurm; pyslurm on PyPI is 25.11 only and refuses
Slurm 22.05 at build time, so here it is reported as not runnable (an environmental reason, checked by
importing pyslurm, not assumed).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from hops_slurm.slurm.api import SlurmApi, SlurmCommandError, SlurmError
from hops_slurm.slurm.cli import CliSlurm

pytestmark = pytest.mark.slurm


def _pyslurm(minicluster: Minicluster) -> SlurmApi:
    try:
        import pyslurm  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        pytest.skip("pyslurm is not installed: PyPI has pyslurm 25.11 only, and no Debian suite ships Slurm 25.11 "
                    f"(this cluster runs {minicluster.spec.slurm})")
    from hops_slurm.slurm.pyslurm_backend import PyslurmSlurm

    return PyslurmSlurm()


@pytest.fixture(params=["cli", "pyslurm"])
def backend(request: pytest.FixtureRequest, minicluster: Minicluster) -> Iterator[SlurmApi]:
    if request.param == "cli":
        yield CliSlurm(minicluster.env())
    else:
        yield _pyslurm(minicluster)


def test_nodes_report_gpu_type_total_and_use(backend: SlurmApi, minicluster: Minicluster) -> None:
    nodes = {n.name: n for n in backend.nodes()}
    assert set(nodes) == {"a100-1", "a100-2", "v100-1", "v100-2"}
    assert (nodes["a100-1"].gpu_type, nodes["a100-1"].gpus_total) == ("a100", 8)
    assert (nodes["v100-2"].gpu_type, nodes["v100-2"].gpus_total) == ("v100", 4)
    assert all(n.usable and n.gpus_free == n.gpus_total for n in nodes.values())
    assert "hops" in nodes["v100-1"].partitions


def test_job_lifecycle_through_the_api(backend: SlurmApi, submit, live) -> None:  # noqa: ANN001
    job_id = submit()
    job = backend.job(job_id)
    assert job is not None and job.is_hops and job.held and job.reason == "JobHeldUser"
    assert job.directives is not None and job.directives.startswith("gpus=1,2,4,8 ")
    assert any(j.job_id == job_id for j in backend.jobs())

    backend.hold(job_id)
    assert backend.job(job_id).reason == "JobHeldAdmin"  # type: ignore[union-attr]
    backend.update_job(job_id, {"TresPerJob": "", "TresPerNode": "gres:gpu:v100:2", "NumNodes": "1", "NodeList": "v100-2"})
    job = backend.job(job_id)
    assert job is not None and job.required_nodes == ("v100-2",) and job.tres_per_node == "gres:gpu:v100:2"

    backend.create_reservation("hops-contract", ["v100-2"], [job.user], ["OVERLAP", "IGNORE_JOBS"])
    (resv,) = [r for r in backend.reservations() if r.name == "hops-contract"]
    assert resv.nodes == ("v100-2",) and resv.users == ("root",) and "OVERLAP" in resv.flags
    backend.update_job(job_id, {"Reservation": "hops-contract"})
    backend.release(job_id)
    job = live.wait_job(backend, job_id, lambda j: j.state == "RUNNING" and bool(j.gpu_alloc) and all(j.gpu_alloc.values()))
    assert job.gpu_alloc == {"v100-2": (0, 1)} and job.gpu_config() == {"v100-2": 2}
    assert {n.name: n.gpus_used for n in backend.nodes()}["v100-2"] == (0, 1)

    backend.update_job(job_id, {"Reservation": ""})
    backend.delete_reservation("hops-contract")
    assert not any(r.name == "hops-contract" for r in backend.reservations())
    assert backend.job(job_id).state == "RUNNING"  # type: ignore[union-attr]  # detaching keeps it running

    backend.signal_job(job_id, "URG")  # a notice's way in (URG: a script that does not handle it ignores it)
    live.stays(backend, job_id, lambda j: j.state == "RUNNING", seconds=1.0)
    backend.requeue_hold(job_id)
    job = live.wait_job(backend, job_id, lambda j: j.pending)
    assert job.held and job.restart_count == 1
    with pytest.raises(SlurmError):
        backend.signal_job(job_id, "URG")  # pending: nothing to signal
    backend.cancel(job_id)
    live.wait_job(backend, job_id, lambda j: not (j.pending or j.active))
    backend.requeue_hold(job_id)  # an ended job is left alone (a plain 22.05 requeuehold would requeue it)
    live.stays(backend, job_id, lambda j: not (j.pending or j.active) and j.restart_count == 1, seconds=1.0)


def test_errors_name_the_command_and_slurms_message(backend: SlurmApi) -> None:
    assert backend.job("999999") is None
    with pytest.raises(SlurmError) as err:
        backend.hold("999999")
    if isinstance(err.value, SlurmCommandError):
        assert err.value.argv == ["scontrol", "hold", "999999"]
        assert "Invalid job id" in str(err.value) and "scontrol hold 999999" in str(err.value)
    with pytest.raises(SlurmError, match="reservation"):
        backend.delete_reservation("hops-no-such-reservation")
