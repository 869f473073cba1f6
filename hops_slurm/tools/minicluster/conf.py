"""Render slurm.conf, gres.conf (and slurmdbd.conf) for a minicluster spec. Pure: text in, text out.

Settings follow the verified facts for Slurm 22.05 on Debian 12: one ``slurmd -N`` per node with its own
port, all at 127.0.0.1; fake GPUs as character devices listed in gres.conf with ``AutoDetect=off``;
``config_overrides`` so overstated CPUs/memory do not make nodes INVAL; ``DefMemPerCPU`` so jobs share
nodes; ``bf_interval=1,batch_sched_delay=0`` so a released job starts at the next scheduling pass (within a
second, often at once) rather than waiting out the event-scheduling delay (3 s by default).
"""

from __future__ import annotations

from pathlib import Path

from hops_slurm.tools.minicluster.spec import MiniclusterSpec


def device_paths(spec: MiniclusterSpec, node: str) -> list[Path]:
    """The fake GPU device files of ``node`` (``<state>/dev/<node>/gpu0`` ...)."""
    group = spec.group_of(node)
    return [spec.state_dir / "dev" / node / f"gpu{i}" for i in range(group.gpus)]


def render_hops_partitions(names: list[str]) -> str:
    """The hook's ``hops-partitions`` file (docs/admin-guide.md, "Hops partitions"): the first is the default."""
    return "hops-partitions 1\n" + "".join(f"partition {n}\n" for n in names)


def render_slurm_conf(spec: MiniclusterSpec, hostname: str, job_submit_lua: bool = False) -> str:
    s = spec.state_dir
    lines = [
        "# Written by hops-slurm minicluster; regenerated on every `up`.",
        f"ClusterName={spec.cluster_name}",
        f"SlurmctldHost={hostname}",
        f"SlurmctldPort={spec.ports.slurmctld}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={s / 'run' / 'munge.socket'}",
        f"StateSaveLocation={s / 'ctld'}",
        f"SlurmdSpoolDir={s / 'spool' / '%n'}",
        f"SlurmctldPidFile={s / 'run' / 'slurmctld.pid'}",
        f"SlurmdPidFile={s / 'run' / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={s / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={s / 'log' / 'slurmd-%n.log'}",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        "GresTypes=gpu",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=bf_interval=1,batch_sched_delay=0",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "DefMemPerCPU=1000",
        "MinJobAge=300",
        "KillWait=5",
        "InactiveLimit=0",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=60",
        "JobRequeue=1",
        f"JobCompType=jobcomp/filetxt",
        f"JobCompLoc={s / 'log' / 'jobcomp.txt'}",
    ]
    if spec.max_job_count is not None:
        lines.append(f"MaxJobCount={spec.max_job_count}")
    if job_submit_lua:
        lines.append("JobSubmitPlugins=lua")
    if spec.accounting:
        lines += [
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={spec.ports.slurmdbd}",
            # Connections to slurmdbd (slurmctld's and sacct's) use the munge socket named here, not AuthInfo.
            f"AccountingStoragePass={s / 'run' / 'munge.socket'}",
            "AccountingStorageTRES=gres/gpu",
            "JobAcctGatherType=jobacct_gather/linux",
        ]
        if spec.enforce_limits:
            # a site that caps GPU types counts them per type too (gres/gpu:a100=N limits: docs/governance.md)
            types = sorted({g.gpu_type for g in spec.nodes if g.gpus and g.gpu_type})
            lines[-2] = "AccountingStorageTRES=" + ",".join(["gres/gpu"] + [f"gres/gpu:{t}" for t in types])
            lines.append("AccountingStorageEnforce=associations,limits,qos")
        if spec.multifactor:
            # fair share decays with a short half-life so a test sees it move; weights as a site would set them
            lines += ["PriorityType=priority/multifactor", "PriorityDecayHalfLife=00:10:00", "PriorityCalcPeriod=1",
                      "PriorityWeightFairshare=100000", "PriorityWeightAge=1000", "PriorityWeightJobSize=0",
                      "PriorityWeightPartition=0", "PriorityWeightQOS=0", "PriorityMaxAge=1-0"]
    else:
        lines.append("AccountingStorageType=accounting_storage/none")
    for group in spec.nodes:
        features = group.server_class or group.gpu_type
        for node in group.node_names():
            gres = f" Gres=gpu:{group.gpu_type}:{group.gpus}" if group.gpus else ""
            lines.append(
                f"NodeName={node} NodeAddr=127.0.0.1 NodeHostname={hostname} Port={spec.node_port(node)}"
                f" CPUs={group.cpus} RealMemory={group.memory_mb}{gres} Feature={features},{group.gpu_type}"
                " State=UNKNOWN"
            )
    for part in spec.partitions:
        default = "YES" if part.default else "NO"
        nodes = ",".join(spec.partition_nodes(part))
        lines.append(f"PartitionName={part.name} Nodes={nodes} Default={default} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def render_gres_conf(spec: MiniclusterSpec) -> str:
    lines = ["# Fake GPUs: character devices, no hardware (AutoDetect=off).", "AutoDetect=off"]
    for group in spec.nodes:
        for node in group.node_names():
            for i, dev in enumerate(device_paths(spec, node)):
                lines.append(f"NodeName={node} Name=gpu Type={group.gpu_type} File={dev}")
    return "\n".join(lines) + "\n"


def render_cgroup_conf(spec: MiniclusterSpec) -> str:
    """cgroup.conf for 24.11 and later: slurmd there initialises its cgroup plugin even with
    proctrack/linuxproc and task/none, and fails on a host without a cgroup filesystem unless the
    plugin is disabled. 22.05 needs none (empty string: no file)."""
    if spec.slurm == "22.05":
        return ""
    return "# Written by hops-slurm minicluster (Slurm 24.11+ on a host without cgroups).\nCgroupPlugin=disabled\n"


def render_slurmdbd_conf(spec: MiniclusterSpec, hostname: str, db_user: str, db_pass: str) -> str:
    s = spec.state_dir
    return "\n".join(
        [
            "# Written by hops-slurm minicluster.",
            "AuthType=auth/munge",
            f"AuthInfo=socket={s / 'run' / 'munge.socket'}",
            f"DbdHost={hostname}",
            f"DbdPort={spec.ports.slurmdbd}",
            "SlurmUser=root",
            f"PidFile={s / 'run' / 'slurmdbd.pid'}",
            f"LogFile={s / 'log' / 'slurmdbd.log'}",
            "DebugLevel=info",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={spec.ports.mariadb}",
            f"StorageUser={db_user}",
            f"StoragePass={db_pass}",
            f"StorageLoc=slurm_acct_{spec.cluster_name}",
        ]
    ) + "\n"
