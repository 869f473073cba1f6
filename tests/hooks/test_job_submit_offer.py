"""The submit hook's offers (hooks/hops_offer.lua, loaded by hooks/hops_submit.lua from beside it), offer
file format 2: a valid Hops job that may take an offer gets its largest acceptable GPU count on the first
offered node of one of its partitions that has that many free, is put in ``hops-offer`` and is not held;
one job per offer, also across a restart or reload of the hook; jobs that would hold more than they are
granted, or start later or elsewhere (exclusive, core-spec, arrays, dependencies, --begin, --hold, node
counts, nodelists, features) are held as usual (issue 34, H3 and L2). No offer, an expired or malformed
one, or nothing that fits leaves the job held. Lua 5.1 with a stand-in for the plugin's ``slurm`` table
(tests/hooks/luahook.py); the live test (tests/hops_slurm/engine/test_offer_live.py) runs it in slurmctld."""

from __future__ import annotations

from pathlib import Path

import pytest

from luahook import install, run

# arg: DIR then the jobs file: one job per line, "key=value;key=value" (numbers stay numbers)
CASE = r"""
H.offers.loaded_at = 0 -- as if loaded long before the offers below
local now = 1000
os.time = function() return now end
for line in io.lines(arg[2]) do
	local job = { script = "#!/bin/sh\n#HOPS gpus=" .. string.match(line, "^([^;]*)") .. " samples=1K batch-size=8 model=resnet18\ntrue\n" }
	for k, v in string.gmatch(line, ";([%w_]+)=([^;]*)") do
		job[k] = tonumber(v) or v
	end
	local rc = H.job_submit(job, {}, 1000)
	print(string.format("%d|%s|%s|%s|%s|%s", rc, tostring(job.priority), tostring(job.reservation),
		tostring(job.req_nodes), tostring(job.tres_per_node), tostring(job.partition)))
end
"""


def offer_text(nodes: list[tuple[str, int, str]], *, as_of: int = 990, expires: int = 1030, tres: str = "gres/gpu:") -> str:
    lines = ["hops-offer 2", f"as_of {as_of}", f"expires {expires}", f"tres {tres}"]
    return "\n".join(lines + [f"node {n} {free} {parts}" for n, free, parts in nodes]) + "\n"


def submit(tmp_path: Path, offer: str | None, jobs: list[str], partitions: tuple[str, ...] = ("hops",)) -> list[list[str]]:
    where = install(tmp_path / "etc", partitions=partitions, offer=offer)
    (tmp_path / "jobs.txt").write_text("".join(j + "\n" for j in jobs))
    return [line.split("|") for line in run(where, CASE, str(tmp_path / "jobs.txt")).stdout.splitlines()]


HELD = ["0", "0", "nil", "nil", "nil", "hops"]
NODES = [("a100-1", 3, "hops"), ("a100-2", 8, "hops"), ("v100-1", 4, "hops")]


def test_no_offer_file_holds_the_job(tmp_path: Path) -> None:
    assert submit(tmp_path, None, ["1,2,4"]) == [HELD]


@pytest.mark.parametrize(("gpus", "expect"), [
    ("1,2,4", ["0", "nil", "hops-offer", "a100-2", "gres/gpu:4", "hops"]),  # a100-1 has only 3
    ("1,2", ["0", "nil", "hops-offer", "a100-1", "gres/gpu:2", "hops"]),  # the first node with 2
    ("8,16", ["0", "nil", "hops-offer", "a100-2", "gres/gpu:8", "hops"]),  # 16 fits on no one node
    ("16", HELD),  # nothing fits
])
def test_a_job_takes_its_largest_count_on_the_first_node_that_has_it(tmp_path: Path, gpus: str, expect: list[str]) -> None:
    assert submit(tmp_path, offer_text(NODES), [gpus]) == [expect]


def test_only_nodes_listing_the_job_s_partition_are_offered(tmp_path: Path) -> None:
    nodes = [("a100-1", 8, "hops-a100"), ("v100-1", 4, "hops-v100,hops-a100"), ("v100-2", 4, "hops-v100")]
    parts = ("hops-v100", "hops-a100")
    got = submit(tmp_path, offer_text(nodes), ["4"], partitions=parts)  # the default: hops-v100
    assert got == [["0", "nil", "hops-offer", "v100-1", "gres/gpu:4", "hops-v100"]]
    got = submit(tmp_path, offer_text(nodes), ["8;partition=hops-v100"], partitions=parts)
    assert got == [["0", "0", "nil", "nil", "nil", "hops-v100"]]  # 8 free only in hops-a100: held
    got = submit(tmp_path, offer_text(nodes), ["8;partition=hops-v100,hops-a100"], partitions=parts)
    assert got == [["0", "nil", "hops-offer", "a100-1", "gres/gpu:8", "hops-a100"]]  # put in that partition


