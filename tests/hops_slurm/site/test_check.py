"""``hops-slurm site check``'s judgement (hops_slurm/site/check.py) on what real Slurm 22.05, 24.11 and 26.05
printed (tests/data/site/<release>/: the site-shaped minicluster, tests/data/minicluster-site.toml), and on
22.05's output with one setting changed each time: every blocker is named, every warning says what it does to
jobs outside Hops."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hops_slurm.config import SiteConfig, parse_config
from hops_slurm.site.check import BLOCKERS, CONFLICT, GATE_EFFECT, MISSING, OK, WARN, Finding, check_site
from hops_slurm.site.facts import (HookFacts, SiteFacts, module_path_in, parse_partition_file, parse_partitions,
                                   parse_show_config, read_hook)
from hops_slurm.slurm.api import SlurmNode, SlurmReservation
from tests.tests_paths import DATA

RECORDED = DATA / "site" / "22.05"
RELEASES = ("22.05", "24.11", "26.05")
SITE_HOOK = DATA / "site" / "job_submit.lua"


def _config(**slurm: object) -> SiteConfig:
    return parse_config({"slurm": {"partitions": ["gpu-hops"], **slurm}})


def _nodes(untyped: bool = False) -> tuple[SlurmNode, ...]:
    return (SlurmNode(name="cpu-1", state="idle", partitions=("cpu",)),
            *(SlurmNode(name=f"gpu-{i}", state="idle", gpu_type="v100", gpus_total=4, partitions=("gpu",)) for i in (1, 2)),
            *(SlurmNode(name=f"hops-a100-{i}", state="idle", gpu_type="" if untyped else "a100", gpus_total=4,
                        partitions=("gpu-hops", "profiler")) for i in (1, 2)))


def _hook_dir(tmp_path: Path, hook: str | None = None, partitions: str | None = "hops-partitions 1\npartition gpu-hops\n") -> Path:
    (tmp_path / "job_submit.lua").write_text(SITE_HOOK.read_text() if hook is None else hook)
    (tmp_path / "hops_submit.lua").write_text("return {}\n")
    if partitions is not None:
        (tmp_path / "hops-partitions").write_text(partitions)
    return tmp_path


def _facts(tmp_path: Path, *, config: dict[str, str] | None = None, partitions: str | None = None,
           nodes: tuple[SlurmNode, ...] | None = None, reservations: tuple[SlurmReservation, ...] = (),
           hook: HookFacts | None = None, release: str = "22.05") -> SiteFacts:
    recorded = DATA / "site" / release
    shown = parse_show_config((recorded / "scontrol-show-config.txt").read_text())
    shown.update(config or {})
    parts = parse_partitions(partitions if partitions is not None else (recorded / "scontrol-show-partition.txt").read_text())
    if hook is None:
        hook = read_hook(_hook_dir(tmp_path), None)
    return SiteFacts(shown, parts, _nodes() if nodes is None else nodes, reservations, hook)


def _by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


@pytest.mark.parametrize("release", RELEASES)
def test_the_site_shaped_cluster_as_recorded_has_no_blocker_and_every_check_says_what_it_does_outside(
        tmp_path: Path, release: str) -> None:
    findings = check_site(_facts(tmp_path, release=release), _config())
    assert [f for f in findings if f.status != OK] == []
    checks = [f.check for f in findings]
    for name in ("release", "submit-plugin", "hook", "hook-module", "partition-file", "select-type", "gres-types",
                 "memory", "partition:gpu-hops", "gpus:gpu-hops", "overlap:gpu-hops", "profiler:profiler", "requeue",
                 "batch-sched-delay", "bf-interval", "preempt", "reservations"):
        assert name in checks
    assert all(f.outside and f.needs and f.found for f in findings)
    by = _by_check(findings)
    assert by["release"].found.startswith(release + ".")
    assert by["gpus:gpu-hops"].found == "2 of 2 nodes: 8 GPUs (a100)"
    assert by["memory"].found == "DefMemPerCPU=1000 (cluster-wide)"


@pytest.mark.parametrize(("setting", "check", "status", "words"), [
    ({"JobSubmitPlugins": "(null)"}, "submit-plugin", MISSING, "JobSubmitPlugins=(null)"),
    ({"SelectType": "select/cons_res"}, "select-type", CONFLICT, "select/cons_res"),
    ({"GresTypes": "mps"}, "gres-types", MISSING, "GresTypes=mps"),
    ({"JobRequeue": "0"}, "requeue", CONFLICT, "JobRequeue=0"),
    ({"SLURM_VERSION": "23.02.7"}, "release", CONFLICT, "23.02.7"),
    ({"SchedulerParameters": "bf_interval=1"}, "batch-sched-delay", WARN, "batch_sched_delay=3"),
    ({"SchedulerParameters": "batch_sched_delay=0,bf_max_job_test=100"}, "bf-interval", WARN, "bf_interval=30"),
    ({"PreemptType": "preempt/qos", "PreemptMode": "REQUEUE"}, "preempt", WARN, "preempt/qos"),
    ({"DefMemPerCPU": "UNLIMITED"}, "memory", MISSING, "no default memory on gpu-hops"),
])
def test_each_setting_hops_cannot_run_with_or_would_change_is_named(tmp_path: Path, setting: dict[str, str], check: str,
                                                                    status: str, words: str) -> None:
    findings = check_site(_facts(tmp_path, config=setting), _config())
    bad = [f for f in findings if f.status != OK]
    assert [(f.check, f.status) for f in bad] == [(check, status)]
    assert words in bad[0].found
    assert (status in BLOCKERS) == bad[0].blocker


def test_a_default_memory_on_the_hops_partition_alone_is_enough(tmp_path: Path) -> None:
    text = (RECORDED / "scontrol-show-partition.txt").read_text()
    text = re.sub(r"(PartitionName=gpu-hops .*?)DefMemPerNode=UNLIMITED", r"\1DefMemPerCPU=2000", text)
    memory = _by_check(check_site(_facts(tmp_path, config={"DefMemPerCPU": "UNLIMITED"}, partitions=text), _config()))["memory"]
    assert (memory.status, memory.found) == (OK, "gpu-hops: DefMemPerCPU=2000")
    # memory not consumable: no default needed
    memory = _by_check(check_site(_facts(tmp_path, config={"DefMemPerCPU": "UNLIMITED", "SelectTypeParameters": "CR_CORE"}),
                                  _config()))["memory"]
    assert memory.status == OK


def test_partitions_missing_default_or_shared_with_the_sites_own(tmp_path: Path) -> None:
    text = (RECORDED / "scontrol-show-partition.txt").read_text()
    missing = _by_check(check_site(_facts(tmp_path), _config(partitions=["gpu-hops", "h100"], profiler_partition="probes")))
    assert missing["partition:h100"].status == MISSING
    assert missing["profiler:probes"].status == MISSING
    default = re.sub(r"(PartitionName=gpu-hops .*?)Default=NO", r"\1Default=YES", text)
    found = _by_check(check_site(_facts(tmp_path, partitions=default), _config()))["partition:gpu-hops"]
    assert found.status == WARN and "every job that names no partition" in found.outside
    shared = re.sub(r"(PartitionName=gpu .*?)Nodes=gpu-\[1-2\]", r"\1Nodes=gpu-[1-2],hops-a100-1", text)
    overlap = _by_check(check_site(_facts(tmp_path, partitions=shared), _config()))["overlap:gpu-hops"]
    assert (overlap.status, overlap.found, overlap.outside) == (WARN, "shared with gpu: hops-a100-1", GATE_EFFECT)


def test_gpus_untyped_or_absent_on_the_hops_partition(tmp_path: Path) -> None:
    assert _by_check(check_site(_facts(tmp_path, nodes=_nodes(untyped=True)), _config()))["gpus:gpu-hops"].status == CONFLICT
    no_gpus = tuple(n.model_copy(update={"gpus_total": 0, "gpu_type": ""}) for n in _nodes())
    assert _by_check(check_site(_facts(tmp_path, nodes=no_gpus), _config()))["gpus:gpu-hops"].status == MISSING


def test_the_hook_must_call_the_module_and_the_module_and_partition_file_must_be_there(tmp_path: Path) -> None:
    plain = "function slurm_job_submit(j, p, u) return slurm.SUCCESS end\n-- dofile('/etc/slurm/hops_submit.lua')\n"
    hook = _by_check(check_site(_facts(tmp_path, hook=read_hook(_hook_dir(tmp_path, plain), None)), _config()))["hook"]
    assert hook.status == MISSING and "does not load the Hops module" in hook.found
    missing = read_hook(tmp_path / "nowhere", None)
    assert _by_check(check_site(_facts(tmp_path, hook=missing), _config()))["hook"].status == MISSING
    d = _hook_dir(tmp_path)
    (d / "hops_submit.lua").unlink()
    module = _by_check(check_site(_facts(tmp_path, hook=read_hook(d, None)), _config()))["hook-module"]
    assert module.status == MISSING and "slurmctld refuses to start" in module.outside
    for text, status, words in [(None, WARN, "missing"), ("hops-partitions 1\npartition gpu\n", CONFLICT, "disagree"),
                                ("hops-partitions 1\npartition h100\n", CONFLICT, "h100, which Slurm does not have"),
                                ("partition gpu-hops\n", CONFLICT, "first line"), ("hops-partitions 1\n", CONFLICT, "no partition")]:
        d = tmp_path / f"case{len(text or '')}"
        d.mkdir()
        _hook_dir(d, partitions=text)
        found = _by_check(check_site(_facts(tmp_path, hook=read_hook(d, None)), _config()))["partition-file"]
        assert (found.status, words in found.found) == (status, True), found


def test_the_module_is_found_where_the_site_hook_loads_it() -> None:
    assert module_path_in('local hops = dofile("/opt/hops/hooks/hops_submit.lua")\n') == Path("/opt/hops/hooks/hops_submit.lua")
    assert module_path_in('-- local hops = dofile("/opt/hops/hops_submit.lua")\n') is None
    assert module_path_in((DATA / "site" / "job_submit.lua").read_text()) is None  # computed from its own place
    assert parse_partition_file("hops-partitions 1\npartition a\n\npartition b.c\n") == (["a", "b.c"], "")
    assert parse_partition_file("hops-partitions 1\npartition a b\n")[1] == "line 2 is not 'partition <name>'"


def test_reservations_named_hops_that_the_engine_did_not_make(tmp_path: Path) -> None:
    engine = (SlurmReservation(name="hops-gate", nodes=("hops-a100-1",)), SlurmReservation(name="hops-j12", nodes=()))
    found = _by_check(check_site(_facts(tmp_path, reservations=engine), _config()))["reservations"]
    assert found.status == OK and "hops-gate" in found.found
    foreign = engine + (SlurmReservation(name="hops-maintenance", nodes=("gpu-1",)),)
    found = _by_check(check_site(_facts(tmp_path, reservations=foreign), _config()))["reservations"]
    assert (found.status, found.found) == (WARN, "not the engine's: hops-maintenance")


def test_slurm_output_that_is_not_what_scontrol_prints_is_one_line() -> None:
    with pytest.raises(ValueError, match=r"line 1: 'bad!' is not a partition name"):
        parse_partitions("PartitionName=bad! Nodes=a\n")
    with pytest.raises(ValueError, match="partition p: Nodes= does not expand"):
        parse_partitions("PartitionName=p Nodes=a[1-x]\n")
    assert parse_show_config("Configuration data as of x\nA = 1\n\nCgroup Support Configuration:\nA = 2\n") == {"A": "1"}


def test_the_complete_hook_hops_ships_counts_as_calling_the_module(tmp_path: Path) -> None:
    from hops_slurm.bundled import bundled

    shipped = bundled("hooks", "job_submit.lua").read_text()
    hook = _by_check(check_site(_facts(tmp_path, hook=read_hook(_hook_dir(tmp_path, shipped), None)), _config()))["hook"]
    assert (hook.status, hook.found) == (OK, f"calls job_submit and job_modify: {tmp_path / 'job_submit.lua'}")


def test_the_hook_directory_is_roots_alone_and_holds_plain_files(tmp_path: Path) -> None:
    """Issue 34, L2: the hook opens files there while slurmctld holds its job lock and cannot tell a FIFO from a
    file: `site check` names a FIFO, a directory, a writable or foreign directory as a conflict, and never
    opens a FIFO itself (this test would hang if it did)."""
    import os

    def _sub(parent: Path, name: str) -> Path:
        (parent / name).mkdir()
        return parent / name

    def hook_dir_finding(d: Path) -> Finding:
        return _by_check(check_site(_facts(tmp_path, hook=read_hook(d, None)), _config()))["hook-dir"]

    good = _hook_dir(_sub(tmp_path, "good"))
    good.chmod(0o755)
    assert hook_dir_finding(good).status == OK
    fifo = _hook_dir(_sub(tmp_path, "fifo"), partitions=None)
    os.mkfifo(fifo / "hops-partitions")
    os.mkfifo(fifo / "hops-offer")
    found = hook_dir_finding(fifo)
    assert found.status == CONFLICT and "hops-partitions is a FIFO" in found.found and "hops-offer is a FIFO" in found.found
    loose = _hook_dir(_sub(tmp_path, "loose"))
    loose.chmod(0o777)
    assert hook_dir_finding(loose).status == CONFLICT and "group or others may write" in hook_dir_finding(loose).found
    foreign = _hook_dir(_sub(tmp_path, "foreign"))
    foreign.chmod(0o755)
    os.chown(foreign, 65534, 65534)
    assert hook_dir_finding(foreign).status == CONFLICT and "owned by uid 65534" in hook_dir_finding(foreign).found
