"""hops_slurm.slurm.gov_limits: the limits left out when limits were first read (issue 33, item 10), and
the indexed reading (issue 34, M4).

Per-GPU-type TRES (``gres/gpu:<type>=N`` in an association's ``GrpTRES``/``MaxTRES`` and a QOS's
``GrpTRES``/``MaxTRES``/``MaxTRESPU``/``MaxTRESPerNode``), a partition's ``AllowAccounts``/``DenyAccounts``/
``AllowQos``/``DenyQos``/``MinNodes``, and jobs listing several partitions. The text is as sacctmgr and
scontrol print it (the recorded 24.11 listings with the rows a heterogeneous site adds).
"""

from __future__ import annotations

from hops_slurm.slurm.api import SlurmJob
from hops_slurm.slurm.assoc import parse_assoc, parse_qos
from hops_slurm.slurm.gov_limits import Governance, limits_for
from hops_slurm.slurm.partitions import parse_partitions
from planner.governance import governed_plan
from planner.hops import HopsPolicy
from planner.params import PlannerParams
from planner.views import ClusterView, Config, JobView, NodeView
from tests.tests_paths import DATA

REC = DATA / "slurm-output" / "24.11"
ASSOC = (REC / "sacctmgr-show-assoc.txt").read_text()
QOS = (REC / "sacctmgr-show-qos.txt").read_text()
PARTS = (REC / "scontrol-show-partition.txt").read_text()
TYPES = {"a1": "a100", "a2": "a100", "v1": "v100", "v2": "v100"}
# the newest type capped per account, as a heterogeneous site does
TYPED_ASSOC = ("hopsgov|vision|||root|1|gres/gpu:a100=4||||normal|\n"
               "hopsgov|vision|ann|||1||||gres/gpu:A100=2|normal|\n"
               "hopsgov|vision|bob|||1|||||normal|\n")
TYPED_QOS = "newest|0|gres/gpu:a100=6||gres/gpu:a100=3|gres/gpu:a100=4||||gres/gpu:a100=1\n"
QOS_HEAD = "Name|Priority|GrpTRES|GrpJobs|MaxTRES|MaxTRESPU|MaxJobsPU|MaxTRESPA|MaxJobsPA|MaxTRESPerNode\n"


def gov(parts: str = "") -> Governance:
    qos_rows = QOS_HEAD + "\n".join(ln + "|" for ln in QOS.split("\n")[1:] if ln) + "\n" + TYPED_QOS
    return Governance(tuple(parse_assoc(ASSOC + TYPED_ASSOC)), parse_qos(qos_rows),
                      partitions=parse_partitions(PARTS + parts))


def sjob(i: int, user: str = "bob", *, account: str = "vision", qos: str = "normal", partition: str = "profiler",
         gpus: dict[str, tuple[int, ...]] | None = None, time_limit: float = 0.0) -> SlurmJob:
    return SlurmJob(job_id=str(i), user=user, account=account, qos=qos, partition=partition, time_limit=time_limit,
                    state="RUNNING" if gpus else "PENDING", gpu_alloc=gpus or {})


def cluster() -> ClusterView:
    return ClusterView(tuple(NodeView(n, t, t, 4, 4) for n, t in TYPES.items()))


def view(i: int, reqs: tuple[int, ...], current: Config | None = None) -> JobView:
    def thr(c: Config) -> float:  # the a100 is twice the v100
        return sum(g * (2.0 if TYPES[n] == "a100" else 1.0) for n, g in c.items())
    return JobView(str(i), reqs, submit_time=float(i), wait=100.0 - i, age=100.0, sensitivity=1.0, throughput=thr,
                   current=current)


def plan(limits, jobs: tuple[JobView, ...]):  # noqa: ANN001, ANN201
    return governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), cluster(), jobs, 0.0, fragment=False, limits=limits)


def a100s(config: Config) -> int:
    return sum(g for n, g in config.items() if TYPES[n] == "a100")


def test_typed_limits_are_read_beside_untyped_ones() -> None:
    g = gov()
    vision = [a for a in g.associations if a.account == "vision" and not a.user][0]
    assert vision.grp_gpus_typed == (("a100", 4),) and vision.grp_gpus is None
    assert g.user_row("vision", "ann", "") .max_gpus_per_job_typed == (("a100", 2),)  # type: ignore[union-attr]
    q = g.qos["newest"]
    assert (q.grp_gpus_typed, q.max_gpus_per_job_typed, q.max_gpus_per_user_typed, q.max_gpus_per_node_typed) == (
        (("a100", 6),), (("a100", 3),), (("a100", 4),), (("a100", 1),))
    physics = [a for a in g.associations if a.account == "physics" and not a.user][0]
    assert physics.grp_gpus == 8 and physics.grp_gpus_typed == ()


