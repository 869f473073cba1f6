"""Coexisting with tools that write AdminComment (issue 23): Princeton's jobstats replaces a job's
AdminComment with its summary; the engine keeps the ``#HOPS`` form it stored when it first saw the job
(hops_slurm.engine.coexist), so its plans and its records are the same as if nothing had been written.

Two engines over two stand-in clusters (tests/hops_slurm/engine/standin.py) on one virtual clock are
driven in lock-step; in one, the running jobs' AdminComment is replaced after they start."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.config import parse_config
from hops_slurm.engine.engine import Engine
from hops_slurm.report.source import open_source
from standin import StandInSlurm

JOB = "gpus=1,2,4 samples=100000 batch-size=8 model=resnet18"
JOBSTATS = 'JS1:H4sIAAAAAAAAA6tWKkktLlGyUlAqS8wpTtVRSsrPz1ayMjQwAAB4Ut2VHQAAAA=='


def _engine(state: Path, api: StandInSlurm) -> Engine:
    config = parse_config({"engine": {"settle_timeout": 0.5, "probe_size": "tiny"}, "paths": {"state_dir": str(state)}})
    engine = Engine(config, api=api).open()
    assert engine.state is not None
    engine.state.remember_model("root/resnet18|b8|tiny", "sig-resnet18", ["a100"])  # profiled: no probe job
    return engine


def _records(engine: Engine) -> list[dict]:
    rows = open_source(engine.records_path).load().jobs
    return sorted((r.model_dump(exclude={"age_estimate"}) for r in rows), key=lambda r: r["job_id"])


def test_replacing_the_admin_comment_of_running_jobs_changes_no_plan_and_no_record(tmp_path: Path) -> None:
    apis = [StandInSlurm(gpus_per_node=8, starts=True), StandInSlurm(gpus_per_node=8, starts=True)]
    for api in apis:
        api.clock = 10_000.0
        for j in ("1", "2", "3"):
            api.submit(j, JOB)
    engines = [_engine(tmp_path / "plain", apis[0]), _engine(tmp_path / "jobstats", apis[1])]
    try:
        plans: list[list[dict]] = [[], []]
        for step in range(6):
            for k, (api, engine) in enumerate(zip(apis, engines)):
                if k == 1 and step >= 1:  # after the first round: jobstats writes into every running job
                    for job in api.jobs():
                        if job.active and not job.admin_comment.startswith(JOBSTATS):
                            api._change(job.job_id, admin_comment=JOBSTATS)
                planning = engine.full_round()
                plans[k].append({j: dict(c or {}) for j, c in planning.plan.assignments.items()} if planning else {})
                api.clock = (api.clock or 0.0) + 400.0
            if step == 2:  # one job ends, the others keep running; a new job comes
                for api in apis:
                    api.end("1")
                    api.submit("4", "gpus=1,2,4,8,12 samples=100000 batch-size=8 model=resnet18")
        assert any(j.admin_comment == JOBSTATS for j in apis[1].jobs())  # the comment was really replaced
        assert plans[0] == plans[1]  # without the stored form: job 4 finds no GPU at step 3
        assert any(plans[0][1].values())
        for engine in engines:
            engine.refresh()
        assert _records(engines[0]) == _records(engines[1])
        assert {j: s.directives for j, s in engines[1].tracked.items()} == \
            {j: s.directives for j, s in engines[0].tracked.items()}
    finally:
        for engine in engines:
            engine.close()