def test_one_job_per_offer_the_next_waits_for_the_engine(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text([("a100-1", 8, "hops"), ("a100-2", 8, "hops")]), ["4", "4"])
    assert got[0][2] == "hops-offer" and got[1] == HELD


def test_the_release_s_request_form_comes_from_the_file(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text([("n1", 2, "hops")], tres="gres:gpu:"), ["1,2"])
    assert got == [["0", "nil", "hops-offer", "n1", "gres:gpu:2", "hops"]]


@pytest.mark.parametrize("job", [
    "2;shared=0", "2;shared=2", "2;core_spec=1", "2;thread_spec=1", "2;array_inx=0-7", "2;dependency=afterok:5",
    "2;priority=0", "2;begin_time=5000", "2;min_nodes=2", "2;max_nodes=3", "2;req_nodes=a100-1",
    "2;exc_nodes=a100-2", "2;features=a100", "2;reservation=maint",
    "2;pn_min_memory=0", "2;min_mem_per_node=0", "2;min_mem_per_cpu=0",  # --mem=0: the node's memory, all of it
])
def test_jobs_that_would_hold_more_or_start_elsewhere_are_held(tmp_path: Path, job: str) -> None:
    got = submit(tmp_path, offer_text(NODES), [job])
    assert got[0][0] == "0" and got[0][1] == "0" and got[0][2] in ("nil", "maint"), got


@pytest.mark.parametrize("job", ["2;shared=65534", "2;shared=1", "2;begin_time=900", "2;min_nodes=1",
                                 "2;dependency=", "2;core_spec=65534", "2;pn_min_memory=4096",
                                 "2;pn_min_memory=18446744073709551614"])
def test_unset_or_harmless_values_still_take_an_offer(tmp_path: Path, job: str) -> None:
    assert submit(tmp_path, offer_text(NODES), [job])[0][2] == "hops-offer"


def test_core_spec_in_the_script_is_seen_where_slurm_does_not_show_it(tmp_path: Path) -> None:
    where = install(tmp_path, offer=offer_text(NODES))
    out = run(where, r"""
H.offers.loaded_at = 0
os.time = function() return 1000 end
local job = { script = "#!/bin/sh\n#SBATCH --core-spec=2\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n" }
H.job_submit(job, {}, 1000)
print(tostring(job.priority), tostring(job.reservation))
""")
    assert out.stdout.split() == ["0", "nil"]


def test_an_exclusive_partition_gets_no_offer(tmp_path: Path) -> None:
    where = install(tmp_path, offer=offer_text(NODES))
    out = run(where, r"""
H.offers.loaded_at = 0
os.time = function() return 1000 end
local s = "#!/bin/sh\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n"
local a, b = { script = s }, { script = s }
H.job_submit(a, { hops = { max_share = 0 } }, 1000)
H.job_submit(b, { hops = { max_share = 1 } }, 1000)
print(tostring(a.reservation), tostring(b.reservation))
""")
    assert out.stdout.split() == ["nil", "hops-offer"]


@pytest.mark.parametrize("text", [
    offer_text([("a100-1", 8, "hops")], expires=1000),  # expired (now = 1000)
    offer_text([("a100-1", 8, "hops")]).replace("hops-offer 2", "hops-offer 1"),  # the old format
    offer_text([("a100-1", 8, "hops")]).replace("hops-offer 2", "hops-offer 3"),  # a newer format
    offer_text([("a100-1", 8, "hops")]).replace("node a100-1 8 hops", "node a100-1 8"),  # no partitions
    offer_text([("a100-1", 8, "hops")]).replace("gres/gpu:", "gres/gpu:8,license:"),  # a request the engine never writes
    offer_text([("a100;rm", 8, "hops")]),  # a node name Slurm never has
    offer_text([("a100-1", 8, "hops;x")]),  # a partition name Slurm never has
    offer_text([("a100-1", 8, "hops")]).replace("node a100-1 8 hops", "node a100-1 8 hops 9"),  # wrong shape
    offer_text([("a100-1", 8, "hops")]).replace("as_of 990\n", ""),  # a field missing
    offer_text([("a100-1", 8, "hops")]) + "#" * 70000,  # longer than the hook reads
    "hops-offer 2\n",  # the engine closed it: a Hops job waits
    offer_text([]),  # no idle GPU
    offer_text([("a100-1", 1, "hops")]),  # nothing that fits
    offer_text([("a100-1", 8, "other")]),  # not in the job's partition
])
def test_no_usable_offer_holds_the_job(tmp_path: Path, text: str) -> None:
    assert submit(tmp_path, text, ["2,4"]) == [HELD]


