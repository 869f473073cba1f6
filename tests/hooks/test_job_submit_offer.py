"""The submit hook's offers (hooks/hops_offer.lua, loaded by hooks/job_submit.lua from beside it): a valid Hops job takes its largest acceptable
GPU count on the first offered node that has that many free, is put in ``hops-offer`` and is not held; one
job per offer; no offer, an expired or malformed one, or nothing that fits leaves it held as before. Run in Lua 5.1 with a
stand-in for the plugin's ``slurm`` table (only what the hook calls); the live test
(tests/hops_slurm/engine/test_offer_live.py) runs it inside slurmctld."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hops_slurm.engine.offer import Offer, closed, read

HOOK = Path(__file__).resolve().parents[2] / "hooks" / "job_submit.lua"
OFFERS = HOOK.with_name("hops_offer.lua")

# arg: HOOK OFFER_FILE NOW then one JSON-ish line per job: script \t req_nodes ("" = none)
CASE = r"""
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
dofile(arg[1])
HOPS.offer_file = arg[2]
local now = tonumber(arg[3])
os.time = function() return now end
for line in io.lines(arg[4]) do
	local script, nodes, gres = string.match(line, "^([^\t]*)\t([^\t]*)\t([^\t]*)$")
	script = string.gsub(script, "\\n", "\n")
	local job = { script = script, req_nodes = nodes ~= "" and nodes or nil, tres_per_node = gres ~= "" and gres or nil }
	local rc = slurm_job_submit(job, {}, 1000)
	print(string.format("%d|%s|%s|%s|%s|%s", rc, tostring(job.priority), tostring(job.reservation),
		tostring(job.req_nodes), tostring(job.tres_per_node), tostring(job.min_nodes)))
