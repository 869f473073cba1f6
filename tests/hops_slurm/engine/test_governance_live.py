"""The site's limits on the live accounting minicluster (issue 23): slurmdbd with
``AccountingStorageEnforce=associations,limits,qos``, accounts and QOS made with ``sacctmgr``, the engine
run as cron would (``hops-slurm plan --once``).

Its own cluster (tests/data/minicluster-governance.toml, or the spec named by ``$HOPS_GOVERNANCE_SPEC``
so a parallel session uses its own ports): enforcing associations would refuse the jobs of users without
one, which the shared test cluster's other tests submit.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hops_slurm.tools.minicluster.cluster import Minicluster
from slurm_helpers import ensure_test_user, load_test_spec
from tests.tests_paths import DATA

pytestmark = pytest.mark.slurm

HOOK = Path(__file__).resolve().parents[3] / "hooks" / "job_submit.lua"
SPEC = Path(os.environ.get("HOPS_GOVERNANCE_SPEC") or DATA / "minicluster-governance.toml")
SCRIPT = """#!/bin/bash
#HOPS gpus={gpus} samples=1M batch-size=8 model=resnet18 lr=0.1@4
sleep 600
"""
PLAIN = """#!/bin/bash
sleep 75
"""


@pytest.fixture(scope="module")
def minicluster() -> Iterator[Minicluster]:
    """Overrides the shared cluster for this module: one that enforces the associations' limits."""
    if os.geteuid() != 0:
        pytest.fail("the governance tests run MariaDB, slurmdbd and Slurm daemons and need root (CI runs as root)")
    spec = load_test_spec(SPEC)
    assert spec.accounting and spec.enforce_limits, f"{SPEC}: needs accounting = true and enforce_limits = true"
    cluster = Minicluster(spec, job_submit_lua=HOOK)
    cluster.down()
    cluster.up()
    yield cluster
    cluster.down()


def sacctmgr(cluster: Minicluster, *args: str) -> None:
    proc = cluster.run(["sacctmgr", "-i", *args], check=False)
    text = proc.stdout + proc.stderr
    # an earlier run left it (22.05 says "Nothing new added", 24.11 and later "Already existing ...")
    assert proc.returncode == 0 or any(s in text for s in (
        "Nothing new added", "Nothing modified", "Already existing", "didn't affect anything")), text


def submit(eng, account: str, gpus: str = "4", qos: str = "", user: str = "", plain: str = "",  # noqa: ANN001
           opts: str = "") -> str:
    """A ``#HOPS`` job (``plain``: a plain job with these extra sbatch options instead; ``opts``: extra
    sbatch options of a ``#HOPS`` job)."""
    script = eng.workdir / f"gov{len(eng.submitted)}.sh"
    script.write_text(PLAIN if plain else SCRIPT.format(gpus=gpus))
    script.chmod(0o755)
    argv = ["sbatch", "--parsable", "-A", account, "-o", "/dev/null", "-D", str(eng.workdir), *plain.split(),
            *opts.split(), str(script)]
    if qos:
        argv[2:2] = ["--qos", qos]
    if user:
        argv = eng.cluster.user_argv(user, argv, eng.workdir)
    deadline = time.monotonic() + 30.0
    while True:  # slurmctld hears of a new association or QOS from slurmdbd a moment after sacctmgr
        out = subprocess.run(argv, env=eng.env, capture_output=True, text=True, timeout=30, check=False)
        if out.returncode == 0 or time.monotonic() > deadline or "Invalid" not in out.stderr:
            break
        time.sleep(0.5)
    assert out.returncode == 0, out.stderr
    job_id = out.stdout.strip().split(";")[0]
    eng.submitted.append(job_id)
    return job_id


def gpus_running(eng, ids: set[str]) -> int:  # noqa: ANN001
    return sum(sum(j.gpu_config().values()) for j in eng.api.jobs() if j.job_id in ids and j.active)


def queue_plans(eng) -> dict[str, str]:  # noqa: ANN001
    proc = eng.hops("queue", "--config", str(eng.config), "--json")
    assert proc.returncode == 0, proc.stderr
    return {r["jobid"]: r["plan"] for r in json.loads(proc.stdout)["jobs"]}


