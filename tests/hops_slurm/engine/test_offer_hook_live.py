"""The hook's side of offers inside a real slurmctld, with the engine's offer open (issue 34, H3 and L2):
jobs that would hold more GPUs than granted, or start later or elsewhere (--exclusive, arrays, --begin
ahead, a dependency, -N 2, --core-spec) are held as usual while a plain job still takes the offer; and a
reload of the hook (a changed job_submit.lua, as after `scontrol reconfigure` or a restart) does not serve
an offer already taken again. Run on 22.05, 24.11 and 26.05 (``HOPS_TEST_SLURM``); marker ``slurm``."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.config import load_config
from hops_slurm.engine import offer
from hops_slurm.engine.engine import Engine
from hops_slurm.slurm.cli import CliSlurm

pytestmark = pytest.mark.slurm

JOB = "#!/bin/bash\n#HOPS gpus=1 samples=1M batch-size=8 model=resnet18\nsleep 600\n"


@pytest.fixture
def offering(eng) -> Iterator[Path]:  # noqa: ANN001
    path = eng.cluster.conf_path.parent / offer.FILE_NAME
    text = eng.config.read_text()
    eng.config.write_text(text.replace("[engine]\n", f'[engine]\noffer_file = "{path}"\n', 1))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        eng.config.write_text(text)


def _submit(eng, user: str, *extra: str, header: str = "") -> str:  # noqa: ANN001
    n = len(eng.submitted)
    script = eng.workdir / f"hookoffer{n}.sh"
    script.write_text(JOB.replace("#!/bin/bash\n", "#!/bin/bash\n" + header, 1))
    script.chmod(0o755)
    argv = eng.cluster.user_argv(user, ["sbatch", "--parsable", "-o", "/dev/null", "-D", str(eng.workdir), *extra,
                                        str(script)], eng.workdir)
    out = subprocess.run(argv, env=eng.env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, (extra, out.stderr)
    job = out.stdout.strip().split(";")[0]
    eng.submitted.append(job)
    return job


def test_only_jobs_that_hold_what_they_are_granted_take_an_offer_and_a_reload_serves_none_again(
        eng, offering: Path) -> None:  # noqa: ANN001
    eng.until_idle()
    user = eng.ensure_user()
    api = CliSlurm(eng.cluster.env())
    # the hook serves only offers read after it was loaded, in whole seconds: a slurmctld started within the
    # last second (a fresh test cluster) gets the engine's first offer only from a read a second later
    time.sleep(1.1)
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        engine.refresh_and_fill()
        assert offer.read(offering) is not None, offering.read_text()
        first = _submit(eng, user, "-H")
        kept = {opts: _submit(eng, user, *opts) for opts in [
            ("--exclusive",), ("--array=0-1",), ("--begin=now+1hour",), (f"--dependency=afterany:{first}",),
            ("-N", "2"),
        ]}
        # 22.05 and 24.11 do not show --core-spec to the hook: it reads the script's #SBATCH lines (a
        # command-line --core-spec there is the engine's to catch: an allocation that differs from the grant)
        kept[("#SBATCH --core-spec=1",)] = _submit(eng, user, header="#SBATCH --core-spec=1\n")
        for opts, job in kept.items():
            j = eng.detail(job)
            assert j.reservation != offer.RESERVATION and j.priority == 0, (opts, j)
        taker = _submit(eng, user)  # the offer was open all along: a plain job takes it
        assert eng.detail(taker).reservation == offer.RESERVATION, eng.describe()
        # the hook is reloaded (slurmctld reloads a job_submit.lua whose time changed): its memory of the offer
        # it gave is gone, the offer file is the one the engine wrote before that job existed
        hook = eng.cluster.conf_path.parent / "job_submit.lua"
        time.sleep(1.1)
        os.utime(hook)  # now: later than the hook's load, so slurmctld loads it afresh at the next job
        again = _submit(eng, user)
        j = eng.detail(again)
        assert j.reservation != offer.RESERVATION and j.priority == 0, eng.describe()
        subprocess.run(["scancel", *eng.submitted], env=eng.env, check=False, timeout=30)
    time.sleep(1.1)  # the next test's first offer is read a second after this reload
