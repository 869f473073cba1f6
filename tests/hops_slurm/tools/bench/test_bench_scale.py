"""The scale bench measures one small instance in a process of its own and reports it under the results header."""

from __future__ import annotations

from hops_slurm.tools.bench import scale


def test_a_small_instance_measured_in_a_child_is_reported_with_its_header_and_verdict() -> None:
    runs = [scale._in_child(64, 120, 1, generator, True) for generator in scale.GENERATORS]
    assert [r["generator"] for r in runs] == list(scale.GENERATORS)
    assert all(float(r["cold_cpu"]) > 0 and r["warm"] is not None and int(r["placed"]) > 0 for r in runs)
    cold_only = scale._in_child(64, 120, 1, "speeds", False)
    assert cold_only["warm"] is None and cold_only["objective"] == runs[0]["objective"]  # same instance, same plan
    assert cold_only["plan"] == runs[0]["plan"] != runs[1]["plan"] and len(str(runs[0]["plan"])) == 12
    rungs = [scale.Rung(64, 120, 1e6, 1e6, runs), scale.Rung(64, 120, 0.0, None, [cold_only])]
    text = scale.report(rungs, "Machine: test.", scale.command({"HOPS_BENCH_SEEDS": "1"}))
    assert text.splitlines()[0].startswith("# The planner at scale")
    assert "Written by `HOPS_BENCH_SEEDS=1 hops-slurm bench scale`" in text
    assert scale.command({}) == "hops-slurm bench scale"
    assert "| 64 | 120 | entity | 1 |" in text and "| – | – |" in text
    assert f"| {runs[1]['placed']} | {runs[1]['plan']} |" in text
    assert scale.plan_digest({"b": None, "a": {"n2": 1, "n1": 2}}) == scale.plan_digest({"a": {"n1": 2, "n2": 1}, "b": None})
    verdicts = [line for line in text.splitlines() if line.startswith("- 64 GPUs")]
    assert ": met (CPU time" in verdicts[0]
    assert ": NOT met" in verdicts[1]  # a 0 s target cannot be met