def test_a_job_asking_for_gpus_outside_its_counts_is_refused(tmp_path: Path) -> None:
    got = submit(tmp_path, offer_text(NODES), ["2;tres_per_node=gres/gpu:4"])
    assert got[0][0] == "-1"


def test_a_new_offer_after_the_engine_s_read_serves_the_next_job(tmp_path: Path) -> None:
    where = install(tmp_path)
    out = run(where, r"""
H.offers.loaded_at = 0
local s = "#!/bin/sh\n#HOPS gpus=4 samples=1K batch-size=8 model=resnet18\ntrue\n"
local function put(as_of) local f = io.open(DIR .. "/hops-offer", "w"); f:write("hops-offer 2\nas_of " .. as_of .. "\nexpires 2000\ntres gres/gpu:\nnode n1 8 hops\n"); f:close() end
put(990)
local a = { script = s }; os.time = function() return 1000 end; H.job_submit(a, {}, 1000)
local b = { script = s }; H.job_submit(b, {}, 1000)
put(1000) -- read in the second job a was given its offer: it may not have seen it yet
local c = { script = s }; os.time = function() return 1001 end; H.job_submit(c, {}, 1000)
put(1001) -- read after it
local d = { script = s }; H.job_submit(d, {}, 1000)
print(tostring(a.req_nodes), tostring(b.req_nodes), tostring(c.req_nodes), tostring(d.req_nodes))
""")
    assert out.stdout.split() == ["n1", "nil", "nil", "n1"]


def test_an_offer_stamped_in_the_future_serves_one_job_only(tmp_path: Path) -> None:
    """An ``as_of`` later than the hook's clock (a clock stepped back, an engine ahead of it) is served
    once: the hook remembers the offer it gave by its ``as_of``, not only by its own clock."""
    out = submit(tmp_path, offer_text([("n1", 8, "hops")], as_of=1100, expires=2000), ["2", "2", "2"])
    assert [job[2] for job in out] == ["hops-offer", "nil", "nil"]


def test_a_restarted_or_reloaded_hook_does_not_serve_an_offer_read_before_it_loaded(tmp_path: Path) -> None:
    """slurmctld's restart (or a reload of job_submit.lua) loses the hook's memory of the offer it gave;
    the offer file still says as_of 990, which was read before that job existed: it must not serve again."""
    where = install(tmp_path, offer=offer_text([("n1", 8, "hops")]))
    out = run(where, r"""
local s = "#!/bin/sh\n#HOPS gpus=4 samples=1K batch-size=8 model=resnet18\ntrue\n"
H.offers.loaded_at = 995 -- loaded (restarted) at 995, after the read of 990
os.time = function() return 1000 end
local a = { script = s }; H.job_submit(a, {}, 1000)
local f = io.open(DIR .. "/hops-offer", "w"); f:write("hops-offer 2\nas_of 996\nexpires 2000\ntres gres/gpu:\nnode n1 8 hops\n"); f:close()
local b = { script = s }; H.job_submit(b, {}, 1000)
print(tostring(a.req_nodes), tostring(b.req_nodes))
""")
    assert out.stdout.split() == ["nil", "n1"]


def test_the_offers_come_from_beside_the_module_and_without_them_every_job_is_held(tmp_path: Path) -> None:
    code = r"""
os.time = function() return 1000 end
if H.offers then H.offers.loaded_at = 0 end
local job = { script = "#!/bin/sh\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n" }
print(H.job_submit(job, {}, 1000), tostring(job.priority), tostring(job.reservation))
"""
    where = install(tmp_path, offer=offer_text([("n1", 8, "hops")]), files=("hops_submit.lua", "hops_directives.lua"))
    assert run(where, code).stdout.split() == ["0", "0", "nil"]  # no hops_offer.lua: held
    install(where, offer=offer_text([("n1", 8, "hops")]))
    assert run(where, code).stdout.split() == ["0", "nil", "hops-offer"]  # beside it: the file there is read
    (where / "hops_offer.lua").write_text("error('broken')\n")
    assert run(where, code).stdout.split() == ["0", "0", "nil"]  # a broken one: held, no error
