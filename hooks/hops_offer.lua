--[[
hops-slurm submit hook, offers (docs/design.md, "Offers: new jobs start at Slurm's next pass"): loaded by
job_submit.lua from the same directory; without this file every Hops job is held, as before offers.

While no Hops job waits, the engine writes the idle GPUs it offers to the file hops-offer in this
directory. A valid job that asks for no nodes of its own then gets its largest acceptable GPU count on
the first offered node that has that many free, in the reservation hops-offer, and is not held:
slurmctld starts it at its next scheduling pass, without waiting for the engine. One job per offer:
once a job took it, the next is held until the engine has read Slurm again (and, seeing a job wait,
closed the offer). No file, an expired or malformed one, or nothing that fits: the job is held.

Cost: one read of a file of at most MAX_OFFER_BYTES per Hops job, every line checked with plain
searches and single-class patterns (linear in the file).
]]

local hops, split, printable, offer_file = ...
hops.offer_file = offer_file

local OFFER = "hops-offer" -- the offer's reservation, and its file's name beside this hook
local MAX_OFFER_BYTES = 65536 -- hops_slurm/engine/offer.py: MAX_BYTES
local MAX_OFFER_NODES = 4096 -- hops_slurm/engine/offer.py: MAX_NODES
local MAX_NODE_NAME = 64
local BIG = 4294967294 -- Slurm's NO_VAL: a count the user did not set

-- When this hook last gave a job an offer (slurmctld keeps this Lua state between jobs).
hops.last_given = nil

local function words(line)
	local out = {}
	for w in string.gmatch(line, "[^ ]+") do
		table.insert(out, w)
		if #out > 3 then
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

-- The offer a file holds: { as_of, expires, tres, nodes = { {name, free}, ... } }, or nil.
function hops.read_offer(path)
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
			if line ~= "hops-offer 1" then
				return nil
			end
			first = false
		else
			local w = words(line)
			if w == nil then
				return nil
			end
			if w[1] == "node" and #w == 3 then
				local free = whole(w[3], 4)
				if string.len(w[2]) > MAX_NODE_NAME or string.find(w[2], "^[%w%._%-]+$") == nil or free == nil then
					return nil
				end
				if #offer.nodes < MAX_OFFER_NODES then
					table.insert(offer.nodes, { w[2], free })
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

local function unset(n)
	return n == nil or n <= 1 or n >= BIG
end

-- A valid Hops job (its canonical directives) on an offer: returns the node and GPU count it was given
-- and fills in its request, or nil (the job is held as usual).
function hops.take_offer(job_desc, canonical, now, path)
	if job_desc.req_nodes ~= nil or job_desc.exc_nodes ~= nil or job_desc.reservation ~= nil
		or not unset(job_desc.min_nodes) or not unset(job_desc.max_nodes) then
		return nil
	end
	local offer = hops.read_offer(path)
	if offer == nil or now >= offer.expires then
		return nil
	end
	local list = string.match(canonical, "^gpus=([%d,]+) ")
	if list == nil then
		return nil
	end
	-- one job per offer: the next waits for the engine's next read, which sees this one (a burst of
	-- submissions is the planner's to share out, not first come first served)
	if hops.last_given ~= nil and hops.last_given >= offer.as_of then
		return nil
	end
	local counts = split(list, ",")
	for i = #counts, 1, -1 do -- the largest acceptable count first
		local want = tonumber(counts[i])
		for _, node in ipairs(offer.nodes) do
			if node[2] >= want then
				job_desc.reservation = OFFER
				job_desc.req_nodes = node[1]
				job_desc.min_nodes = 1
				job_desc.max_nodes = 1
				job_desc.tres_per_node = offer.tres .. want
				hops.last_given = now
				return node[1], want
			end
		end
	end
	return nil
end

-- The entry point for job_submit.lua: true when the job took an offer (its request filled in, not to be
-- held); false otherwise, also on any error inside (logged).
function hops.offer(job_desc, canonical, uid)
	local ok, node, count = pcall(hops.take_offer, job_desc, canonical, os.time(), hops.offer_file)
	if ok and node ~= nil then
		slurm.log_info("hops: job from uid %s starts on the offer: %d GPUs on %s", tostring(uid), count, node)
		return true
	elseif not ok then
		slurm.log_info("hops: offer not taken: %s", printable(tostring(node)))
	end
	return false
end
