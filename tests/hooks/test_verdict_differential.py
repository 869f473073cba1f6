"""The hook's verdict (hooks/hops_submit.lua, lua5.1) and its Python twin (hops_slurm/submit_policy.py) on
generated requests: partitions lists, reservation lists, GPU request fields in every shape sbatch writes
and many it never does, node counts, user or root, valid and invalid directives, hops: comments, and a
missing partition file. Every answer must be the same line (kind, message, canonical form, partitions,
changed fields, note); the seeded batch must cover every kind of answer."""

from __future__ import annotations

import collections
import random
from pathlib import Path

from hops_slurm.hooklua import run_verdicts, verdict_line
from hops_slurm.submit_policy import Request, verdict

SEED = 20261128
N = 3000
PARTS = ("hops", "gpu-hops", "old.cards")
NAMES = ["hops", "gpu-hops", "old.cards", "gpu", "cpu", "", "HOPS", "hops ", " hops", "gpu-hops2", "h\x01ps", "é"]
RESV = ["hops-offer", "hops-gate", "hops-j12", "hops-p3", "maint", "", "HOPS-offer", "myhops-x", "hops_x", "hops",
        " hops-offer", "\thops-gate", "site-hops-1", "x\nhops-j1", "hops-"]
GPU = ["gpu", "gpu:1", "gpu:2", "gpu:4", "gpu:8", "gpu:0", "gpu:a100:2", "gpu:v100", "gpu:a100:", "gpu:2x", "gpu:99999999",
       "gpu:a-1.x_2:4", "nvme:1", "shard:2", "gpux:1", "gpu:", "gpu::2", "license:x", "gpu:1(S:0)"]
SCRIPTS = [
    b"#!/bin/sh\n#HOPS gpus=1,2,4 samples=1K batch-size=8 model=resnet18\ntrue\n",
    b"#!/bin/sh\n#HOPS gpus=2-8 levels=4 samples=1M batch-size=8 model=gpt2\ntrue\n",
    b"#!/bin/sh\n#HOPS gpus=4,4 samples=1K batch-size=8 model=x\ntrue\n",
    b"#!/bin/sh\n#HOPS\ntrue\n",
    b"#!/bin/sh\ntrue\n",
    b"#!/bin/sh\ntrue\n#HOPS gpus=1 samples=1 batch-size=1 model=x\n",
]
COMMENTS = [None, b"hops:gpus=2 samples=1K batch-size=8 model=x", b"  hops:gpus=0", b"other", b"hops:"]


def _field(r: random.Random) -> str | None:
    if r.random() < 0.7:
        return None
    return ",".join(r.choice(["gres:", "gres/", ""]) + r.choice(GPU) for _ in range(r.choice([1, 1, 1, 2, 3])))


def requests(seed: int, n: int) -> list[dict[str, object]]:
    r = random.Random(seed)
    out = []
    for _ in range(n):
        req: dict[str, object] = {"script": r.choice(SCRIPTS), "uid": r.choice([0, 1000, 1000, 1000])}
        comment = r.choice(COMMENTS)
        if comment is not None:
            req["comment"] = comment
        if r.random() < 0.6:
            req["partition"] = ",".join(r.choice(NAMES) for _ in range(r.choice([1, 1, 2, 3])))
        if r.random() < 0.3:
            req["reservation"] = r.choice([",", ", ", ""]).join(r.choice(RESV) for _ in range(r.randint(1, 3)))
        for name in ("tres_per_node", "tres_per_job"):
            value = _field(r)
            if value is not None:
                req[name] = value
        for name in ("tres_per_task", "tres_per_socket"):
            if r.random() < 0.05:
                req[name] = r.choice(["gres/gpu:1", "cpu=4", "gres:gpu:2"])
        if r.random() < 0.3:
            req["min_nodes"] = r.choice([1, 2, 3, 4294967294])
        out.append(req)
    return out


def python_line(req: dict[str, object], parts: tuple[str, ...] | None, problem: str) -> str:
    fields = dict(req)
    if fields.get("min_nodes") == 4294967294:
        fields["min_nodes"] = None  # NO_VAL: the hook's "unset"
    return verdict_line(verdict(Request(**fields), parts, problem))  # type: ignore[arg-type]


def test_generated_requests_get_the_same_verdict(tmp_path: Path) -> None:
    reqs = requests(SEED, N)
    parts_file = tmp_path / "hops-partitions"
    parts_file.write_text("hops-partitions 1\n" + "".join(f"partition {p}\n" for p in PARTS))
    lua = run_verdicts(reqs, parts_file)
    py = [python_line(q, PARTS, "") for q in reqs]
    wrong = [(q, a, b) for q, a, b in zip(reqs, lua, py) if a != b]
    assert wrong[:5] == []
    kinds = collections.Counter(line.split("\t", 1)[0] for line in py)
    notes = sum(1 for line in py if line.startswith("OK") and "is dropped" in line)
    assert kinds["OK"] > 100 and kinds["ERR"] > 500 and kinds["NONE"] > 100 and notes >= 10, (kinds, notes)


def test_without_a_partition_file_too(tmp_path: Path) -> None:
    reqs = requests(SEED + 1, 600)
    missing = tmp_path / "hops-partitions"
    lua = run_verdicts(reqs, missing)
    problem = lua_problem(lua)
    py = [python_line(q, None, problem) for q in reqs]
    assert [(q, a, b) for q, a, b in zip(reqs, lua, py) if a != b][:5] == []


def lua_problem(lines: list[str]) -> str:
    """The hook's own words for the missing file, from one of its refusals."""
    for line in lines:
        if "knows no Hops partition (" in line:
            return line.split("knows no Hops partition (", 1)[1].rsplit("): tell your administrator", 1)[0]
    raise AssertionError("no refusal for a missing partition file")
