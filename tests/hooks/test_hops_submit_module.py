"""hooks/hops_submit.lua as a module a site's own job_submit.lua calls (issue 33, items 2 and 3): the Hops
partitions come from hops-partitions beside it (one or several, any names, the first the default); a
#HOPS job elsewhere is left alone; a missing, empty, bad or oversized file, or a directory at its path,
refuses only #HOPS jobs that need the default, with one line naming the problem; an internal error never
reaches a job without #HOPS lines; a site hook keeps its own rules with the two documented lines.
Lua 5.1 with a stand-in for the plugin's ``slurm`` table (tests/hooks/luahook.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from luahook import hops_script, install, run

SUBMIT = """
local job = { script = arg[2] == "hops" and %s or "#!/bin/sh\\ntrue\\n", partition = arg[3] ~= "" and arg[3] or nil }
print(H.job_submit(job, {}, 1000), tostring(job.partition), tostring(job.priority), tostring(job.admin_comment ~= nil))
""" % hops_script()


def submit(where: Path, kind: str, partition: str = "") -> tuple[list[str], str]:
    out = run(where, SUBMIT, kind, partition)
    return out.stdout.split(), out.stderr.strip()


@pytest.mark.parametrize(("partition", "expect"), [
    ("", ["0", "gpu-hops", "0", "true"]),  # the default: the first listed
    ("gpu-hops", ["0", "gpu-hops", "0", "true"]),
    ("old-cards", ["0", "old-cards", "0", "true"]),
    ("old-cards,gpu-hops", ["0", "old-cards,gpu-hops", "0", "true"]),
    ("gpu", ["0", "gpu", "nil", "false"]),  # not a Hops partition: untouched
    ("gpu,cpu", ["0", "gpu,cpu", "nil", "false"]),
])
def test_partitions_come_from_the_file(tmp_path: Path, partition: str, expect: list[str]) -> None:
    got, _ = submit(install(tmp_path, partitions=("gpu-hops", "old-cards")), "hops", partition)
    assert got == expect


def test_a_list_mixing_hops_and_other_partitions_is_refused_in_one_line(tmp_path: Path) -> None:
    got, err = submit(install(tmp_path, partitions=("gpu-hops",)), "hops", "gpu-hops,gpu")
    assert got[0] == "-1"
    assert err == ("#HOPS partition: gpu-hops,gpu mixes Hops partitions (gpu-hops) with others: list only Hops "
                   "partitions, or remove the #HOPS lines to run outside Hops")


def test_no_constant_partition_name_is_left(tmp_path: Path) -> None:
    got, _ = submit(install(tmp_path, partitions=("a100",)), "hops", "hops")
    assert got == ["0", "hops", "nil", "false"]  # "hops" is not a Hops partition at this site


BAD = {
    "missing": None,
    "empty": "",
    "bad header": "hops-partitions 9\npartition hops\n",
    "bad name": "hops-partitions 1\npartition ho ps\n",
    "twice": "hops-partitions 1\npartition hops\npartition hops\n",
    "none": "hops-partitions 1\n",
    "oversized": "hops-partitions 1\npartition hops\n" + "#" * 5000,
    "too many": "hops-partitions 1\n" + "".join(f"partition p{i}\n" for i in range(65)),
    "long name": "hops-partitions 1\npartition " + "a" * 65 + "\n",
    "directory": "DIR",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_partition_file_refuses_only_hops_jobs_needing_the_default(tmp_path: Path, case: str) -> None:
    where = install(tmp_path, partitions=None)
    content = BAD[case]
    if content == "DIR":
        (where / "hops-partitions").mkdir()
    elif content is not None:
        (where / "hops-partitions").write_text(content)
    got, err = submit(where, "hops")
    assert got[0] == "-1" and err.startswith("#HOPS partition: the submit hook knows no Hops partition (hops-partitions: ")
    assert "\n" not in err
    assert submit(where, "plain") == (["0", "nil", "nil", "false"], "")  # every other job untouched
    assert submit(where, "plain", "gpu")[0] == ["0", "gpu", "nil", "false"]
    assert submit(where, "hops", "gpu")[0] == ["0", "gpu", "nil", "false"]  # names a partition: left to Slurm


def test_a_missing_or_broken_grammar_refuses_hops_jobs_only(tmp_path: Path) -> None:
    where = install(tmp_path, files=("hops_submit.lua",))
    got, err = submit(where, "hops")
    assert got[0] == "-1" and "cannot read #HOPS lines" in err
    assert submit(where, "plain")[0] == ["0", "nil", "nil", "false"]
    (where / "hops_directives.lua").write_text("error('broken')\n")
    assert submit(where, "hops")[0][0] == "-1" and submit(where, "plain")[0][0] == "0"


def test_an_internal_error_never_reaches_a_job_without_hops_lines(tmp_path: Path) -> None:
    where = install(tmp_path)
    out = run(where, r"""
