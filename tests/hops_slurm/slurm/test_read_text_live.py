"""22.05's job listing read from squeue's text (:mod:`hops_slurm.slurm.read_text`) on the live minicluster:
the same jobs, in the same order, as its JSON listing, a job whose name and comment hold new lines and
what looks like other records included; a running job's GPU indices (its name holding what looks like scontrol's
detail) from ``scontrol -o -d show job`` read once, equal to the JSON listing's."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from hops_slurm.slurm.cli import CliSlurm
from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import wait_for_state

pytestmark = pytest.mark.slurm


class Counting(CliSlurm):
    """The CLI backend noting which job listing each read ran."""

    def __init__(self, env: Mapping[str, str]) -> None:
        super().__init__(env)
        self.forms: list[str] = []

    def _run(self, argv: list[str], stdin: str | None = None, env: Mapping[str, str] | None = None) -> str:
        if argv[0] == "squeue":
            self.forms.append("json" if "--json" in argv else "text")
        elif argv[:5] == ["scontrol", "-o", "-d", "show", "job"]:
            self.forms.append("show")
        return super()._run(argv, stdin, env)


def test_the_text_listing_is_the_json_listing(minicluster: Minicluster, api: CliSlurm) -> None:
    if not api.dialect.text_listing:
        pytest.skip(f"Slurm {api.dialect.release} lists jobs as JSON only")
    hostile = "x\n1|RUNNING|a100-1\t%j\n"
    held = minicluster.run(["sbatch", "--parsable", "--hold", "-p", "profiler", "-J", hostile, "--comment", hostile * 20,
                            "-o", "/dev/null", "--wrap", "sleep 300"]).stdout.strip().split(";")[0]
    reader = Counting(minicluster.env())
    reader.jobs()  # the JSON too where a reason is described (jobs of earlier tests): its codes are kept
    # (no JobState= in it: the test helper wait_for_state reads scontrol's text naively)
    fake = "y\nJobId=1 JobName=z   Nodes=a100-1 CPU_IDs=0 Mem=0 GRES=gpu:a100:8(IDX:0-7) MinCPUsNode=1"
    ran = minicluster.run(["sbatch", "--parsable", "-p", "profiler", "-w", "a100-1", "--gres=gpu:a100:2", "-J", fake,
                           "--comment", fake, "-o", "/dev/null", "--wrap", "sleep 300"]).stdout.strip().split(";")[0]
    try:
        wait_for_state(minicluster, ran, {"RUNNING"})
        reader.forms.clear()
        first = reader.jobs()  # a job runs whose GPUs the text lacks: scontrol gives them, not the JSON listing
        again = reader.jobs()
        assert reader.forms == ["text", "show", "text"]
        d = api.dialect
        assert again == first == api._read(d.jobs_argv(), d.jobs)
        listing = {j.job_id: j for j in again}
        assert listing[held].name == hostile and listing[held].comment == hostile * 20
        assert len(listing[ran].gpu_alloc["a100-1"]) == 2
    finally:
        minicluster.run(["scancel", held, ran], check=False)
