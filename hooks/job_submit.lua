--[[
hops-slurm submit hook (Slurm JobSubmitPlugins=lua; file beside slurm.conf; Lua 5.1 as Slurm 22.05 links it).

Where it sits: first stop of every job. A job whose batch script has #HOPS lines (or whose --comment
starts with "hops:") is validated with the same grammar as hops_slurm/directives.py and the same test
vectors (tests/data/directives); a malformed job is rejected with a message naming the key; a valid
one gets its canonical directives in admin_comment ("hops:<canonical>"), is put in the Hops partition
when it named none, and is held (priority 0) until the Hops engine places and releases it. A Hops job
may not ask for GPUs itself (--gres/--gpus): the engine decides how many and of which type. Jobs
without directives are left alone.
]]

HOPS_PARTITION = "hops"

local MAX_GPUS = 1024
local MAX_CHOICES = 8
local MAX_SAMPLES = 1e15
local MAX_BATCH = 65536
local MAX_PARAMS = 1e13
local MAX_EPOCHS = 100000
local MAX_LR = 1000.0
local COMMENT_PREFIX = "hops:"
local KEYS = { "gpus", "levels", "samples", "epochs", "dataset-size", "batch-size", "model", "lr", "lr-scale", "params" }
local SUFFIX = { [""] = 1, K = 1e3, M = 1e6, G = 1e9 }

local hops = {}

local function fail(key, msg)
	error({ key = key, message = "#HOPS " .. key .. ": " .. msg }, 0)
end

local function quote(s, n)
	-- Python's repr() of a short string, as the Python model shows it
	s = string.sub(s, 1, n or 40)
	if string.find(s, "'", 1, true) and not string.find(s, '"', 1, true) then
		return '"' .. s .. '"'
	end
	return "'" .. string.gsub(s, "'", "\\'") .. "'"
end

local function is_known_key(k)
	for _, known in ipairs(KEYS) do
		if k == known then
			return true
		end
	end
	return false
end

local function valid_key_syntax(k)
	return string.len(k) <= 32 and string.find(k, "^[a-z][a-z%-]*$") ~= nil
end

local function bounded_int(key, value, lo, hi)
	if not string.find(value, "^%d+$") or string.len(value) > 7 then
		fail(key, quote(value) .. " is not a whole number")
	end
	local n = tonumber(value)
	if n < lo or n > hi then
		fail(key, string.format("%d is outside %d..%d", n, lo, hi))
	end
	return n
end

local function quantity(key, value, hi)
	-- positive whole quantity with an optional K/M/G suffix, computed exactly in integers
	local int, frac, suffix = string.match(value, "^(%d+)%.?(%d*)([KMG]?)$")
	local has_dot = string.find(value, ".", 1, true) ~= nil
	if not int or string.len(value) > 24 or (has_dot and frac == "") then
		fail(key, quote(value) .. " is not a number (use e.g. 1200000 or 1.2M)")
	end
	local mult = SUFFIX[suffix]
	local n = tonumber(int) * mult
	if frac ~= "" then
		local scale = 10 ^ string.len(frac)
		local part = tonumber(frac) * mult
		if part % scale ~= 0 then
			fail(key, value .. " is not a whole number")
		end
		n = n + part / scale
	end
	if n < 1 or n > hi then
		fail(key, value .. " is outside 1.." .. string.format("%.0e", hi))
	end
	return n
end

local function split(s, sep)
	local out, start = {}, 1
	while true do
		local i = string.find(s, sep, start, true)
		if not i then
			table.insert(out, string.sub(s, start))
			return out
		end
		table.insert(out, string.sub(s, start, i - 1))
		start = i + 1
	end
end