end
"""


def script(gpus: str) -> str:
    return f"#!/bin/sh\\n#HOPS gpus={gpus} samples=1K batch-size=8 model=resnet18\\ntrue\\n"


def submit(tmp_path: Path, offer_text: str | None, jobs: list[tuple[str, str, str]], now: float = 1000.0) -> list[list[str]]:
    lua = shutil.which("lua5.1")
    assert lua, "lua5.1 is needed (apt-get install lua5.1)"
    runner, offer, cases = tmp_path / "case.lua", tmp_path / "hops-offer", tmp_path / "jobs.txt"
    runner.write_text(CASE)
    if offer_text is not None:
        offer.write_text(offer_text)
    cases.write_text("".join("\t".join(j) + "\n" for j in jobs))
    out = subprocess.run([lua, str(runner), str(HOOK), str(offer), str(now), str(cases)],
                         capture_output=True, text=True, check=True)
    return [line.split("|") for line in out.stdout.splitlines()]


def offer_text(nodes: list[tuple[str, int]], *, as_of: float = 990.0, expires: float = 1030.0, tres: str = "gres/gpu:") -> str:
    return Offer(as_of=as_of, expires=expires, tres=tres, nodes=tuple(nodes)).render()


HELD = ["0", "0", "nil", "nil", "nil", "nil"]


def test_no_offer_file_holds_the_job(tmp_path: Path) -> None:
    assert submit(tmp_path, None, [(script("1,2,4"), "", "")]) == [HELD]


@pytest.mark.parametrize(("gpus", "expect"), [
    ("1,2,4", ["0", "nil", "hops-offer", "a100-2", "gres/gpu:4", "1"]),  # a100-1 has only 3
    ("1,2", ["0", "nil", "hops-offer", "a100-1", "gres/gpu:2", "1"]),  # the first node with 2
    ("8,16", ["0", "nil", "hops-offer", "a100-2", "gres/gpu:8", "1"]),  # 16 fits on no one node
    ("16", HELD),  # nothing fits
])
def test_a_job_takes_its_largest_count_on_the_first_node_that_has_it(tmp_path: Path, gpus: str, expect: list[str]) -> None:
    text = offer_text([("a100-1", 3), ("a100-2", 8), ("v100-1", 4)])
    assert submit(tmp_path, text, [(script(gpus), "", "")]) == [expect]


def test_one_job_per_offer_the_next_waits_for_the_engine(tmp_path: Path) -> None:
    text = offer_text([("a100-1", 8), ("a100-2", 8)])
    got = submit(tmp_path, text, [(script("4"), "", ""), (script("4"), "", "")])
    assert got[0][2] == "hops-offer" and got[1] == HELD


def test_the_release_s_request_form_comes_from_the_file(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text([("n1", 2)], tres="gres:gpu:"), [(script("1,2"), "", "")])
    assert got == [["0", "nil", "hops-offer", "n1", "gres:gpu:2", "1"]]


@pytest.mark.parametrize("text", [
    offer_text([("a100-1", 8)], expires=1000.0),  # expired (now = 1000)
    offer_text([("a100-1", 8)]).replace("hops-offer 1", "hops-offer 2"),  # another format
    offer_text([("a100-1", 8)]).replace("gres/gpu:", "gres/gpu:8,license:"),  # a request the engine never writes
    offer_text([("a100-1", 8)]).replace("a100-1", "a100;rm"),  # a node name Slurm never has
    offer_text([("a100-1", 8)]).replace("node a100-1 8", "node a100-1 8 9"),  # a line of the wrong shape
    offer_text([("a100-1", 8)]).replace("as_of 990\n", ""),  # a field missing
    offer_text([("a100-1", 8)]) + "#" * 70000,  # longer than the hook reads
    closed(),  # the engine closed it: a Hops job waits
    offer_text([]),  # no idle GPU
    offer_text([("a100-1", 1)]),  # nothing that fits
])
def test_no_usable_offer_holds_the_job(tmp_path: Path, text: str) -> None:
    assert submit(tmp_path, text, [(script("2,4"), "", "")]) == [HELD]


def test_a_job_that_names_its_nodes_is_held_and_keeps_them(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text([("a100-1", 8)]), [(script("2"), "a100-2", "")])
    assert got == [["0", "0", "nil", "a100-2", "nil", "nil"]]


def test_a_job_asking_for_gpus_itself_is_still_refused(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text([("a100-1", 8)]), [(script("2"), "", "gres/gpu:2")])
    assert got[0][0] == "-1"


def test_a_new_offer_after_the_engine_s_read_serves_the_next_job(tmp_path: Path) -> None:
    lua = shutil.which("lua5.1")
    assert lua
    runner = tmp_path / "two.lua"
    runner.write_text(r"""
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
dofile(arg[1])
HOPS.offer_file = arg[2]
local s = "#!/bin/sh\n#HOPS gpus=4 samples=1K batch-size=8 model=resnet18\ntrue\n"
local function put(as_of) local f = io.open(arg[2], "w"); f:write("hops-offer 1\nas_of " .. as_of .. "\nexpires 2000\ntres gres/gpu:\nnode n1 8\n"); f:close() end
put(990)
local a = { script = s }; os.time = function() return 1000 end; slurm_job_submit(a, {}, 1000)
local b = { script = s }; slurm_job_submit(b, {}, 1000)
put(1000) -- read in the second job a was given its offer: it may not have seen it yet
local c = { script = s }; os.time = function() return 1001 end; slurm_job_submit(c, {}, 1000)
put(1001) -- read after it
local d = { script = s }; slurm_job_submit(d, {}, 1000)
print(tostring(a.req_nodes), tostring(b.req_nodes), tostring(c.req_nodes), tostring(d.req_nodes))
""")
    out = subprocess.run([lua, str(runner), str(HOOK), str(tmp_path / "hops-offer")], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["n1", "nil", "nil", "n1"]


def test_the_offers_come_from_beside_the_hook_and_without_them_every_job_is_held(tmp_path: Path) -> None:
    lua = shutil.which("lua5.1")
    assert lua
    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copyfile(HOOK, etc / "job_submit.lua")
    runner = tmp_path / "where.lua"
    runner.write_text(r"""
slurm = { SUCCESS = 0, ERROR = -1, log_user = function(...) end, log_info = function(...) end }
dofile(arg[1])
local job = { script = "#!/bin/sh\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n" }
slurm_job_submit(job, {}, 1000)
print(tostring(HOPS.offer_file), tostring(job.priority), tostring(job.reservation))
""")
    (etc / "hops-offer").write_text(offer_text([("n1", 8)], as_of=time.time() - 5, expires=time.time() + 60))

    def run() -> list[str]:
        return subprocess.run([lua, str(runner), str(etc / "job_submit.lua")], capture_output=True, text=True,
                              check=True).stdout.split()

    assert run() == ["nil", "0", "nil"]  # job_submit.lua alone: no offers, the job is held
    shutil.copyfile(OFFERS, etc / "hops_offer.lua")
    assert run() == [str(etc / "hops-offer"), "nil", "hops-offer"]  # beside it: the file there is read
    (etc / "hops_offer.lua").write_text("error('broken')\n")
    assert run() == ["nil", "0", "nil"]  # a broken one: held, no error


def test_python_reads_what_it_writes(tmp_path: Path) -> None:
    o = Offer(as_of=10.5, expires=40.2, tres="gres:gpu:", nodes=(("a", 2), ("b", 8)))
    (tmp_path / "hops-offer").write_text(o.render())
    assert read(tmp_path / "hops-offer") == Offer(as_of=10, expires=40, tres="gres:gpu:", nodes=(("a", 2), ("b", 8)))
    (tmp_path / "hops-offer").write_text(closed())
    assert read(tmp_path / "hops-offer") is None
