--[[
hops-slurm submit hook, offers (docs/design.md, "Offers: new jobs start at Slurm's next pass"): loaded by
hops_submit.lua from the same directory; without this file every Hops job is held, as before offers.

While no Hops job waits, the engine writes the idle GPUs it offers to the file hops-offer in this
directory (format 2: `node <name> <free GPUs> <partition>[,<partition>...]`, the Hops partitions the node
is in). A valid Hops job that may take an offer (`eligible` below: one node, no nodes, features,
reservation, exclusivity, all of a node's memory (--mem=0), core specialisation, array, dependency, hold
or future start of its own) gets its largest acceptable GPU count on the first offered node of one of its
partitions that has that many free, in the reservation hops-offer, and is not held: slurmctld starts it
at its next scheduling pass.
No file, an expired or malformed one, or nothing that fits: the job is held.

One job per offer, also across a restart: an offer is served only when its as_of (when the engine's
read of Slurm began, in whole seconds) is later than the last offer this hook gave AND than the moment
this Lua state was loaded (slurmctld start, `scontrol reconfigure`, a new job_submit.lua); the offer
given is remembered by the later of the hook's clock and its as_of (an as_of in the future serves once).
A job given an offer before a restart is in Slurm's saved state; only a read of Slurm begun after it can
see it.

Cost: one read of a file of at most MAX_OFFER_BYTES per Hops job, every line checked with plain
searches and single-class patterns (linear in the file).
]]

local hops, offer_file = ...

local O = { file = offer_file }

local OFFER = "hops-offer" -- the offer's reservation, and its file's name beside this hook
local HEADER = "hops-offer 2"
local MAX_OFFER_BYTES = 65536 -- hops_slurm/engine/offer.py: MAX_BYTES
local MAX_OFFER_NODES = 4096 -- hops_slurm/engine/offer.py: MAX_NODES
local MAX_NODE_NAME = 64
local MAX_NODE_PARTS = 64
local NO_VAL16, NO_VAL = 65534, 4294967294
local JOB_SHARED_NONE = 0 -- --exclusive (job_desc.shared); 2 = user, 3 = mcs: also whole nodes
local PART_EXCLUSIVE = 0 -- a partition's max_share with OverSubscribe=EXCLUSIVE

-- When this Lua state was loaded, and when it last gave a job an offer (slurmctld keeps the state
-- between jobs, and loses it on a restart or reload: then loaded_at is the later of the two).
O.loaded_at = os.time()
O.last_given = nil

local function words(line)
	local out = {}
	for w in string.gmatch(line, "[^ ]+") do
		table.insert(out, w)
		if #out > 4 then
			return nil
		end
	end
	return out
end

local function whole(s, n)
	if s == nil or string.len(s) > n or string.find(s, "^%d+$") == nil then
		return nil
	end
	return tonumber(s)
end

local function valid_name(s)
	return string.len(s) <= MAX_NODE_NAME and string.find(s, "^[%w%._%-]+$") ~= nil
end

-- The partitions of a node line, as a set; nil when malformed.
local function node_parts(field)
	local set, n = {}, 0
	for _, p in ipairs(hops.split(field, ",")) do
		n = n + 1
		if n > MAX_NODE_PARTS or not valid_name(p) then
			return nil
		end
		set[p] = true
	end
	return set
end

-- The offer a file holds: { as_of, expires, tres, nodes = { {name, free, partitions}, ... } }, or nil.
function O.read_offer(path)
	if path == nil then
		return nil
	end
	local f = io.open(path, "rb")
	if not f then
		return nil
	end
	local text = f:read(MAX_OFFER_BYTES + 1)
	f:close()
	if text == nil or string.len(text) > MAX_OFFER_BYTES then
		return nil
	end
	local offer = { nodes = {} }
	local first = true
	for line in string.gmatch(text, "[^\n]+") do
		if first then
			if line ~= HEADER then
				return nil
			end
			first = false
		else
			local w = words(line)
			if w == nil then
				return nil
			end
			if w[1] == "node" and #w == 4 then
				local free = whole(w[3], 4)
				local parts = string.len(w[4]) <= 4096 and node_parts(w[4])
				if not valid_name(w[2]) or free == nil or not parts then
					return nil
				end
				if #offer.nodes < MAX_OFFER_NODES then
					table.insert(offer.nodes, { w[2], free, parts })
				end
			elseif (w[1] == "as_of" or w[1] == "expires") and #w == 2 then
				offer[w[1]] = whole(w[2], 12)
			elseif w[1] == "tres" and #w == 2 and (w[2] == "gres:gpu:" or w[2] == "gres/gpu:") then
				offer.tres = w[2]
			else
				return nil
			end
		end
	end
	if offer.as_of == nil or offer.expires == nil or offer.tres == nil then
		return nil
	end
	return offer
end

local function set_number(n)
	return type(n) == "number" and n ~= NO_VAL16 and n ~= NO_VAL and n < 18446744073709551614
end

-- Core or thread specialisation asked for in the script's #SBATCH lines (22.05 and 24.11 do not show
-- job_desc.core_spec to the hook). Plain searches over the first 32 KiB.
local function script_spec(script)
	local h = string.sub(script or "", 1, 32768)
	return string.find(h, "--core-spec", 1, true) ~= nil or string.find(h, "--thread-spec", 1, true) ~= nil
		or string.find(h, "#SBATCH -S", 1, true) ~= nil