def run_until(eng, capped: set[str], cap: int, done, timeout: float = 120.0) -> list[dict]:  # noqa: ANN001
    """``plan --once`` until ``done()``; after every planning neither the plan nor Slurm has more than
    ``cap`` GPUs on the ``capped`` jobs."""
    plans = []
    deadline = time.monotonic() + timeout
    while True:
        out = eng.plan_once()
        plans.append(out)
        planned = sum(sum(c.values()) for j, c in dict(out.get("assignments", {})).items() if j in capped and c)
        assert planned <= cap, f"plan gives the capped jobs {planned} GPUs > {cap}: {out}\n{eng.describe()}"
        assert gpus_running(eng, capped) <= cap, eng.describe()
        if done():
            return plans
        assert time.monotonic() < deadline, f"not reached in {timeout} s: {plans[-1]}\n{eng.describe()}"
        time.sleep(1.0)


def test_an_account_limited_to_8_gpus_never_gets_more_and_the_others_wait_with_the_limit(eng) -> None:  # noqa: ANN001
    eng.until_idle()
    sacctmgr(eng.cluster, "add", "account", "physics")
    sacctmgr(eng.cluster, "modify", "account", "physics", "set", "GrpTRES=gres/gpu=8")  # also when it was there
    sacctmgr(eng.cluster, "add", "account", "chem")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=physics,chem")
    physics = {submit(eng, "physics") for _ in range(3)}
    other = submit(eng, "chem")
    # 16 GPUs, 16 asked for: without the limit all four would run; with it the third physics job waits
    run_until(eng, physics, 8, lambda: gpus_running(eng, physics) == 8 and gpus_running(eng, {other}) == 4)
    for _ in range(3):  # later rounds keep it so, GPUs idle or not
        run_until(eng, physics, 8, lambda: True)
    waiting = [j for j in physics if not eng.detail(j).active]
    assert len(waiting) == 1, eng.describe()
    plans = queue_plans(eng)
    assert plans[waiting[0]].startswith("limit: AssocGrpGRES: account=physics gres/gpu=8"), plans


def test_a_qos_per_user_limit_holds_likewise(eng) -> None:  # noqa: ANN001
    eng.until_idle()
    sacctmgr(eng.cluster, "add", "qos", "gpu4", "MaxTRESPerUser=gres/gpu=4")
    sacctmgr(eng.cluster, "add", "account", "bio")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=bio")
    sacctmgr(eng.cluster, "modify", "user", "root", "where", "account=bio", "set", "QOS=normal,gpu4")
    limited = {submit(eng, "bio", gpus="2", qos="gpu4") for _ in range(3)}
    run_until(eng, limited, 4, lambda: gpus_running(eng, limited) == 4)
    run_until(eng, limited, 4, lambda: True)
    waiting = [j for j in limited if not eng.detail(j).active]
    assert len(waiting) == 1, eng.describe()
    plans = queue_plans(eng)
    assert plans[waiting[0]].startswith("limit: QOSMaxGRESPerUser: qos=gpu4 user=root gres/gpu=4"), plans


def test_a_per_gpu_type_limit_is_read_as_slurm_prints_it_and_held(eng) -> None:  # noqa: ANN001
    """``GrpTRES=gres/gpu:a100=4`` (issue 33, item 10; the cluster counts ``gres/gpu:a100``): sacctmgr prints
    it as the reader expects; three 2-GPU jobs of the account on 16 idle a100s: two run, the third waits
    with the typed limit named, and no planning gives the account more than 4 a100s."""
    from hops_slurm.slurm.assoc import ASSOC_ARGV, parse_assoc

    eng.until_idle()
    sacctmgr(eng.cluster, "add", "account", "vision")
    sacctmgr(eng.cluster, "modify", "account", "vision", "set", "GrpTRES=gres/gpu:a100=4")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=vision")
    rows = parse_assoc(eng.cluster.run(ASSOC_ARGV).stdout)
    (vision,) = [a for a in rows if a.account == "vision" and not a.user]
    assert vision.grp_gpus_typed == (("a100", 4),) and vision.grp_gpus is None and not vision.unreadable
    jobs = {submit(eng, "vision", gpus="2") for _ in range(3)}
    run_until(eng, jobs, 4, lambda: gpus_running(eng, jobs) == 4)
    run_until(eng, jobs, 4, lambda: True)
    waiting = [j for j in jobs if not eng.detail(j).active]
    assert len(waiting) == 1, eng.describe()
    plans = queue_plans(eng)
    assert plans[waiting[0]].startswith("limit: AssocGrpGRES: account=vision gres/gpu:a100=4"), plans
    eng.cluster.run(["scancel", *jobs], check=False)


