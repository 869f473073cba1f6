"""A running job's GPU indices per node from ``scontrol -o -d show job <id>`` (22.05), for the jobs the text
listing shows running whose indices the last JSON listing did not give (jobs started since).

Where it sits: :class:`hops_slurm.slurm.cli.CliSlurm` reads 22.05's job listing as squeue's text
(:mod:`hops_slurm.slurm.read_text`), which lacks ``gres_detail``. Instead of the whole JSON listing (32 MB for
10,000 jobs) it asks scontrol for each newly running job, up to :data:`LIMIT` jobs per read (more: the JSON
listing, as before). 22.05's scontrol shows one job per process (``show job 1,2`` and ``show job 1 2`` are
refused; checked on 22.05.8), in one line with ``-o``; ``-d`` adds, after ``JOB_GRES=``, one group per run of
nodes with the same allocation: ``   Nodes=a100-[1-2] CPU_IDs=0 Mem=1000 GRES=gpu:a100:1(IDX:0)``.

Hostile input: the job's name is the second field and may hold anything (new lines, ``GRES=`` text, other
records); the comment, command, work directory and output paths come after the detail and may too. So the
record must start with exactly ``JobId=<id> JobName=<the name the text listing gave> UserId=``; the fields
read are taken from their fixed place after it (``JobState``, ``StartTime`` as epoch seconds, ``NodeList``,
then the detail groups up to ``MinCPUsNode=``, all written by Slurm), and must agree with the text listing:
same state, start time and nodes, every node in exactly one group, in order, each with a GPU index list of
its count. Anything else: None (the caller reads the JSON listing). Pure.
"""

from __future__ import annotations

import re

from hops_slurm.slurm.parse import expand_hostlist, parse_gpu_gres

#: the most newly running jobs asked of scontrol in one read (one process each, ~20 ms); more: the JSON listing
LIMIT = 64
#: the longest output read for one job (Slurm caps names and comments well below it)
MAX_OUTPUT = 1 << 20
#: how scontrol writes times: epoch seconds, as the text listing (its environment)
TIME_FORMAT = {"SLURM_TIME_FORMAT": "%s"}
#: the Slurm-written fields between the name and the detail, each its first occurrence after ``UserId=``
_STATE = re.compile(r" JobState=([A-Z_]{1,32}) ")
_START = re.compile(r" StartTime=([0-9]{1,20}) ")
_NODELIST = re.compile(r" NodeList=(\S{1,4096}) BatchHost=")
#: the detail: ``JOB_GRES=..`` then groups of nodes, up to the field after it
_DETAIL = re.compile(r" JOB_GRES=(\S{1,4096})((?: {3}Nodes=\S{1,4096} CPU_IDs=\S{1,4096} Mem=[0-9]{1,20} GRES=\S{1,4096}){1,4096}) MinCPUsNode=")
_GROUP = re.compile(r" {3}Nodes=(\S+) CPU_IDs=\S+ Mem=[0-9]+ GRES=(\S+)")


def argv(job_id: str) -> list[str]:
    """The command that shows one job with its per-node detail, in one line."""
    return ["scontrol", "-o", "-d", "show", "job", str(job_id)]


def allocation(output: str, job_id: str, name: str, state: str, start_time: int,
               nodes: tuple[str, ...]) -> dict[str, tuple[int, ...]] | None:
    """The GPU indices per node of job ``job_id`` from scontrol's ``output``, or None unless the output is
    that job's record (the ``name``, ``state``, ``start_time`` and expanded ``nodes`` the text listing gave)
    naming every node's GPUs."""
    prefix = f"JobId={job_id} JobName={name} UserId="
    if len(output) > MAX_OUTPUT or not output.startswith(prefix) or not nodes:
        return None
    rest = output[len(prefix) - 1:]  # from the space before UserId=: Slurm's own fields
    at = rest.find(" JOB_GRES=")  # the first one: everything before it is written by Slurm
    detail = _DETAIL.match(rest, at) if at >= 0 else None
    if detail is None:
        return None
    head = rest[:at + 1]
    found_state, found_start, found_nodes = _STATE.search(head), _START.search(head), _NODELIST.search(head)
    if found_state is None or found_start is None or found_nodes is None:
        return None
    if found_state[1] != state or int(found_start[1]) != start_time:
        return None
    try:
        if tuple(expand_hostlist(found_nodes[1])) != nodes:
            return None
        alloc: dict[str, tuple[int, ...]] = {}
        for group in _GROUP.finditer(detail[2]):
            gres = parse_gpu_gres(group[2])
            if gres is None or not gres.indices or len(gres.indices) != gres.count:
                return None
            for node in expand_hostlist(group[1]):
                if node in alloc:
                    return None
                alloc[node] = gres.indices
    except ValueError:  # a malformed host list or index range
        return None
    return alloc if tuple(alloc) == nodes else None
