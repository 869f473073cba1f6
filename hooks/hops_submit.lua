--[[
hops-slurm submit hook, the Hops module (docs/admin-guide.md, "The submit hook"). A site's own
job_submit.lua calls it in two lines; hooks/job_submit.lua is the complete hook for sites with none:

    local hops = dofile("/etc/slurm/hops_submit.lua")
    -- slurm_job_submit: local rc = hops.job_submit(job_desc, part_list, submit_uid); if rc ~= slurm.SUCCESS then return rc end
    -- slurm_job_modify: local rc = hops.job_modify(job_desc, job_rec, part_list, modify_uid); if rc ~= slurm.SUCCESS then return rc end

Lua 5.1 as Debian's Slurm links it (22.05 to 26.05); tested with lua5.1 (tests/hooks/) and inside
slurmctld. Everything it reads lies in its own directory: hops_directives.lua (the #HOPS grammar,
docs/directives-grammar.md), hops_offer.lua (offers, optional), hops-partitions (the Hops partitions the
daemon writes from [slurm] partitions) and hops-offer (the engine's offer).

Where it sits: first stop of every job, after or before the site's own rules. A *Hops job* has #HOPS lines
(or a hops: comment) and is in Hops partitions only (or names none: it goes to the first, the default).
It is validated, its GPU options translated or refused (docs/directives-grammar.md, "Existing GPU
scripts"), gets its canonical directives in admin_comment and is held (priority 0) until the engine
places it, or takes an offer. A #HOPS script in other partitions is not a Hops job and is left alone.
Every job: a user (uid != 0) naming a hops-* reservation anywhere in Slurm's comma list is refused, at
submission and by update; an owner's edit of the engine's fields of a pending Hops job is refused.

Never raises into the site's hook: every entry point runs under pcall; an internal error refuses a job
only when it has #HOPS lines or a hops: comment (one line), never any other job.

Cost: slurmctld holds its job lock while this runs. A job without #HOPS lines costs the directive scan
of its first 32 KiB and one linear search of its reservation; the partition file (at most 4096 bytes)
and the offer file (at most 64 KiB) are read for Hops jobs only. Every pattern is linear.
]]

local M = {}

local MAX_PARTS_BYTES = 4096 -- bytes of hops-partitions the hook reads (more: refused as oversized)
local MAX_PARTS = 64
local MAX_PART_NAME = 64
local PARTS_HEADER = "hops-partitions 1"
local NO_VAL16, NO_VAL, NO_VAL64 = 65534, 4294967294, 18446744073709551614

-- This file's directory with its trailing "/" (nil when not loaded from a file); one anchored run up
-- to the last "/" (linear), over at most 4096 bytes.
local function module_dir()
	local info = debug and debug.getinfo and debug.getinfo(1, "S")
	local src = info and info.source or ""
	if string.sub(src, 1, 1) ~= "@" then
		return nil
	end
	return string.match(string.sub(src, 2, 4097), "^(.*/)") or "./"
end

local DIR = module_dir()
M.dir = DIR
M.partitions_file = DIR and DIR .. "hops-partitions"

-- The grammar; without it (missing, broken) every #HOPS job is refused with one line, others untouched.
local hops, load_error
do
	local chunk, err = DIR and loadfile(DIR .. "hops_directives.lua")
	if chunk then
		local ok, result = pcall(chunk)
		if ok and type(result) == "table" then
			hops = result
		else
			load_error = tostring(result)
		end
	else
		load_error = tostring(err or "not loaded from a file")
	end
end
M.hops = hops

local function printable(s, n)
	s = string.sub(tostring(s), 1, n or 200)
	return (string.gsub(s, "[^ -~]", function(c)
		return string.format("\\x%02X", string.byte(c))
	end))
end
M.printable = printable

-- Offers: hops_offer.lua beside this file; without it, or broken, every Hops job is held.
M.offers = nil
if hops and DIR then
	local chunk = loadfile(DIR .. "hops_offer.lua")
	if chunk then
		local ok, result = pcall(chunk, hops, DIR .. "hops-offer")
		if ok and type(result) == "table" then
			M.offers = result
		end
	end
end

local function log_user(msg)
	if slurm and slurm.log_user then
		slurm.log_user("%s", msg)
	end
end

local function log_info(fmt, ...)
	if slurm and slurm.log_info then
		slurm.log_info(fmt, ...)
	end
end

------------------------------------------------------------------------------------------------------
-- The Hops partitions: hops-partitions beside this file (docs/admin-guide.md, "Hops partitions")
------------------------------------------------------------------------------------------------------

-- The partitions a file holds (a list, the first the default), or nil and the problem in one line.
function M.read_partitions(path)
	if path == nil then
		return nil, "hops-partitions: the hook was not loaded from a file"
	end
	local shown = printable(path, 300)
	local f, err = io.open(path, "rb")
	if not f then
		return nil, "hops-partitions: cannot open " .. shown .. " (" .. printable(err or "?", 200) .. ")"
	end
	local text, rerr = f:read(MAX_PARTS_BYTES + 1)
	f:close()
	if text == nil and rerr ~= nil then
		return nil, "hops-partitions: " .. shown .. " is not a readable file (" .. printable(rerr, 100) .. ")"
	end
	if text == nil or text == "" then
		return nil, "hops-partitions: " .. shown .. " is empty"
	end
	if string.len(text) > MAX_PARTS_BYTES then
		return nil, string.format("hops-partitions: %s is larger than %d bytes", shown, MAX_PARTS_BYTES)
	end
	local parts, seen, n = {}, {}, 0
	for line in string.gmatch(text, "[^\n]+") do
		n = n + 1
		if n == 1 then
			if line ~= PARTS_HEADER then
				return nil, "hops-partitions: " .. shown .. " does not start with '" .. PARTS_HEADER .. "'"
			end
		else
			local name = string.match(line, "^partition ([A-Za-z0-9._%-]+)$")
			if name == nil or string.len(name) > MAX_PART_NAME then
				return nil, string.format("hops-partitions: %s line %d is not 'partition NAME' (NAME: [A-Za-z0-9._-], at most %d bytes)", shown, n, MAX_PART_NAME)
			end
			if seen[name] then
				return nil, string.format("hops-partitions: %s names partition %s twice", shown, name)
			end
			if #parts >= MAX_PARTS then
				return nil, string.format("hops-partitions: %s names more than %d partitions", shown, MAX_PARTS)
			end
			seen[name] = true
			table.insert(parts, name)
		end
	end
	if #parts == 0 then
		return nil, "hops-partitions: " .. shown .. " names no partition"
	end
	return parts
end

------------------------------------------------------------------------------------------------------
-- The verdict: the same rules as hops_slurm/submit_policy.py (tests/hooks/test_script_corpus.py)
------------------------------------------------------------------------------------------------------

-- True when a reservation string names a hops-* reservation anywhere in its comma list. Slurm splits on
-- "," and skips empty names (_get_resv_list); blanks and case are treated as separators and folded here
-- too, so no spelling gets past: plain searches for "hops-", each hit's previous byte checked (linear).
function M.engine_reservation(r)
	if type(r) ~= "string" then
		return false
	end
	local s, from = "," .. string.lower(r), 1
	while true do
		local at = string.find(s, "hops-", from, true) -- plain search; s starts with ",", so at >= 2
		if at == nil then
			return false
		elseif string.find(string.sub(s, at - 1, at - 1), "^[,%s]$") then
			return true
		end
		from = at + 1
	end
end

local function is_hops_text(script, comment)
	if type(comment) == "string" and string.find(comment, "^[ \t]*hops:") then
		return true
	end
	return type(script) == "string" and string.find(script, "#HOPS", 1, true) ~= nil -- plain: memchr speed
end

-- A GPU request field (tres_per_node / tres_per_job): GPU entries read, others kept.
-- Returns count, type, rest (the field without its GPU entries, nil when empty), or nil, raw on a GPU
-- entry it cannot read.
local function gpu_entries(value)
	local count, gtype, found, keep = 0, nil, false, {}
	for _, entry in ipairs(hops.split(string.sub(value, 1, 1024), ",")) do
		local body = entry
		local prefix = string.sub(body, 1, 5)
		if prefix == "gres:" or prefix == "gres/" then
			body = string.sub(body, 6)
		end
		local name = string.match(body, "^([^:]*)")
		if name == "gpu" then
			found = true
			local rest = string.sub(body, 4)
			local n, t
			if rest == "" then
				n = "1"
			else
				n = string.match(rest, "^:(%d+)$")
				if n == nil then
					t, n = string.match(rest, "^:([A-Za-z0-9._%-]+):(%d+)$")
					if t == nil then
						t = string.match(rest, "^:([A-Za-z0-9._%-]+)$")
						n = t and "1" or nil
					end
				end
			end
			if t == nil and (n == nil or string.len(n) > 7) then
				return nil, value
			end
			if t ~= nil then
				gtype = gtype or t
			end
			count = count + tonumber(n)
		elseif entry ~= "" then
			table.insert(keep, entry)
		end
	end
	if not found then
		return false
	end
	return count, gtype, (#keep > 0) and table.concat(keep, ",") or nil
end

local function unset_number(n)
	return n == nil or n == NO_VAL16 or n == NO_VAL or n == NO_VAL64
end

-- The GPU options of a Hops job with acceptable counts `counts` (a list of numbers): returns the
-- changes to make ({ field = new value or false }) and a note, or raises { key, message }.
local function migrate_gpus(req, counts)
	for _, f in ipairs({ { "tres_per_task", "--gpus-per-task" }, { "tres_per_socket", "--gpus-per-socket" } }) do
		local v = req[f[1]]
		if type(v) == "string" and string.find(v, "gpu", 1, true) then
			error({ key = "gpus", message = "#HOPS gpus: remove " .. f[2] .. ": a #HOPS job gets its GPUs from its gpus= line" }, 0)
		end
	end
	local total, changes, fields = nil, {}, 0
	for _, field in ipairs({ "tres_per_job", "tres_per_node" }) do
		local v = req[field]
		if type(v) == "string" and v ~= "" then
			local n, gtype, rest = gpu_entries(v)
			if n == nil then
				error({ key = "gpus", message = "#HOPS gpus: remove --gres/--gpus (got " .. printable(gtype, 60) .. "): the Hops engine picks the GPUs of a #HOPS job from its gpus= line" }, 0)
			elseif n then
				if gtype ~= nil then
					error({ key = "gpus", message = "#HOPS gpus: remove --gres/--gpus (it names GPU type " .. printable(gtype, 40) .. "): the Hops engine picks the type and count of a #HOPS job from its gpus= line" }, 0)
				end
				fields = fields + 1
				if field == "tres_per_node" and not unset_number(req.min_nodes) and req.min_nodes > 1 then
					n = n * req.min_nodes
				end
				total = n
				changes[field] = rest or false
			end
		end
	end
	if total == nil then
		return changes, nil
	end
	local list = table.concat(counts, ",")
	if fields > 1 then
		error({ key = "gpus", message = "#HOPS gpus: remove --gres/--gpus (GPUs asked for twice): the Hops engine picks the count from gpus=" .. list }, 0)
	end
	for _, c in ipairs(counts) do
		if c == total then
			return changes, string.format("#HOPS: the request for %d GPUs (--gres/--gpus) is dropped: the Hops engine gives this job one of gpus=%s", total, list)
		end
	end
	error({ key = "gpus", message = string.format("#HOPS gpus: --gres/--gpus asks for %d GPUs, not one of gpus=%s: remove --gres/--gpus (the Hops engine picks the count from gpus=)", total, list) }, 0)
end

-- The partitions a job names (Slurm's comma list, empty names skipped), nil when it names none.
local function named_partitions(p)
	if type(p) ~= "string" then
		return nil
	end
	local out = {}
	for _, name in ipairs(hops.split(string.sub(p, 1, 4096), ",")) do
		if name ~= "" then
			table.insert(out, name)
		end
	end
	return (#out > 0) and out or nil
end

-- The verdict on a submission: { kind = "NONE" } (not a Hops job: untouched), { kind = "ERR", message },
-- or { kind = "OK", canonical, partitions (the job's Hops partitions), changes, note }. `parts` is the
-- list of Hops partitions, or nil with `problem` saying why there is none.
function M.verdict(req, parts, problem)
	if req.uid ~= 0 and M.engine_reservation(req.reservation) then
		return { kind = "ERR", message = "reservation " .. printable(req.reservation) .. " belongs to the Hops engine: submit without --reservation" }
	end
	if not is_hops_text(req.script, req.comment) and not hops then
		return { kind = "NONE" }
	end
	if not hops then
		return { kind = "ERR", message = "#HOPS: the submit hook cannot read #HOPS lines (hops_directives.lua: " .. printable(load_error, 120) .. "): tell your administrator" }
	end
	local ok, result = pcall(hops.parse_job, req.script, req.comment)
	if ok and result == nil then
		return { kind = "NONE" }
	end
	local named = named_partitions(req.partition)
	local job_parts
	if named == nil then
		if parts == nil then
			return { kind = "ERR", message = "#HOPS partition: the submit hook knows no Hops partition (" .. tostring(problem) .. "): tell your administrator" }
		end
		job_parts = { parts[1] }
	else
		if parts == nil then
			return { kind = "NONE", why = problem }
		end
		local is_hops, inside, outside = {}, {}, {}
		for _, p in ipairs(parts) do
			is_hops[p] = true
		end
		for _, p in ipairs(named) do
			table.insert(is_hops[p] and inside or outside, p)
		end
		if #inside == 0 then
			return { kind = "NONE", why = "not in a Hops partition" }
		end
		if #outside > 0 then
			return { kind = "ERR", message = "#HOPS partition: " .. printable(table.concat(named, ","), 200) .. " mixes Hops partitions (" .. table.concat(inside, ",") .. ") with others: list only Hops partitions, or remove the #HOPS lines to run outside Hops" }
		end
		job_parts = inside
	end
	if not ok then
		if type(result) == "table" then
			return { kind = "ERR", message = result.message, key = result.key }
		end
		error(result, 0)
	end
	local counts = {}
	for c in string.gmatch(string.match(result, "^gpus=([%d,]+)") or "", "%d+") do
		table.insert(counts, tonumber(c))
	end
	local mok, changes, note = pcall(migrate_gpus, req, counts)
	if not mok then
		if type(changes) == "table" then
			return { kind = "ERR", message = changes.message, key = changes.key }
		end
		error(changes, 0)
	end
	return { kind = "OK", canonical = result, partitions = job_parts, changes = changes, note = note }
end

------------------------------------------------------------------------------------------------------
-- Slurm entry points
------------------------------------------------------------------------------------------------------

-- True when a user (uid != 0) brings an admin_comment of the engine's form: only this hook writes
-- "hops:" there, and the engine takes a job whose admin_comment has it for a Hops job whose directives
-- the hook checked. Slurm's clients cannot set it, but a hand-made request could (one plain compare).
local function forged_admin_comment(job_desc, uid)
	local ac = job_desc.admin_comment
	return uid ~= 0 and type(ac) == "string" and string.sub(ac, 1, 5) == "hops:" -- hops_directives.lua: COMMENT_PREFIX
end

local function submit(job_desc, part_list, uid)
	if forged_admin_comment(job_desc, uid) then -- also when the grammar did not load
		log_user("admin_comment hops:... is written by the Hops submit hook only: submit without it")
		log_info("hops: rejected job from uid %s: a hops: admin_comment of its own", tostring(uid))
		return slurm.ERROR
	end
	local req = {
		uid = uid, script = job_desc.script, comment = job_desc.comment, partition = job_desc.partition,
		reservation = job_desc.reservation, tres_per_node = job_desc.tres_per_node,
		tres_per_job = job_desc.tres_per_job, tres_per_task = job_desc.tres_per_task,
		tres_per_socket = job_desc.tres_per_socket, min_nodes = job_desc.min_nodes,
	}
	-- the partition file is read only for a job with #HOPS text (a FIFO planted there holds no other job)
	local parts, problem
	if is_hops_text(req.script, req.comment) then
		parts, problem = M.read_partitions(M.partitions_file)
	end
	local v = M.verdict(req, parts, problem)
	if v.kind == "NONE" then
		if v.why and parts == nil and problem then
			log_info("hops: job from uid %s with #HOPS lines left to Slurm: %s", tostring(uid), problem)
		end
		return slurm.SUCCESS
	elseif v.kind == "ERR" then
		log_user(v.message)
		log_info("hops: rejected job from uid %s: %s", tostring(uid), v.message)
		return slurm.ERROR
	end
	for field, value in pairs(v.changes) do
		job_desc[field] = value or "" -- slurmctld's Lua clears a string field with "", never nil
	end
	job_desc.partition = table.concat(v.partitions, ",")
	job_desc.admin_comment = hops.COMMENT_PREFIX .. v.canonical
	if v.note then
		log_user(v.note)
	end
	-- sbatch prints this on acceptance: where the owner finds why the job waits (docs/user-guide.md)
	log_user("hops: Hops places this job's GPUs; 'hops-slurm queue -j <jobid>' shows its place in the queue and why it waits")
	if M.offers ~= nil and M.offers.offer(job_desc, v.canonical, v.partitions, part_list, uid) then
		return slurm.SUCCESS -- not held: slurmctld starts it at its next scheduling pass (hops_offer.lua)
	end
	job_desc.priority = 0 -- held until the Hops engine places and releases it
	return slurm.SUCCESS
end

-- What an owner may not change in a pending Hops job: the engine sets them (GPUs, nodes, placement).
local ENGINE_FIELDS = {
	{ "tres_per_node", "TresPerNode" }, { "tres_per_job", "TresPerJob" }, { "tres_per_task", "TresPerTask" },
	{ "tres_per_socket", "TresPerSocket" }, { "req_nodes", "ReqNodeList" }, { "exc_nodes", "ExcNodeList" },
	{ "min_nodes", "NumNodes" }, { "max_nodes", "NumNodes" }, { "features", "Features" },
	{ "partition", "Partition" }, { "reservation", "Reservation" }, { "shared", "OverSubscribe" },
	{ "core_spec", "CoreSpec" },
}

local function modify(job_desc, job_rec, uid)
	if uid == 0 then
		return slurm.SUCCESS
	end
	if M.engine_reservation(job_desc.reservation) then
		log_user("reservation " .. printable(job_desc.reservation) .. " belongs to the Hops engine")
		return slurm.ERROR
	end
	if forged_admin_comment(job_desc, uid) then
		log_user("admin_comment hops:... is written by the Hops submit hook only")
		return slurm.ERROR
	end
	local ac = job_rec and job_rec.admin_comment
	local state = job_rec and tonumber(job_rec.job_state)
	if type(ac) == "string" and string.sub(ac, 1, 5) == "hops:" and state ~= nil and state % 256 == 0 then
		for _, f in ipairs(ENGINE_FIELDS) do
			local v = job_desc[f[1]]
			if (type(v) == "string") or (type(v) == "number" and not unset_number(v)) then
				local msg = "#HOPS: " .. f[2] .. " of a pending Hops job is the Hops engine's to set: cancel and resubmit to change it"
				log_user(msg)
				log_info("hops: refused an edit of %s by uid %s: %s", tostring(job_rec.job_id), tostring(uid), f[2])
				return slurm.ERROR
			end
		end
	end
	return slurm.SUCCESS
end

-- An internal error: one line for a job with #HOPS text, nothing for any other job.
local function internal(job_desc, err, uid)
	log_info("hops: internal error in hops_submit.lua (uid %s): %s", tostring(uid), printable(err, 300))
	if job_desc and is_hops_text(job_desc.script, job_desc.comment) then
		log_user("#HOPS: internal error in the submit hook: " .. printable(err, 200))
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

function M.job_submit(job_desc, part_list, uid)
	local ok, rc = pcall(submit, job_desc, part_list, uid)
	if ok then
		return rc
	end
	local eok, erc = pcall(internal, job_desc, rc, uid)
	return eok and erc or slurm.SUCCESS
end

function M.job_modify(job_desc, job_rec, part_list, uid)
	local ok, rc = pcall(modify, job_desc, job_rec, uid)
	if ok then
		return rc
	end
	log_info("hops: internal error in hops_submit.lua (modify, uid %s): %s", tostring(uid), printable(rc, 300))
	return slurm.SUCCESS
end

return M