def test_partition_limits_hold_jobs_back_with_the_limit_named(eng) -> None:  # noqa: ANN001
    """``MaxNodes=1`` and ``MaxTime=01:00:00`` on the engine's partition (two 8-GPU nodes): a 12-GPU job
    (no node holds 12) and a job asking 2 h wait with Slurm's reason in ``hops-slurm queue`` and are never
    released; a job that may take 4, 8 or 12 GPUs runs on one node."""
    eng.until_idle()
    sacctmgr(eng.cluster, "add", "account", "part")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=part")
    eng.cluster.run(["scontrol", "update", "PartitionName=hops", "MaxNodes=1", "MaxTime=01:00:00"])
    ids: list[str] = []
    try:
        wide = submit(eng, "part", gpus="12")
        long = submit(eng, "part", gpus="2", opts="-t 02:00:00")
        fits = submit(eng, "part", gpus="4,8,12")
        ids = [wide, long, fits]
        out = eng.until_planned([fits], placed=True, timeout=120.0)
        eng.wait(lambda: eng.detail(fits).active, 60.0, "the job that fits running")
        for _ in range(2):  # later plannings keep them waiting, GPUs idle or not
            out = eng.plan_once()
            assert not out["assignments"].get(wide) and not out["assignments"].get(long), out
            time.sleep(1.0)
        assert len(eng.detail(fits).gpu_config()) == 1, eng.describe()
        assert not eng.detail(wide).active and not eng.detail(long).active, eng.describe()
        plans = queue_plans(eng)
        assert plans[wide].startswith("limit: PartitionNodeLimit: partition=hops MaxNodes=1"), plans
        assert plans[long].startswith("limit: PartitionTimeLimit: partition=hops MaxTime=01:00:00"), plans
    finally:
        eng.cluster.run(["scontrol", "update", "PartitionName=hops", "MaxNodes=UNLIMITED", "MaxTime=UNLIMITED"])
        if ids:
            eng.cluster.run(["scancel", *ids], check=False)


def fair_shares(eng) -> dict[tuple[str, str], float]:  # noqa: ANN001
    from hops_slurm.slurm.assoc import SSHARE_ARGV, parse_sshare

    return parse_sshare(eng.cluster.run(SSHARE_ARGV).stdout)


def test_two_users_fair_share_moves_the_order_as_configured(eng) -> None:  # noqa: ANN001
    """root uses all 16 GPUs for a while, the test user nothing; then both submit a 16-GPU job, root
    first. Latency ratio alone would serve root's (it has waited longer); with ``fairshare_weight`` the
    test user's comes first, as Slurm's own FairShare (sshare) says it should."""
    eng.until_idle()
    user = ensure_test_user()
    sacctmgr(eng.cluster, "add", "account", "share")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=share")
    sacctmgr(eng.cluster, "add", "user", user, "Account=share")
    usage = submit(eng, "share", plain="-p profiler --gres=gpu:8 -N 2")
    eng.wait(lambda: eng.detail(usage).active, 60.0, "root's usage job running")
    deadline = time.monotonic() + 240
    while True:  # slurmctld adds usage every PriorityCalcPeriod (1 min on this cluster)
        shares = fair_shares(eng)
        if shares.get(("share", "root"), 1.0) < shares.get(("share", user), 0.0):
            break
        assert time.monotonic() < deadline, f"sshare never put root below {user}: {shares}"
        time.sleep(5.0)
    eng.wait(lambda: not (eng.detail(usage).pending or eng.detail(usage).active), 120.0, "root's usage job ended")
    text = eng.config.read_text()
    assert "[planner]\n" in text
    eng.config.write_text(text.replace("[planner]\n", "[planner]\nfairshare_weight = 10\n", 1))
    try:
        first = submit(eng, "share", gpus="16")
        time.sleep(2.0)
        second = submit(eng, "share", gpus="16", user=user)
        out = run_until(eng, {first, second}, 16, lambda: eng.detail(second).active)
        prios = dict(out[-1]["priorities"])
        assert prios[second] > prios[first], out[-1]
        assert not eng.detail(first).active
        proc = eng.hops("queue", "--config", str(eng.config), "--json")
        rows = {r["jobid"]: r for r in json.loads(proc.stdout)["jobs"]}
        # by latency ratio alone root's job would come first: it has waited longer for the same age
        assert rows[first]["lr"] >= rows[second]["lr"], rows
    finally:
        eng.config.write_text(text)