end

-- Why a job may not take an offer (a word for the log), or nil when it may. An offer is one node's
-- idle GPUs for one job that asks for nothing else: anything that makes Slurm give it more than the
-- GPUs it is granted, or start it later or elsewhere, keeps it on the engine's path.
function O.ineligible(job_desc, part_list, partitions, now)
	if job_desc.req_nodes ~= nil or job_desc.exc_nodes ~= nil then
		return "nodelist"
	elseif job_desc.reservation ~= nil then
		return "reservation"
	elseif (set_number(job_desc.min_nodes) and job_desc.min_nodes > 1) or (set_number(job_desc.max_nodes) and job_desc.max_nodes > 1) then
		return "nodes"
	elseif set_number(job_desc.shared) and job_desc.shared ~= 1 then
		return "exclusive"
	elseif job_desc.pn_min_memory == 0 or job_desc.min_mem_per_node == 0 or job_desc.min_mem_per_cpu == 0 then
		return "mem=0" -- all of each node's memory: the node's other GPUs would be unusable by anyone else
	elseif set_number(job_desc.core_spec) or set_number(job_desc.thread_spec) or script_spec(job_desc.script) then
		return "core-spec"
	elseif job_desc.array_inx ~= nil then
		return "array"
	elseif job_desc.dependency ~= nil and job_desc.dependency ~= "" then
		return "dependency"
	elseif job_desc.priority == 0 then
		return "hold"
	elseif set_number(job_desc.begin_time) and job_desc.begin_time > now then
		return "begin"
	elseif job_desc.features ~= nil and job_desc.features ~= "" then
		return "features"
	end
	if type(part_list) == "table" then
		for _, p in ipairs(partitions) do
			local rec = part_list[p]
			if type(rec) == "table" or type(rec) == "userdata" then
				local ok, share = pcall(function() return rec.max_share end)
				if ok and share == PART_EXCLUSIVE then
					return "partition-exclusive"
				end
			end
		end
	end
	return nil
end

-- A valid Hops job (its canonical directives, its Hops partitions) on an offer: returns the node, the
-- GPU count and the partition it was given and fills in its request, or nil (the job is held).
function O.take_offer(job_desc, canonical, partitions, part_list, now, path)
	local why = O.ineligible(job_desc, part_list, partitions, now)
	if why then
		return nil, why
	end
	local offer = O.read_offer(path)
	if offer == nil or now >= offer.expires then
		return nil, "no open offer"
	end
	-- one job per offer, also after a restart: only a read of Slurm begun after this hook last gave an
	-- offer (or was loaded) has seen that job
	if offer.as_of <= O.loaded_at or (O.last_given ~= nil and offer.as_of <= O.last_given) then
		return nil, string.format("offer of %d already served (given %s, loaded %d)", offer.as_of, tostring(O.last_given), O.loaded_at)
	end
	local list = string.match(canonical, "^gpus=([%d,]+) ")
	if list == nil then
		return nil
	end
	local counts = hops.split(list, ",")
	for i = #counts, 1, -1 do -- the largest acceptable count first
		local want = tonumber(counts[i])
		for _, node in ipairs(offer.nodes) do
			if node[2] >= want then
				for _, p in ipairs(partitions) do
					if node[3][p] then
						job_desc.reservation = OFFER
						job_desc.req_nodes = node[1]
						job_desc.min_nodes = 1
						job_desc.max_nodes = 1
						job_desc.partition = p
						job_desc.tres_per_node = offer.tres .. want
						-- the offer given is remembered by its as_of too: one stamped later than this
						-- clock (stepped back, or an engine ahead of it) is still served once
						O.last_given = math.max(now, offer.as_of)
						return node[1], want, p
					end
				end
			end
		end
	end
	return nil, "nothing fits"
end

-- The entry point for hops_submit.lua: true when the job took an offer (its request filled in, not to be
-- held); false otherwise, also on any error inside (logged, the job's request untouched).
function O.offer(job_desc, canonical, partitions, part_list, uid)
	local saved = {}
	for _, k in ipairs({ "reservation", "req_nodes", "min_nodes", "max_nodes", "partition", "tres_per_node" }) do
		saved[k] = job_desc[k]
	end
	local ok, node, count, part = pcall(O.take_offer, job_desc, canonical, partitions, part_list, os.time(), O.file)
	if ok and node ~= nil then
		if slurm and slurm.log_info then
			slurm.log_info("hops: job from uid %s starts on the offer: %d GPUs on %s (partition %s)", tostring(uid), count, node, part)
		end
		return true
	elseif ok then
		if slurm and slurm.log_info then
			slurm.log_info("hops: job from uid %s held, no offer: %s", tostring(uid), tostring(count))
		end
	elseif not ok then
		for k, v in pairs(saved) do -- only the fields that were set (a string field is cleared with "")
			if job_desc[k] ~= v then
				job_desc[k] = v
			end
		end
		for _, k in ipairs({ "reservation", "req_nodes", "partition", "tres_per_node" }) do
			if saved[k] == nil and job_desc[k] ~= nil then
				job_desc[k] = ""
			end
		end
		if slurm and slurm.log_info then
			slurm.log_info("hops: offer not taken: %s", string.sub(tostring(node), 1, 200))
		end
	end
	return false
end

return O
