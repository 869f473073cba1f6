--[[
hops-slurm: the complete submit hook for a site that has no job_submit.lua of its own (Slurm's
JobSubmitPlugins=lua; this file beside slurm.conf, hops_submit.lua and its files beside it). A site that
has its own hook adds the two calls below to it instead (docs/admin-guide.md, "The submit hook").
Hops's rules apply to #HOPS jobs in Hops partitions, and to every job only where it names a hops-*
reservation; every other job passes untouched.
]]

local function here()
	local info = debug.getinfo(1, "S")
	local src = info and info.source or ""
	return string.match(string.sub(src, 2, 4097), "^(.*/)") or "./"
end

local hops = dofile(here() .. "hops_submit.lua")

function slurm_job_submit(job_desc, part_list, submit_uid)
	return hops.job_submit(job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return hops.job_modify(job_desc, job_rec, part_list, modify_uid)
end

return slurm.SUCCESS
