"""profiler.jobenv: a training script's HOPS_* environment, read from the file the engine writes, waited for
when the job started before it (an offer), never waited for when the script already sourced it."""

from __future__ import annotations

from pathlib import Path

from hops_slurm.slurm.placement import write_job_env
from profiler.jobenv import load_job_env, parse_env_file


class Clock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s
        self.slept += s


def test_only_hops_keys_are_taken_from_the_engine_s_file(tmp_path: Path) -> None:
    write_job_env(tmp_path, "7", {"HOPS_GPUS": "4", "HOPS_LR": "0.1", "HOPS_CONFIG": "a100-1:4"})
    text = (tmp_path / "7.env").read_text() + "export PATH='/evil'\nexport HOPS_X='a b'\nnot a line\nexport HOPS_Q='unclosed\n"
    assert parse_env_file(text) == {"HOPS_GPUS": "4", "HOPS_LR": "0.1", "HOPS_CONFIG": "a100-1:4", "HOPS_X": "a b"}


def test_a_job_started_on_an_offer_waits_for_its_file(tmp_path: Path) -> None:
    env = {"HOPS_JOB_ENV_DIR": str(tmp_path), "SLURM_JOB_ID": "9"}
    clock = Clock()

    def sleep(s: float) -> None:  # the engine adopts the job after 0.5 s
        clock.sleep(s)
        if clock.t >= 0.5 and not (tmp_path / "9.env").exists():
            write_job_env(tmp_path, "9", {"HOPS_GPUS": "2", "HOPS_METRICS_FILE": "/m/runtime.jsonl"})

    got = load_job_env(env, wait=60.0, sleep=sleep, clock=clock.now)
    assert got == {"HOPS_GPUS": "2", "HOPS_METRICS_FILE": "/m/runtime.jsonl"} and env["HOPS_GPUS"] == "2"
    assert 0.5 <= clock.slept < 1.0


def test_no_file_within_the_wait_leaves_the_environment_alone(tmp_path: Path) -> None:
    env = {"HOPS_JOB_ENV_DIR": str(tmp_path), "SLURM_JOB_ID": "9", "HOPS_ENV_WAIT": "3"}
    clock = Clock()
    assert load_job_env(env, sleep=clock.sleep, clock=clock.now) == {}
    assert 3.0 <= clock.slept < 3.2 and "HOPS_GPUS" not in env


def test_a_script_that_sourced_its_file_never_waits(tmp_path: Path) -> None:
    clock = Clock()
    env = {"HOPS_JOB_ENV_DIR": str(tmp_path), "SLURM_JOB_ID": "9", "HOPS_GPUS": "8"}
    assert load_job_env(env, sleep=clock.sleep, clock=clock.now) == {} and clock.slept == 0.0
    assert load_job_env({"SLURM_JOB_ID": "9"}, sleep=clock.sleep, clock=clock.now) == {}  # not a Hops job
    assert load_job_env({"HOPS_JOB_ENV_DIR": str(tmp_path), "SLURM_JOB_ID": "../x"}, sleep=clock.sleep,
                        clock=clock.now) == {}  # a job id is digits


def test_an_odd_hops_env_wait_is_refused_and_the_default_used(tmp_path: Path) -> None:
    """nan, inf, negative, huge or overlong HOPS_ENV_WAIT: the default 60 s wait, never an hour or forever."""
    for odd in ("nan", "NaN", "inf", "-inf", "-5", "1e9", "3601", "1" * 40, "ten"):
        env = {"HOPS_JOB_ENV_DIR": str(tmp_path), "SLURM_JOB_ID": "9", "HOPS_ENV_WAIT": odd}
        clock = Clock()
        assert load_job_env(env, sleep=clock.sleep, clock=clock.now) == {}
        assert 60.0 <= clock.slept < 60.2, (odd, clock.slept)
