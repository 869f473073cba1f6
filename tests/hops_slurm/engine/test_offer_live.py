"""Offers on the live minicluster (real slurmctld running hooks/job_submit.lua, the engine in-process): while
no Hops job waits, a new job is not held: slurmctld starts it at its own scheduling pass on the GPUs the
engine offered (with no engine step in between), in the offer
reservation, as a non-root user; the engine's
next refresh writes its environment file, which the job was waiting for (profiler.jobenv). While a Hops
job waits the offer is closed, and so it is once the engine closes: new jobs are held as before.

Run with ``HOPS_TEST_SPEC=<a minicluster spec of your own>``; marker ``slurm``.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.config import load_config
from hops_slurm.engine import offer
from hops_slurm.engine.engine import Engine
from hops_slurm.slurm.cli import CliSlurm
from slurm_helpers import wait_until

pytestmark = pytest.mark.slurm

#: waits for its environment file as a shell job would (profiler.jobenv does the same for Python), says what
#: it got, runs on
JOB = """#!/bin/bash
#HOPS gpus={gpus} samples=1M batch-size=8 model=resnet18
f="$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
for i in $(seq 600); do [ -r "$f" ] && break; sleep 0.1; done
set -a; . "$f"; set +a
echo "HOPS_GPUS=${{HOPS_GPUS:-none}} HOPS_METRICS_FILE=${{HOPS_METRICS_FILE:+set}}"
sleep 600
"""


@pytest.fixture
def offering(eng) -> Iterator[Path]:  # noqa: ANN001
    """The engine's config with offers on, through the hook beside this cluster's slurm.conf; the file is
    removed afterwards (no other test's job may start on an offer)."""
    path = eng.cluster.conf_path.parent / offer.FILE_NAME
    text = eng.config.read_text()
    eng.config.write_text(text.replace("[engine]\n", f'[engine]\noffer_file = "{path}"\n', 1))
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        eng.config.write_text(text)


def _submit(eng, gpus: str, user: str | None = None) -> str:  # noqa: ANN001
    n = len(eng.submitted)
    script = eng.workdir / f"offer{n}.sh"
    script.write_text(JOB.format(gpus=gpus))
    script.chmod(0o755)
    argv = ["sbatch", "--parsable", "-o", str(eng.workdir / f"offer{n}.out"), "-D", str(eng.workdir), str(script)]
    if user:
        argv = eng.cluster.user_argv(user, argv, eng.workdir)
    out = subprocess.run(argv, env={**eng.env, "HOPS_JOB_ENV_DIR": str(eng.state_dir / "jobs")},
                         capture_output=True, text=True, check=True, timeout=30)
    job = out.stdout.strip().split(";")[0]
    eng.submitted.append(job)
    return job


def test_a_job_starts_at_slurm_s_next_pass_on_an_offer(eng, offering: Path) -> None:  # noqa: ANN001
    eng.until_idle()
    user = eng.ensure_user()
    api = CliSlurm(eng.cluster.env())
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        engine.refresh_and_fill()  # the gate, the offer reservation, an open offer (nothing waits)
        assert {offer.RESERVATION, "hops-gate"} <= {r.name for r in api.reservations()}
        made = offer.read(offering)
        assert made is not None and made.nodes, offering.read_text()
        assert made.tres == ("gres/gpu:" if api.dialect.structured else "gres:gpu:")  # this release's form
        job = _submit(eng, "1,2", user=user)
        # started by slurmctld's own scheduling pass, as an unheld job is: no refresh, no round, no release by
        # the engine in between (how soon is measured by the light workloads of docs/results/moves.md)
        wait_until(lambda: eng.detail(job).active, f"job {job} started by Slurm alone", 30.0)
        seen = eng.detail(job)
        assert seen.reservation == offer.RESERVATION, eng.describe()
        assert engine.journal.actions(job_id=job) == [], "the engine acted on it before Slurm started it"
        assert sum(seen.gpu_config().values()) == 2 and len(seen.gpu_config()) == 1  # its largest count, one node
        assert seen.user == user
        assert engine.monitor()  # a new Hops job (running): refresh, which adopts it
        env_file = eng.state_dir / "jobs" / f"{job}.env"
        assert env_file.exists(), eng.describe()
        out = eng.workdir / f"offer{len(eng.submitted) - 1}.out"
        wait_until(lambda: out.exists() and "HOPS_GPUS=" in out.read_text(), "the job's line", 60)
        # the job waited for the file the engine wrote when it adopted it
        assert "HOPS_GPUS=2 HOPS_METRICS_FILE=set" in out.read_text()
        js = engine.tracked[job]
        assert js.placements and sum(js.placements[-1]["config"].values()) == 2, js.placements
        # the next offer counts the job's GPUs as used
        after = offer.read(offering)
        assert after is not None
        node = next(iter(seen.gpu_config()))
        total = next(n.gpus_total for n in api.nodes() if n.name == node)
        assert {n: k for n, k, _ in after.nodes}.get(node, 0) == total - 2
        engine.round()  # a round keeps it where it runs (min_run_time)
        assert eng.detail(job).active and eng.detail(job).job_id == job


def test_no_offer_while_a_hops_job_waits_or_the_engine_is_gone(eng, offering: Path) -> None:  # noqa: ANN001
    eng.until_idle()
    api = CliSlurm(eng.cluster.env())
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        engine.refresh_and_fill()
        assert offer.read(offering) is not None
        too_big = _submit(eng, "64")  # no node has 64 GPUs: held, and it waits
        assert eng.detail(too_big).pending
        assert engine.monitor()
        assert offer.read(offering) is None, offering.read_text()  # closed: a Hops job waits
        held = _submit(eng, "1")
        assert eng.detail(held).pending and eng.detail(held).reservation != offer.RESERVATION
        subprocess.run(["scancel", too_big, held], env=eng.env, check=True, timeout=30)
        wait_until(lambda: not any(j.pending for j in eng.jobs().values()), "the jobs cancelled", 30)
        engine.refresh_and_fill()
        assert offer.read(offering) is not None  # nothing waits: open again
    assert offer.read(offering) is None  # the engine closed: no offers without it
    late = _submit(eng, "1")
    time.sleep(1.0)
    assert eng.detail(late).pending and eng.detail(late).priority == 0


def test_twenty_jobs_at_once_while_offers_are_open_never_share_gpus(eng, offering: Path) -> None:  # noqa: ANN001
    """M1: 20 jobs submitted at once while an offer is open: the hook gives at most one of them an offer (one
    job per offer, as of a time before the engine's read), the engine's next offers never give GPUs already
    given, and no GPU is promised to two jobs on an offer: per node, the offered jobs' GPUs fit."""
    eng.until_idle()
    api = CliSlurm(eng.cluster.env())
    with Engine(load_config(eng.config), api=api, env=eng.env) as engine:
        engine.refresh_and_fill()
        assert offer.read(offering) is not None
        jobs = [_submit(eng, "1,2") for _ in range(20)]
        for _ in range(3):
            engine.monitor()
            engine.refresh_and_fill()
        seen = {j: eng.detail(j) for j in jobs}
        on_offer = {j: s for j, s in seen.items() if offer.RESERVATION in s.reservation.split(",")}
        assert len(on_offer) <= 1, {j: (s.state, s.required_nodes, s.tres_per_node) for j, s in on_offer.items()}
        totals = {n.name: n.gpus_total for n in api.nodes()}
        given: dict[str, int] = {}
        for s in on_offer.values():
            for node, k in (s.gpu_config() or offer.requested_config(s)).items():
                given[node] = given.get(node, 0) + k
        assert all(k <= totals[n] for n, k in given.items()), given
        # every GPU index is held by one job at most
        held = [(n, i) for s in seen.values() if s.active for n, idx in s.gpu_alloc.items() for i in idx]
        assert len(held) == len(set(held))
        subprocess.run(["scancel", *jobs], env=eng.env, check=True, timeout=30)