def test_an_account_that_used_its_a100s_gets_no_more_a100s() -> None:
    """GrpTRES=gres/gpu:a100=4: a running job holds all 4; the waiting job of the account is planned on
    v100s, never on the free a100 node (which it would take unlimited: the test can fail)."""
    listing = [sjob(1, gpus={"a1": (0, 1, 2, 3)}), sjob(2)]
    limits = limits_for(gov(), listing, node_types=TYPES)
    cap = {c.label: c for c in limits.caps}["AssocGrpGRES: account=vision gres/gpu:a100=4"]
    assert cap.nodes == {"a1", "a2"} and dict(cap.held) == {"1": 4}
    jobs = (view(1, (4,), current={"a1": 4}), view(2, (4,)))
    free = plan(None, jobs).placed()["2"]
    assert a100s(free) == 4  # unlimited, it takes the free a100 node
    placed = plan(limits, jobs).placed()
    assert a100s(placed["2"]) == 0 and sum(placed["2"].values()) == 4


def test_on_a_cluster_of_one_type_a_used_up_type_limit_is_named() -> None:
    """Every node an a100 (the live minicluster): no count fits the account's room; the job waits with the
    typed limit named, never as a job no config serves."""
    a100s_only = {"a1": "a100", "a2": "a100"}
    listing = [sjob(1, gpus={"a1": (0, 1, 2, 3)}), sjob(2)]
    limits = limits_for(gov(), listing, node_types=a100s_only)
    one_type = ClusterView(tuple(NodeView(n, "a100", "a100", 4, 4) for n in a100s_only))
    jobs = (view(1, (4,), current={"a1": 4}), view(2, (2,)))
    out = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), one_type, jobs, 0.0, fragment=False, limits=limits)
    assert "2" not in out.placed() and out.diagnostics["limited"] == {"2": "AssocGrpGRES: account=vision gres/gpu:a100=4"}
    # ann may hold 2 a100s per job: a 4-GPU job on an a100-only cluster waits, named so; a 2-GPU one runs
    limits = limits_for(gov(), [sjob(3, "ann"), sjob(4, "ann")], node_types=a100s_only)
    jobs = (view(3, (4,)), view(4, (1, 2)))
    out = governed_plan(HopsPolicy(PlannerParams(time_limit=5.0)), one_type, jobs, 0.0, fragment=False, limits=limits)
    assert out.diagnostics["limited"] == {"3": "AssocMaxGRESPerJob: account=vision user=ann gres/gpu:a100=2 per job"}
    assert sum(out.placed()["4"].values()) <= 2


def test_a_per_job_a100_limit_bounds_each_job_not_its_gpu_count() -> None:
    """ann's MaxTRES=gres/gpu:A100=2 (types compare in lower case): a 4-GPU job takes at most 2 a100s."""
    limits = limits_for(gov(), [sjob(3, "ann")], node_types=TYPES)
    (bound,) = limits.shapes["3"].bounds
    assert bound.label == "AssocMaxGRESPerJob: account=vision user=ann gres/gpu:a100=2 per job"
    placed = plan(limits, (view(3, (4,)),)).placed()["3"]
    assert sum(placed.values()) == 4 and a100s(placed) <= 2


def test_a_qos_per_user_and_per_node_a100_limit() -> None:
    listing = [sjob(4, "bob", qos="newest", gpus={"a1": (0,)}), sjob(5, "bob", qos="newest"), sjob(6, "ann", qos="newest")]
    limits = limits_for(gov(), listing, node_types=TYPES)
    by = {c.label: c for c in limits.caps}
    assert by["QOSMaxGRESPerUser: qos=newest user=bob gres/gpu:a100=4"].jobs == {"4", "5"}
    assert by["QOSGrpGRES: qos=newest gres/gpu:a100=6"].jobs == {"4", "5", "6"}
    assert limits.shapes["5"].refusal({"a2": 2}) == "QOSMaxGRESPerNode: qos=newest gres/gpu:a100=1 per node"
    assert limits.shapes["5"].refusal({"a1": 1, "a2": 1, "v1": 2}) == ""
    placed = plan(limits, (view(4, (1,), current={"a1": 1}), view(5, (4,)), view(6, (2,)))).placed()
    assert all(g <= 1 for n, g in placed["5"].items() if TYPES[n] == "a100")
    assert a100s(placed["5"]) + 1 <= 4  # bob holds one a100 already
    assert sum(a100s(c) for c in placed.values()) <= 6


def test_allow_and_deny_accounts_and_qos() -> None:
    parts = ("PartitionName=team AllowAccounts=physics,VISION AllowQos=normal State=UP\n"
             "PartitionName=open DenyAccounts=bio DenyQos=newest State=UP\n")
    listing = [sjob(1, partition="team"), sjob(2, account="bio", user="root", partition="team"),
               sjob(3, qos="newest", partition="team"), sjob(4, account="bio", user="root", partition="open"),
               sjob(5, qos="newest", partition="open"), sjob(6, partition="open")]
    blocked = dict(limits_for(gov(parts), listing).blocked)
    assert blocked == {"2": "PartitionConfig: partition=team account=bio may not use it",
                       "3": "PartitionConfig: partition=team qos=newest may not use it",
                       "4": "PartitionConfig: partition=open account=bio may not use it",
                       "5": "PartitionConfig: partition=open qos=newest may not use it"}


