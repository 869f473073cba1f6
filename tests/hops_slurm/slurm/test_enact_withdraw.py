"""Withdrawing placements (:meth:`hops_slurm.slurm.enact.Enactor.apply` with a plan that drops jobs placed and
pending): Slurm's commands for many jobs, recorded from the CLI backend (nothing is run)."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.journal import Journal
from hops_slurm.slurm.api import SlurmJob, SlurmNode, SlurmReservation
from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.slurm.enact import Enactor
from hops_slurm.slurm.snapshot import GATE, Snapshot

HOPS = "hops:gpus=1,2 samples=10 batch-size=1 model=m"
FIELDS = {"TresPerJob": "", "TresPerNode": "gres:gpu:1", "NumNodes": "1", "NodeList": "a100-1"}


class Recording(CliSlurm):
    """The CLI backend with every command recorded instead of run (each succeeds)."""

    def __init__(self) -> None:
        super().__init__(env={})
        self.ran: list[list[str]] = []

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        self.ran.append(argv)
        return ""

    def script(self, commands: list[list[str]]) -> list[str | None] | None:
        self.ran.append(["scontrol", "(stdin)", *(" ".join(c) for c in commands)])
        return [None] * len(commands)


def placed(journal: Journal, job_id: str) -> SlurmJob:
    """A Hops job the journal placed on one GPU of a100-1 and released, pending in its own reservation."""
    for kind, args in (("hold", {}), ("place", {"config": {"a100-1": 1}, "fields": FIELDS}),
                       ("reserve", {}), ("release", {"config": {"a100-1": 1}})):
        with journal.action(kind, job_id, args, "r1"):
            pass
    return SlurmJob(job_id=job_id, state="PENDING", priority=100, admin_comment=HOPS, reservation=f"hops-j{job_id}",
                    required_nodes=("a100-1",), node_count=1, tres_per_node="gres:gpu:1")


def test_withdrawing_many_placements_is_one_hold_one_detach_and_one_delete_script(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    ids = ["11", "12", "13"]
    jobs = tuple(placed(journal, j) for j in ids)
    resv = (SlurmReservation(name=GATE, nodes=("a100-1",)),
            *(SlurmReservation(name=f"hops-j{j}", nodes=("a100-1",)) for j in ids))
    node = SlurmNode(name="a100-1", state="idle", gpu_type="a100", gpus_total=8, partitions=("hops",))
    api = Recording()
    result = Enactor(api, journal, env_dir=tmp_path / "env").apply({j: None for j in ids}, snapshot=Snapshot(jobs, (node,), resv))
    assert result.unplaced == ids
    assert api.ran[:3] == [
        ["scontrol", "hold", "11,12,13"],
        ["scontrol", "update", "JobId=11,12,13", "Reservation="],
        ["scontrol", "(stdin)", "delete ReservationName=hops-j11", "delete ReservationName=hops-j12",
         "delete ReservationName=hops-j13"],
    ]
