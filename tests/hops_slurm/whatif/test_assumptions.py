"""The documented assumptions: requirement set from the rigid request, model, total samples from the
recorded run time; the TOML overrides, validated strictly; #HOPS admin comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from hops_slurm.errors import ConfigError
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.whatif.assumptions import Assumptions, assumed_limits, derive, derive_all, halving_set, load_assumptions
from hops_slurm.whatif.history import HistoryJob, Problem


def hj(job_id: str = "1", gpus: int = 8, run: float = 3600.0, **over: object) -> HistoryJob:
    base = dict(job_id=job_id, where=f"line {job_id}", name="train-x", user="alice", partition="gpu",
                state="COMPLETED", submit=1000.0, start=1100.0, end=1100.0 + run, gpus=gpus)
    base.update(over)
    return HistoryJob(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("rigid", "halvings", "want"), [
    (8, 2, (2, 4, 8)), (6, 2, (1, 3, 6)), (1, 2, (1,)), (16, 0, (16,)), (3, 6, (1, 3)),
])
def test_halving_set(rigid: int, halvings: int, want: tuple[int, ...]) -> None:
    assert halving_set(rigid, halvings) == want


def test_default_job_runs_as_long_at_its_recorded_count() -> None:
    truth = GroundTruth()
    d = derive(hj(gpus=4, run=1800.0), 1000.0, Assumptions(), truth, 64, 8)
    assert d.spec.model == "ResNet-50 (batch size 64)" and d.spec.requirements == (1, 2, 4)
    assert d.spec.arrival == 0.0 and d.source == "default" and d.gpu_type == "v100"
    rate = truth.samples_per_second(d.spec.model, "v100", 4, False)
    assert d.spec.total_samples == pytest.approx(1800.0 * rate)


def test_recorded_gpu_type_is_used_when_the_simulator_knows_it() -> None:
    truth = GroundTruth()
    d = derive(hj(gpus=2, gpu_type="k80"), 1000.0, Assumptions(), truth, 64, 8)
    assert d.gpu_type == "k80"
    assert d.spec.total_samples == pytest.approx(3600.0 * truth.samples_per_second(d.spec.model, "k80", 2, False))
    assert derive(hj(gpus=2, gpu_type="a100"), 1000.0, Assumptions(), truth, 64, 8).gpu_type == "v100"


def test_overrides_first_match_wins(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_text('[defaults]\nmodel = "Transformer"\nhalvings = 1\n\n'
                 '[[job]]\nuser = "alice"\nname_prefix = "train-"\nmodel = "LM"\nrequirements = [8, 2]\n\n'
                 '[[job]]\nuser = "alice"\nsamples = 5.0e6\n')
    a = load_assumptions(f)
    truth = GroundTruth()
    d = derive(hj(), 1000.0, a, truth, 64, 8)
    assert (d.source, d.spec.model, d.spec.requirements) == ("override", "LM (batch size 20)", (2, 8))
    other = derive(hj(name="eval"), 1000.0, a, truth, 64, 8)
    assert other.spec.total_samples == 5.0e6 and other.spec.requirements == (4, 8)
    bob = derive(hj(user="bob"), 1000.0, a, truth, 64, 8)
    assert bob.source == "default" and bob.spec.model.startswith("Transformer")


@pytest.mark.parametrize(("text", "needle"), [
    ('[defaults]\nhalvings = "2"\n', "defaults.halvings"),
    ('[defaults]\nhalvings = 9\n', "less than or equal to 6"),
    ('[defaults]\nmodel = "GPT-5"\n', "unknown model"),
    ('[defaults]\ngpu_type = "h100"\n', "use one of"),
    ('[defaults]\ncolour = "red"\n', "unknown key"),
    ('[[job]]\nmodel = "LM"\n', "at least one match key"),
    ('[[job]]\nuser = "a"\nrequirements = [2, 2]\n', "distinct"),
    ('[[job]]\nuser = "a"\nsamples = -1.0\n', "greater than 0"),
    ("not toml = = 1", "not valid TOML"),
])
def test_bad_assumptions_file_names_the_key(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "a.toml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        load_assumptions(f)


def test_hops_admin_comment_gives_requirements_and_model() -> None:
    job = hj(hops="gpus=1,2,4 samples=1000000 batch-size=32 model=gpt2", gpus=4)
    d = derive(job, 1000.0, Assumptions(), GroundTruth(), 64, 8)
    assert (d.source, d.spec.requirements, d.spec.model) == ("hops", (1, 2, 4), "LM (batch size 20)")
    off = Assumptions.model_validate({"defaults": {"use_hops_comments": False}})
    assert derive(job, 1000.0, off, GroundTruth(), 64, 8).source == "default"


def test_jobs_that_cannot_be_replayed_are_problems() -> None:
    problems: list[Problem] = []
    jobs = [hj("1", gpus=2), hj("2", gpus=128), hj("3", hops="gpus=banana")]
    out = derive_all(jobs, Assumptions(), 64, 8, problems)
    assert [d.spec.job_id for d in out] == ["1"]
    assert [p.where for p in problems] == ["line 2", "line 3"]
    assert "held 128 GPUs, the simulated cluster has 64" in problems[0].message
    assert "not a valid #HOPS form" in problems[1].message


def test_single_gpu_model_with_many_gpus_is_refused() -> None:
    a = Assumptions.model_validate({"defaults": {"model": "A3C"}})
    problems: list[Problem] = []
    assert derive_all([hj(gpus=4)], a, 64, 8, problems) == []
    assert "runs on one GPU only" in problems[0].message
    assert derive_all([hj(gpus=1)], a, 64, 8, problems)[0].spec.requirements == (1,)


def test_time_limits_recorded_or_the_longest_run_of_the_partition() -> None:
    """Slurm's backfill plans with time limits: the recorded one when the export has it, else one limit for
    the partition, its longest recorded run (a partition's default applies to all its jobs alike)."""
    jobs = [hj("1", run=600.0), hj("2", run=1800.0), hj("3", run=60.0, time_limit=900.0),
            hj("4", run=300.0, partition="debug"), hj("5", run=0.0, start=None, end=None, partition="empty")]
    assert assumed_limits(jobs) == {"gpu": 1800.0, "debug": 300.0, "empty": 1800.0}
    derived = {d.spec.job_id: d for d in derive_all(jobs[:4], Assumptions(), 64, 8, [])}
    assert {j: (d.spec.time_limit, d.limit_source) for j, d in derived.items()} == {
        "1": (1800.0, "assumed"), "2": (1800.0, "assumed"), "3": (900.0, "recorded"), "4": (300.0, "assumed")}