H.verdict = function() error("boom") end
local plain, hops = { script = "#!/bin/sh\ntrue\n" }, { script = "#!/bin/sh\n#HOPS gpus=1\ntrue\n" }
print(H.job_submit(plain, {}, 1000), H.job_submit(hops, {}, 1000), H.job_modify({}, nil, {}, 1000))
""")
    assert out.stdout.split() == ["0", "-1", "0"]
    err = out.stderr.strip()
    assert err.startswith("#HOPS: internal error in the submit hook: ") and err.endswith("boom") and "\n" not in err


SITE_HOOK = r"""
-- a site's own hook: three rules of its own, and the two Hops lines
local hops = dofile("%s/hops_submit.lua")
function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.account == nil then job_desc.account = "general" end
	if job_desc.time_limit == nil or job_desc.time_limit == 4294967294 then
		slurm.log_user("set a time limit (--time)")
		return slurm.ERROR
	end
	if job_desc.qos == "high" then job_desc.qos = "normal" end
	local rc = hops.job_submit(job_desc, part_list, submit_uid); if rc ~= slurm.SUCCESS then return rc end
	return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local rc = hops.job_modify(job_desc, job_rec, part_list, modify_uid); if rc ~= slurm.SUCCESS then return rc end
	return slurm.SUCCESS
end
return slurm.SUCCESS
"""


def test_a_site_hook_keeps_its_rules_and_adds_hops_in_two_lines(tmp_path: Path) -> None:
    where = install(tmp_path / "etc", partitions=("gpu-hops",))
    (tmp_path / "site.lua").write_text(SITE_HOOK % where)
    out = run(where, r"""
dofile(arg[2])
local h = "#!/bin/sh\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n"
local a = { script = h, time_limit = 60, qos = "high" }
local b = { script = "#!/bin/sh\ntrue\n", time_limit = 60 }
local c = { script = h }
local d = { script = "#!/bin/sh\ntrue\n", time_limit = 60, reservation = "x,hops-offer" }
print(slurm_job_submit(a, {}, 1000), a.account, a.qos, a.partition, a.priority)
print(slurm_job_submit(b, {}, 1000), b.account, tostring(b.partition), tostring(b.priority))
print(slurm_job_submit(c, {}, 1000), slurm_job_submit(d, {}, 1000))
""", str(tmp_path / "site.lua"))
    assert out.stdout.splitlines() == ["0\tgeneral\tnormal\tgpu-hops\t0", "0\tgeneral\tnil\tnil", "-1\t-1"]


def test_the_shipped_job_submit_lua_is_the_module_alone(tmp_path: Path) -> None:
    where = install(tmp_path, partitions=("gpu-hops",))
    out = run(where, r"""
dofile(DIR .. "/job_submit.lua")
local j = { script = "#!/bin/sh\n#HOPS gpus=2 samples=1K batch-size=8 model=resnet18\ntrue\n" }
print(slurm_job_submit(j, {}, 1000), j.partition, j.priority, slurm_job_modify({ reservation = "hops-gate" }, {}, {}, 1000))
""")
    assert out.stdout.split() == ["0", "gpu-hops", "0", "-1"]


def test_a_hops_line_past_the_first_64_kib_still_reads_the_partitions(tmp_path: Path) -> None:
    """A script with no command in its first 32 KiB and #HOPS far beyond is refused by the grammar (syntax),
    as directives check refuses it: the hook must have read the partitions for it too."""
    where = install(tmp_path)
    out = run(where, r"""
local job = { script = "#!/bin/sh\n" .. string.rep("#\n", 40000) .. "#HOPS gpus=1\n" }
print(H.job_submit(job, {}, 1000))
""")
    assert out.stdout.split() == ["-1"] and out.stderr.startswith("#HOPS syntax: no command in the first 32768 bytes")


def test_an_accepted_hops_job_is_told_where_to_see_why_it_waits(tmp_path: Path) -> None:
    """Issue 35 item 4: sbatch prints the hook's message on acceptance; a Hops job's owner learns of
    `hops-slurm queue -j`; a job outside Hops gets no message at all."""
    where = install(tmp_path, partitions=("gpu-hops",))
    got, err = submit(where, "hops")
    assert got[0] == "0" and "'hops-slurm queue -j <jobid>'" in err and len(err.splitlines()) == 1
    got, err = submit(where, "hops", "gpu")
    assert got[0] == "0" and err == ""
    got, err = submit(where, "plain")
    assert got[0] == "0" and err == ""