def test_min_nodes_trims_counts_and_shapes_the_plan() -> None:
    limits = limits_for(gov("PartitionName=wide MinNodes=2 State=UP\n"), [sjob(7, partition="wide")])
    shape = limits.shapes["7"]
    assert shape.refusal({"a1": 4}) == "PartitionNodeLimit: partition=wide MinNodes=2"
    placed = plan(limits, (view(7, (1, 2, 4, 8)),)).placed()["7"]  # 8 GPUs: the only count over two 4-GPU nodes
    assert len([g for g in placed.values() if g]) >= 2
    assert "8" in plan(limits, (view(8, (1,)),)).placed()  # job 8 is in no partition with MinNodes: it runs
    only_one = limits_for(gov("PartitionName=wide MinNodes=2 State=UP\n"), [sjob(9, partition="wide")])
    assert plan(only_one, (view(9, (1,)),)).diagnostics["limited"] == {"9": "PartitionNodeLimit: partition=wide MinNodes=2"}


def test_a_job_listing_several_partitions_is_held_to_those_that_may_start_it() -> None:
    parts = ("PartitionName=short MaxTime=01:00:00 MaxNodes=1 State=UP\n"
             "PartitionName=long MaxTime=2-00:00:00 MaxNodes=2 QoS=newest State=UP\n"
             "PartitionName=off State=DOWN\n")
    listing = [sjob(1, partition="short,long", time_limit=7200.0), sjob(2, partition="short,long", time_limit=600.0),
               sjob(3, partition="off,short", time_limit=7200.0), sjob(4, partition="off,nowhere")]
    limits = limits_for(gov(parts), listing, node_types=TYPES)
    # 1: two hours: short refuses it, long may start it (long's MaxNodes and its QOS hold)
    assert "1" not in limits.blocked and limits.shapes["1"].max_nodes == 2
    assert "1" in {c.label: c for c in limits.caps}["QOSGrpGRES: qos=newest gres/gpu:a100=6"].jobs
    # 2: both may: held to the stricter of each limit
    assert limits.shapes["2"].max_nodes == 1
    # 3: neither may; named by the first
    assert limits.blocked["3"] == "PartitionDown: partition=off"
    # 4: a partition this reading does not know may start it (Slurm keeps that one's limits)
    assert "4" not in limits.blocked


def test_a_1000_deep_account_tree_reads_each_chain_once_nearest_first() -> None:
    """M4: every account's ancestors that set a limit are worked out once per reading; an ancestor's limit over
    the same accounts as a tighter one is kept once (the tightest)."""
    rows = ["Cluster|Account|User|Partition|ParentName|Share|GrpTRES|GrpJobs|MaxJobs|MaxTRES|QOS|Def QOS"]
    rows += [f"c|a{k}|||{'a' + str(k - 1) if k else 'root'}|1|{'gres/gpu=' + str(5000 - k) if k % 100 == 0 else ''}"
             "||||normal|" for k in range(1000)]
    g = Governance(tuple(parse_assoc("\n".join(rows) + "\n")))
    assert [a.account for a in g.account_chain("a999")] == [f"a{k}" for k in range(900, -1, -100)]
    assert [a.account for a in g.account_chain("a150")] == ["a100", "a0"]
    jobs = [SlurmJob(job_id=str(i), user="u", account="a999" if i % 2 else "a150", state="PENDING") for i in range(50)]
    caps = {c.label: c.jobs for c in limits_for(g, jobs).caps}
    assert caps == {"AssocGrpGRES: account=a900 gres/gpu=4100": {str(i) for i in range(1, 50, 2)},
                    "AssocGrpGRES: account=a100 gres/gpu=4900": {str(i) for i in range(50)}}


def test_an_account_cycle_ends_and_puts_every_limit_on_it_over_each_account() -> None:
    """A parent that is its own descendant (slurmdbd would not allow it; the reading must still end): every
    account on the cycle is held to every limit on it, wherever the walk started."""
    rows = ["Cluster|Account|User|Partition|ParentName|Share|GrpTRES|GrpJobs|MaxJobs|MaxTRES|QOS|Def QOS"]
    rows += [f"c|a{k}|||a{k - 1 if k else 999}|1|{'gres/gpu=' + str(k) if k % 100 == 0 else ''}||||normal|"
             for k in range(1000)]
    rows.append("c|leaf|||a500|1|gres/gpu=1||||normal|")
    g = Governance(tuple(parse_assoc("\n".join(rows) + "\n")))
    every = {f"a{k}" for k in range(0, 1000, 100)}
    for account in ("a999", "a50", "a0"):
        assert {a.account for a in g.account_chain(account)} == every
    assert [a.account for a in g.account_chain("leaf")][0] == "leaf"
    assert {a.account for a in g.account_chain("leaf")} == every | {"leaf"}