JOBSTATS = "JS1:H4sIAAAAAAAAA6tWKkktLlGyUlAqS8wpTtVRSsrPz1ayMjQwAAB4Ut2VHQAAAA=="
#: the queue's fields that do not move with the clock (priority, LR, wait, age and done do)
STABLE = ("jobid", "name", "user", "state", "history", "window", "plan")


def stable_queue(eng, ids: set[str]) -> dict[str, dict]:  # noqa: ANN001
    proc = eng.hops("queue", "--config", str(eng.config), "--json")
    assert proc.returncode == 0, proc.stderr
    return {r["jobid"]: {f: r[f] for f in STABLE} for r in json.loads(proc.stdout)["jobs"] if r["jobid"] in ids}


def stored(eng, ids: set[str]) -> dict[str, object]:  # noqa: ANN001
    from hops_slurm.engine.state import EngineState

    state = EngineState.read_only(eng.state_dir / "engine.sqlite")
    try:
        return {j: (s.directives, s.placements) for j, s in state.jobs(active_only=False).items() if j in ids}
    finally:
        state.close()


def test_replacing_the_admin_comment_of_a_running_job_changes_nothing(eng) -> None:  # noqa: ANN001
    """Princeton's jobstats writes its summary into AdminComment, where the submit hook keeps the #HOPS form:
    after ``scontrol update AdminComment=`` on running Hops jobs, the engine's plan, its queue, its stored
    forms and the jobs' placements are what they were, and when one of them ends a new job is placed on the
    GPUs it freed (hops_slurm/engine/coexist.py; as in tests/hops_slurm/engine/test_engine_coexist.py)."""
    eng.until_idle()
    sacctmgr(eng.cluster, "add", "account", "coexist")
    sacctmgr(eng.cluster, "add", "user", "root", "Account=coexist")
    ids = [submit(eng, "coexist", gpus="1,2,4") for _ in range(3)]
    eng.until_planned(ids, placed=True)
    eng.wait(lambda: all(eng.detail(j).active for j in ids), 60.0, "the jobs running")
    before = eng.plan_once()
    assert all(before["assignments"].get(j) for j in ids), before
    queue, kept = stable_queue(eng, set(ids)), stored(eng, set(ids))
    started = {j: (eng.detail(j).start_time, eng.detail(j).gpu_config()) for j in ids}
    for j in ids:
        eng.cluster.run(["scontrol", "update", f"JobId={j}", f"AdminComment={JOBSTATS}"])
        assert eng.detail(j).admin_comment == JOBSTATS  # Slurm took the other tool's text
    for _ in range(2):  # a plan after the change, and the round after it
        after = eng.plan_once()
        assert {j: after["assignments"].get(j) for j in ids} == {j: before["assignments"].get(j) for j in ids}, \
            f"{before}\n{after}\n{eng.describe()}"
        assert stable_queue(eng, set(ids)) == queue
        assert stored(eng, set(ids)) == kept
        time.sleep(2.0)
    eng.cluster.run(["scancel", ids[0]])
    eng.wait(lambda: not eng.detail(ids[0]).active, 60.0, "the first job over")
    wide = submit(eng, "coexist", gpus="1,2,4,8,12")
    out = eng.until_planned([wide], placed=True, timeout=90.0)
    rest = ids[1:]
    assert {j: out["assignments"].get(j) for j in rest} == {j: before["assignments"].get(j) for j in rest}, out
    assert {j: (eng.detail(j).start_time, eng.detail(j).gpu_config()) for j in rest} == \
        {j: started[j] for j in rest}  # never requeued
    assert all(eng.detail(j).admin_comment == JOBSTATS for j in rest)  # the engine leaves the other tool's text