local function parse_gpus(value, levels)
	if string.find(value, "-", 1, true) then
		local i = string.find(value, "-", 1, true)
		local lo = bounded_int("gpus", string.sub(value, 1, i - 1), 1, MAX_GPUS)
		local hi = bounded_int("gpus", string.sub(value, i + 1), 1, MAX_GPUS)
		if lo >= hi then
			fail("gpus", "range " .. value .. " must go from a smaller to a larger count")
		end
		local span = hi - lo + 1
		local n
		if levels ~= nil then
			n = bounded_int("levels", levels, 2, MAX_CHOICES)
		else
			n = math.min(span, MAX_CHOICES)
		end
		if n > span then
			fail("levels", string.format("%d levels do not fit in the range %s (%d counts)", n, value, span))
		end
		local seen, counts = {}, {}
		for k = 0, n - 1 do
			local c = lo + math.floor((hi - lo) * k / (n - 1) + 0.5)
			if not seen[c] then
				seen[c] = true
				table.insert(counts, c)
			end
		end
		table.sort(counts)
		return counts
	end
	if levels ~= nil then
		fail("levels", "only applies to a range such as gpus=2-16")
	end
	local items = split(value, ",")
	if #items > MAX_CHOICES then
		fail("gpus", string.format("at most %d acceptable counts, got %d", MAX_CHOICES, #items))
	end
	local counts = {}
	for _, item in ipairs(items) do
		table.insert(counts, bounded_int("gpus", item, 1, MAX_GPUS))
	end
	local sorted = {}
	for i, c in ipairs(counts) do
		sorted[i] = c
	end
	table.sort(sorted)
	for i = 2, #sorted do
		if sorted[i] == sorted[i - 1] then
			fail("gpus", string.format("duplicate count %d", sorted[i]))
		end
	end
	return sorted
end

local function parse_samples(raw)
	if raw["samples"] ~= nil then
		for _, other in ipairs({ "epochs", "dataset-size" }) do
			if raw[other] ~= nil then
				fail(other, "give either samples= or epochs= with dataset-size=, not both")
			end
		end
		return quantity("samples", raw["samples"], MAX_SAMPLES)
	end
	if raw["epochs"] == nil and raw["dataset-size"] == nil then
		fail("samples", "required key is missing (or give epochs= and dataset-size=)")
	end
	if raw["epochs"] == nil then
		fail("epochs", "dataset-size= needs epochs=")
	end
	if raw["dataset-size"] == nil then
		fail("dataset-size", "epochs= needs dataset-size=")
	end
	local epochs = bounded_int("epochs", raw["epochs"], 1, MAX_EPOCHS)
	local size = quantity("dataset-size", raw["dataset-size"], MAX_SAMPLES)
	if epochs * size > MAX_SAMPLES then
		fail("epochs", string.format("epochs x dataset-size exceeds %.0e samples", MAX_SAMPLES))
	end
	return epochs * size
end

local function valid_entrypoint(v)
	local colon = string.find(v, ":", 1, true)
	local mod, fn = string.sub(v, 1, colon - 1), string.sub(v, colon + 1)
	if not string.find(fn, "^[A-Za-z_][A-Za-z0-9_]*$") or string.len(fn) > 64 then
		return false
	end
	local parts = split(mod, ".")
	if #parts > 16 then
		return false
	end
	for _, p in ipairs(parts) do
		if not string.find(p, "^[A-Za-z_][A-Za-z0-9_]*$") or string.len(p) > 64 then
			return false
		end
	end
	return true
end

local function parse_model(value)
	if string.find(value, ":", 1, true) then
		if not valid_entrypoint(value) then
			fail("model", quote(value, 60) .. " is not an entrypoint of the form package.module:function")
		end
		return value
	end
	if string.len(value) > 64 or not string.find(value, "^[a-z][a-z0-9_.%-]*$") then
		fail("model", quote(value, 60) .. " is not a model name (lower-case letters, digits, '-', '_', '.')")
	end
	return value
end

local function valid_rate(s)
	local mant, exp = string.match(s, "^(%d+%.?%d*)(.*)$")
	if not mant or string.sub(mant, -1) == "." then
		return false
	end
	return exp == "" or string.find(exp, "^[eE]%-?%d%d?$") ~= nil
end

local function parse_lr(value, scale, gpus)
	if value == nil then
		if scale ~= nil then
			fail("lr-scale", "needs lr=VALUE@N")
		end
		return nil, nil
	end
	local entries, order = {}, {}
	for _, item in ipairs(split(value, ",")) do
		local at = string.find(item, "@", 1, true)
		if not at then
			fail("lr", quote(item) .. " must be VALUE@GPUS, e.g. 0.1@8")
		end
		local rate_s, count_s = string.sub(item, 1, at - 1), string.sub(item, at + 1)
		if not valid_rate(rate_s) then
			fail("lr", quote(rate_s) .. " is not a learning rate")
		end
		local rate = tonumber(rate_s)
		if not (rate > 0 and rate <= MAX_LR) then
			fail("lr", rate_s .. " is outside (0, " .. string.format("%g", MAX_LR) .. "]")
		end
		local count = bounded_int("lr", count_s, 1, MAX_GPUS)
		if entries[count] ~= nil then
			fail("lr", string.format("two learning rates for %d GPUs", count))
		end
		entries[count] = rate
		table.insert(order, count)
	end
	if #order > 1 then
		if scale ~= nil then
			fail("lr-scale", "applies only to a single lr=VALUE@N")
		end
		local in_gpus = {}
		for _, g in ipairs(gpus) do
			in_gpus[g] = true
			if entries[g] == nil then
				fail("lr", string.format("no learning rate for %d GPUs (give one for every count in gpus, or a single lr=VALUE@N)", g))
			end
		end
		for _, g in ipairs(order) do
			if not in_gpus[g] then
				fail("lr", string.format("%d GPUs is not one of the counts in gpus", g))
			end
		end
		table.sort(order)
		local list = {}
		for _, g in ipairs(order) do
			table.insert(list, { g, entries[g] })
		end
		return list, nil
	end
	if scale ~= nil and scale ~= "linear" and scale ~= "sqrt" then
		fail("lr-scale", quote(scale) .. " is not one of linear, sqrt")
	end
	return { { order[1], entries[order[1]] } }, scale or "linear"
end

-- tokens: list of "key=value" strings; returns the canonical string or raises {key, message}
function hops.parse_tokens(tokens)
	local raw = {}
	for _, tok in ipairs(tokens) do
		local eq = string.find(tok, "=", 1, true)
		local key = eq and string.sub(tok, 1, eq - 1) or tok
		local shown = valid_key_syntax(key) and key or quote(key)
		if not eq then
			fail(shown, "expected key=value, got " .. quote(tok, 60))
		end
		if not valid_key_syntax(key) or not is_known_key(key) then
			fail(shown, "unknown key (known: " .. table.concat(KEYS, ", ") .. ")")
		end
		if raw[key] ~= nil then
			fail(key, "given twice")
		end
		local value = string.sub(tok, eq + 1)
		if value == "" then
			fail(key, "empty value")
		end
		raw[key] = value
	end
	for _, key in ipairs({ "gpus", "batch-size", "model" }) do
		if raw[key] == nil then
			fail(key, "required key is missing")
		end
	end
	local gpus = parse_gpus(raw["gpus"], raw["levels"])
	local samples = parse_samples(raw)
	local batch = bounded_int("batch-size", raw["batch-size"], 1, MAX_BATCH)
	local model = parse_model(raw["model"])
	local lr, lr_scale = parse_lr(raw["lr"], raw["lr-scale"], gpus)
	local params = nil
	if raw["params"] ~= nil then
		params = quantity("params", raw["params"], MAX_PARAMS)
	end
	local parts = {
		"gpus=" .. table.concat(gpus, ","),
		string.format("samples=%.0f", samples),
		string.format("batch-size=%d", batch),
		"model=" .. model,
	}
	if lr ~= nil then
		local items = {}
		for _, e in ipairs(lr) do
			table.insert(items, string.format("%.10g@%d", e[2], e[1]))
		end
		table.insert(parts, "lr=" .. table.concat(items, ","))
	end
	if lr_scale ~= nil then
		table.insert(parts, "lr-scale=" .. lr_scale)
	end
	if params ~= nil then
		table.insert(parts, string.format("params=%.0f", params))
	end
	return table.concat(parts, " ")
end

-- The #HOPS lines of a script, read like #SBATCH: up to the first command line.
function hops.directive_tokens(script)
	local tokens = {}
	local first = true
	for line in string.gmatch((script or "") .. "\n", "([^\n]*)\n") do
		local stripped = string.match(line, "^%s*(.-)%s*$")
		local skip = first and string.sub(stripped, 1, 2) == "#!"
		first = false
		if not skip and stripped ~= "" then
			if string.sub(stripped, 1, 1) ~= "#" then
				break
			end
			if string.find(stripped, "^#HOPS%s") or stripped == "#HOPS" then
				for tok in string.gmatch(string.sub(stripped, 6), "%S+") do
					table.insert(tokens, tok)
				end
			end
		end
	end
	return tokens
end

-- Returns nil (not a Hops job), or the canonical string; raises {key, message} when malformed.
function hops.parse_job(script, comment)
	local tokens = hops.directive_tokens(script)
	local c = comment and string.match(comment, "^%s*(.-)%s*$") or ""
	if string.sub(c, 1, string.len(COMMENT_PREFIX)) == COMMENT_PREFIX then
		for tok in string.gmatch(string.sub(c, string.len(COMMENT_PREFIX) + 1), "%S+") do
			table.insert(tokens, tok)
		end
	elseif #tokens == 0 then
		return nil
	end
	if #tokens == 0 then
		fail("gpus", "no directives given (a '#HOPS' line or 'hops:' comment is empty)")
	end
	return hops.parse_tokens(tokens)
end

-- Used by the tests to run the shared vectors through this file in a plain Lua interpreter.
HOPS = hops

------------------------------------------------------------------------------------------------------
-- Slurm entry points
------------------------------------------------------------------------------------------------------

-- The engine's reservations (hops-gate, hops-j<job>, hops-p<job>) are for the jobs the engine puts in
-- them (root does that); a user asking for one, at submission or by an update, is refused.
function hops.foreign_reservation(job_desc, uid)
	local r = job_desc.reservation
	return uid ~= 0 and type(r) == "string" and string.sub(r, 1, 5) == "hops-"
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if hops.foreign_reservation(job_desc, submit_uid) then
		slurm.log_user("reservation %s belongs to the Hops engine: submit without --reservation", job_desc.reservation)
		return slurm.ERROR
	end
	local ok, result = pcall(hops.parse_job, job_desc.script, job_desc.comment)
	if not ok then
		local msg = type(result) == "table" and result.message or ("#HOPS: internal error: " .. tostring(result))
		slurm.log_user("%s", msg)
		slurm.log_info("hops: rejected job from uid %d: %s", submit_uid, msg)
		return slurm.ERROR
	end
	if result == nil then
		return slurm.SUCCESS -- not a Hops job: left alone
	end
	for _, field in ipairs({ "tres_per_node", "tres_per_job", "tres_per_socket", "tres_per_task" }) do
		local v = job_desc[field]
		if v ~= nil and string.find(v, "gpu", 1, true) then
			slurm.log_user("#HOPS jobs get their GPUs from the #HOPS gpus= line: remove --gres/--gpus (got %s)", v)
			return slurm.ERROR
		end
	end
	if job_desc.partition == nil then
		job_desc.partition = HOPS_PARTITION
	elseif job_desc.partition ~= HOPS_PARTITION then
		slurm.log_user("#HOPS jobs run in partition %s (got --partition=%s)", HOPS_PARTITION, job_desc.partition)
		return slurm.ERROR
	end
	job_desc.admin_comment = COMMENT_PREFIX .. result
	job_desc.priority = 0 -- held until the Hops engine places and releases it
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	if hops.foreign_reservation(job_desc, modify_uid) then
		slurm.log_user("reservation %s belongs to the Hops engine", job_desc.reservation)
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

return slurm.SUCCESS
