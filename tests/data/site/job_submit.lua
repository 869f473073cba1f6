--[[
A site's own submit hook, as a site that already runs Slurm has one (the site-shaped live test,
tests/hops_slurm/site/test_site_live.py): three rules of its own, which hold for every job, and the lines
that call the Hops module (docs/admin-guide.md). Lua 5.1.

Rules: (1) a job that names no account is charged to `research`; (2) a job without a time limit is
refused; (3) the retired QOS `debug` is rewritten to `low`.
]]

local here = (debug.getinfo(1, "S").source or ""):match("^@(.*/)") or "/etc/slurm/"
local hops = dofile(here .. "hops_submit.lua")

local NO_VAL = slurm.NO_VAL or 4294967294

function slurm_job_submit(job_desc, part_list, submit_uid)
	if job_desc.account == nil then
		job_desc.account = "research"
	end
	if job_desc.time_limit == nil or job_desc.time_limit == NO_VAL then
		slurm.log_user("site rule: every job needs a time limit (--time)")
		return slurm.ERROR
	end
	if job_desc.qos == "debug" then
		job_desc.qos = "low"
	end
	local rc = hops.job_submit(job_desc, part_list, submit_uid); if rc ~= slurm.SUCCESS then return rc end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	local rc = hops.job_modify(job_desc, job_rec, part_list, modify_uid); if rc ~= slurm.SUCCESS then return rc end
	return slurm.SUCCESS
end

return slurm.SUCCESS
