"""Fair share in simulation (issue 23): a heavy user's backlog cannot starve light users once the queue
priority weighs the owners' fair-share standing (hops_slurm.sim.fairshare, planner.fairshare)."""

from __future__ import annotations

from hops_slurm.tools.bench.fairshare_bench import groups
from hops_slurm.sim import runner
from hops_slurm.sim.sim_backend import SimBackend
from hops_slurm.sim.cluster_spec import load_cluster
from hops_slurm.sim.fairshare import sim_standing
from hops_slurm.sim.groundtruth import GroundTruth
from hops_slurm.sim.workload import JobSpec

R50 = "ResNet-50 (batch size 64)"
THR4 = GroundTruth().samples_per_second(R50, "v100", 4, False)


def tiny(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\n[profiler]\ngpus_per_type = 2\nprobe_seconds = 60.0\n'
                    '[[server_kind]]\nname = "v"\ngpu_type = "v100"\ngpus = 4\ncount = 2\nspeed = 1.0\n')
    return load_cluster(path)


def workload() -> tuple[JobSpec, ...]:
    """The heavy user queues 12 jobs of ~30 min on 4 GPUs at once; ten light users one each, later."""
    heavy = tuple(JobSpec(f"h{k}", 0.0, R50, (4,), THR4 * 1800.0, user="heavy") for k in range(12))
    light = tuple(JobSpec(f"l{k}", 900.0 + 300.0 * k, R50, (4,), THR4 * 1800.0, user=f"light{k}") for k in range(10))
    return heavy + light


def test_light_users_wait_less_and_their_max_lr_drops_with_the_fair_share_weight(tmp_path) -> None:
    cluster, jobs = tiny(tmp_path), workload()
    plain = groups(runner.simulate(cluster, jobs, "hops", 0).jobs)
    # the weight is in latency-ratio units: this backlog drives LRs to ~10, so 10 makes the standing count
    fair = groups(runner.simulate(cluster, jobs, "hops:fairshare_weight=10", 0).jobs)
    assert plain["light"].jobs == fair["light"].jobs == 10
    assert fair["light"].avg_wait < 0.75 * plain["light"].avg_wait  # measured: 212 -> 89 min
    assert fair["light"].max_lr < 0.75 * plain["light"].max_lr  # 15.9 -> 8.3
    assert fair["light"].gpu_hours_share >= plain["light"].gpu_hours_share - 1e-9


def test_the_standing_falls_with_use_and_is_one_for_a_user_who_used_nothing(tmp_path) -> None:
    jobs = workload()
    backend = SimBackend(tiny(tmp_path), jobs)
    backend.wait_until(0.0)
    backend.job_views(fragment=False)
    assert set(sim_standing(backend).values()) <= {1.0}  # nobody has run yet
    from hops_slurm.core.rounds import LoopSettings, run_rounds
    from planner.policies import make_policy

    run_rounds(backend, make_policy("hops"), LoopSettings(360.0, 30.0), max_rounds=3)
    standing = sim_standing(backend)
    heavy = {v for k, v in standing.items() if k.startswith("h")}
    light = {v for k, v in standing.items() if k.startswith("l")}
    assert heavy and max(heavy) < 1.0
    assert not light or min(light) == 1.0  # a light job waiting has an owner who has used nothing yet


def test_usage_kept_run_by_run_equals_summing_every_run_again() -> None:
    """:class:`hops_slurm.sim.fairshare.DecayedUsage` sums each ended run once; at any later time its
    usage equals planner.fairshare.decayed_usage over every run (the simulator's earlier way)."""
    import random
    from types import SimpleNamespace

    import pytest

    from hops_slurm.sim.fairshare import HALF_LIFE, DecayedUsage
    from planner.fairshare import decayed_usage

    rng = random.Random(3)
    jobs = tuple(SimpleNamespace(spec=SimpleNamespace(user=f"u{i % 3}", job_id=f"j{i}"),
                                 ledger=SimpleNamespace(placements=[])) for i in range(6))
    kept, t = DecayedUsage(HALF_LIFE), 0.0
    for _ in range(400):
        t += rng.uniform(60.0, 7200.0)
        job = rng.choice(jobs)
        runs = job.ledger.placements
        if runs and runs[-1]["end"] is None:
            runs[-1]["end"] = t - rng.uniform(0.0, 30.0)
        else:
            runs.append({"start": t, "end": None, "config": {"n1": rng.choice((1, 2, 4))}})
        now = t + rng.uniform(0.0, 600.0)
        every = [(j.spec.user, float(sum(p["config"].values())), p["start"], p["end"] if p["end"] is not None else now)
                 for j in jobs for p in j.ledger.placements]
        want = decayed_usage(every, now, HALF_LIFE)
        got = kept.usage(jobs, now)
        assert set(want) <= set(got) and all(got[u] == pytest.approx(want.get(u, 0.0), rel=1e-9, abs=1e-6) for u in got)
    assert sum(kept.counted.values()) > 100  # most runs were summed once, not again
    assert DecayedUsage(0.0).usage(jobs, t) == {"u0": 0.0, "u1": 0.0, "u2": 0.0}
