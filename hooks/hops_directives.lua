--[[
hops-slurm submit hook, the #HOPS grammar (docs/directives-grammar.md): loaded by hops_submit.lua from the
same directory; returns a table with parse_job(script, comment), printable, quote and split. The same
grammar as hops_slurm/directives.py (tests/hooks/ runs both on the same bytes and compares).

A job whose batch script has #HOPS lines (or whose --comment starts with "hops:") is validated here; a
malformed one raises { key, message } naming the key; a valid one gives its canonical directives.

Cost: slurmctld holds its job lock while this runs. Lengths are capped before any pattern runs, and every
pattern is linear in its subject (no nested or adjacent unbounded repetitions); numbers are read by their
digits (never through a float that could round them). Worst case over 1 MB of input: docs/results/hook.md
(`hops-slurm bench hook`).
]]

local MAX_HEADER = 32768 -- #HOPS lines come before the first command, within this many bytes
local MAX_LINE = 1024 -- bytes in one #HOPS line
local MAX_LINES = 16 -- #HOPS lines in one script
local MAX_COMMENT = 1024 -- bytes of a hops: comment
local MAX_GPUS = 1024
local MAX_CHOICES = 8
local MAX_BATCH = 65536
local MAX_EPOCHS = 100000
local SAMPLES_EXP = 15 -- samples and dataset-size at most 10^15
local PARAMS_EXP = 13 -- params at most 10^13
local MAX_ENTRYPOINT = 128 -- bytes of model=pkg.mod:fn (keeps every canonical form under MAX_COMMENT)
local MAX_NUMBER_LEN = 24
local MAX_RATE_LEN = 32
local MAX_RATE_DIGITS = 15 -- significant digits of a learning rate (a double keeps 15 exactly)
local MIN_RATE_EXP = -9 -- learning rates from 1e-9 ...
local MAX_RATE_EXP = 3 -- ... to 1000
local RATE_RANGE = "1e-9..1000"
local COMMENT_PREFIX = "hops:"
local KEYS = { "gpus", "levels", "samples", "epochs", "dataset-size", "batch-size", "model", "lr", "lr-scale", "params" }
local SUFFIX_ZEROS = { K = 3, M = 6, G = 9 }
local ALLOWED = "one #HOPS line holds printable ASCII separated by spaces or tabs; lines end at \\n"

local hops = {}

local function fail(key, msg)
	error({ key = key, message = "#HOPS " .. key .. ": " .. msg }, 0)
end

-- 'text' with \ and ' escaped, cut to n bytes (the grammar's quote(); tokens are printable ASCII)
local function quote(s, n)
	s = string.sub(s, 1, n or 40)
	s = string.gsub(s, "\\", "\\\\")
	s = string.gsub(s, "'", "\\'")
	return "'" .. s .. "'"
end

-- Any text from a user shown in a log or message: bytes outside printable ASCII as \xHH, cut to n bytes.
local function printable(s, n)
	s = string.sub(tostring(s), 1, n or 200)
	return (string.gsub(s, "[^ -~]", function(c)
		return string.format("\\x%02X", string.byte(c))
	end))
end

-- index just after the run of digits starting at pos
local function skip_digits(s, pos)
	local _, e = string.find(s, "^[0-9]*", pos)
	return e + 1
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
	return string.len(k) >= 1 and string.len(k) <= 32 and string.find(k, "^[a-z][a-z%-]*$") ~= nil
end

local function bounded_int(key, value, lo, hi)
	if string.len(value) > 7 or not string.find(value, "^[0-9]+$") then
		fail(key, quote(value) .. " is not a whole number of at most 7 digits")
	end
	local n = tonumber(value)
	if n < lo or n > hi then
		fail(key, string.format("%d is outside %d..%d", n, lo, hi))
	end
	return n
end

-- A positive whole quantity with an optional K/M/G suffix, at most 10^exp: digits[.digits][K|M|G].
-- Computed on the digit string; the result (<= 10^15 < 2^53) is exact as a Lua number.
local function quantity(key, value, exp)
	local bad = quote(value) .. " is not a number (use e.g. 1200000 or 1.2M)"
	local len = string.len(value)
	if len > MAX_NUMBER_LEN then
		fail(key, bad)
	end
	local i = skip_digits(value, 1)
	local int, frac = string.sub(value, 1, i - 1), ""
	if int == "" then
		fail(key, bad)
	end
	if string.sub(value, i, i) == "." then
		local j = skip_digits(value, i + 1)
		frac = string.sub(value, i + 1, j - 1)
		if frac == "" then
			fail(key, bad)
		end
		i = j
	end
	local zeros = SUFFIX_ZEROS[string.sub(value, i, i)]
	if zeros then
		i = i + 1
	else
		zeros = 0
	end
	if i ~= len + 1 then
		fail(key, bad)
	end
	if string.len(frac) < zeros then
		frac = frac .. string.rep("0", zeros - string.len(frac))
	end
	if string.find(string.sub(frac, zeros + 1), "[^0]") then
		fail(key, quote(value) .. " is not a whole number")
	end
	local digits = int .. string.sub(frac, 1, zeros)
	local first = string.find(digits, "[^0]")
	digits = first and string.sub(digits, first) or ""
	local nd = string.len(digits)
	if nd == 0 or nd > exp + 1 or (nd == exp + 1 and digits ~= "1" .. string.rep("0", exp)) then
		fail(key, quote(value) .. " is outside 1..10^" .. exp)
	end
	return tonumber(digits)
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
	local dash = string.find(value, "-", 1, true)
	if dash then
		local lo = bounded_int("gpus", string.sub(value, 1, dash - 1), 1, MAX_GPUS)
		local hi = bounded_int("gpus", string.sub(value, dash + 1), 1, MAX_GPUS)
		if lo >= hi then
			fail("gpus", "range " .. quote(value) .. " must go from a smaller to a larger count")
		end
		local span = hi - lo + 1
		local n
		if levels ~= nil then
			n = bounded_int("levels", levels, 2, MAX_CHOICES)
		else
			n = math.min(span, MAX_CHOICES)
		end
		if n > span then
			fail("levels", string.format("%d levels do not fit in the range %s (%d counts)", n, quote(value), span))
		end
		-- equal-interval levels from lo to hi, rounded half up, in integers
		local seen, counts = {}, {}
		for k = 0, n - 1 do
			local c = lo + math.floor((2 * (hi - lo) * k + (n - 1)) / (2 * (n - 1)))
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
	table.sort(counts)
	for i = 2, #counts do
		if counts[i] == counts[i - 1] then
			fail("gpus", string.format("duplicate count %d", counts[i]))
		end
	end
	return counts
end

local function parse_samples(raw)
	if raw["samples"] ~= nil then
		for _, other in ipairs({ "epochs", "dataset-size" }) do
			if raw[other] ~= nil then
				fail(other, "give either samples= or epochs= with dataset-size=, not both")
			end
		end
		return quantity("samples", raw["samples"], SAMPLES_EXP)
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
	local size = quantity("dataset-size", raw["dataset-size"], SAMPLES_EXP)
	-- in integers: size * epochs <= 10^15 exactly when size <= floor(10^15 / epochs)
	if size > math.floor(10 ^ SAMPLES_EXP / epochs) then
		fail("epochs", "epochs x dataset-size exceeds 10^" .. SAMPLES_EXP .. " samples")
	end
	return epochs * size
end

local function valid_entrypoint(v)
	if string.len(v) > MAX_ENTRYPOINT then
		return false
	end
	local colon = string.find(v, ":", 1, true)
	local mod, fn = string.sub(v, 1, colon - 1), string.sub(v, colon + 1)
	if string.len(fn) > 64 or not string.find(fn, "^[A-Za-z_][A-Za-z0-9_]*$") then
		return false
	end
	local parts = split(mod, ".")
	if #parts > 16 then
		return false
	end
	for _, p in ipairs(parts) do
		if string.len(p) > 64 or not string.find(p, "^[A-Za-z_][A-Za-z0-9_]*$") then
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

-- A learning rate digits[.digits][e|E[+|-]digits], read as D x 10^e on its digits; returns the
-- canonical plain decimal (no exponent, no leading or trailing zeros beyond "0.").
local function parse_rate(s)
	local bad = quote(s) .. " is not a learning rate (e.g. 0.1, 3e-4)"
	local len = string.len(s)
	if len > MAX_RATE_LEN then
		fail("lr", bad)
	end
	local i = skip_digits(s, 1)
	local int, frac, e = string.sub(s, 1, i - 1), "", 0
	if int == "" then
		fail("lr", bad)
	end
	if string.sub(s, i, i) == "." then
		local j = skip_digits(s, i + 1)
		frac = string.sub(s, i + 1, j - 1)
		if frac == "" then
			fail("lr", bad)
		end
		i = j
	end
	local c = string.sub(s, i, i)
	if c == "e" or c == "E" then
		i = i + 1
		local sign = 1
		c = string.sub(s, i, i)
		if c == "-" then
			sign, i = -1, i + 1
		elseif c == "+" then
			i = i + 1
		end
		local j = skip_digits(s, i)
		local digits = string.sub(s, i, j - 1)
		if digits == "" or string.len(digits) > 3 then
			fail("lr", bad)
		end
		e, i = sign * tonumber(digits), j
	end
	if i ~= len + 1 then
		fail("lr", bad)
	end
	local d = int .. frac
	e = e - string.len(frac)
	local first = string.find(d, "[1-9]")
	local range = quote(s) .. " is outside " .. RATE_RANGE
	if not first then
		fail("lr", range)
	end
	d = string.sub(d, first)
	local last = string.len(d)
	while string.byte(d, last) == 48 do
		last = last - 1
	end
	e = e + string.len(d) - last
	d = string.sub(d, 1, last)
	if last > MAX_RATE_DIGITS then
		fail("lr", quote(s) .. " has more than " .. MAX_RATE_DIGITS .. " significant digits")
	end
	local adjusted = last - 1 + e
	if adjusted < MIN_RATE_EXP or adjusted > MAX_RATE_EXP or (adjusted == MAX_RATE_EXP and d ~= "1") then
		fail("lr", range)
	end
	if e >= 0 then
		return d .. string.rep("0", e)
	elseif last + e > 0 then
		return string.sub(d, 1, last + e) .. "." .. string.sub(d, last + e + 1)
	end
	return "0." .. string.rep("0", -e - last) .. d
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
		local rate = parse_rate(string.sub(item, 1, at - 1))
		local count = bounded_int("lr", string.sub(item, at + 1), 1, MAX_GPUS)
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

-- tokens: list of "key=value" strings (printable ASCII); returns the canonical string or raises {key, message}
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
		params = quantity("params", raw["params"], PARAMS_EXP)
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
			table.insert(items, e[2] .. "@" .. e[1])
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

-- The tokens of one #HOPS line (or hops: comment) after its prefix; `where` names it in errors.
-- Every byte must be a tab or printable ASCII (checked before the line is split).
local function line_tokens(text, where, offset, tokens)
	local bad = string.find(text, "[^\t -~]")
	if bad then
		fail("syntax", string.format("%s, byte %d: 0x%02X is not allowed (%s)", where, bad + offset, string.byte(text, bad), ALLOWED))
	end
	for tok in string.gmatch(text, "[^ \t]+") do
		table.insert(tokens, tok)
	end
end

local function line_number(s, pos)
	local _, n = string.gsub(string.sub(s, 1, pos - 1), "\n", "")
	return n + 1
end

-- The #HOPS lines of a script, read like #SBATCH: up to the first command line, within the first
-- MAX_HEADER bytes. Returns the tokens and whether any #HOPS line was found. Two pattern scans over at
-- most MAX_HEADER bytes and one plain search (memchr speed) of the rest, whatever the script holds.
function hops.directive_tokens(script)
	local s = script or ""
	local h = string.sub(s, 1, MAX_HEADER)
	-- the header ends where the first line with a byte other than space/tab starts with something but '#'
	local stop
	if string.find(h, "^[ \t]*[^# \t\n]") then
		stop = 1
	else
		local nl = string.find(h, "\n[ \t]*[^# \t\n]")
		stop = nl and nl + 1 or nil
	end
	if stop == nil then
		if string.len(s) > MAX_HEADER then
			if string.find(s, "#HOPS", 1, true) then
				fail("syntax", string.format("no command in the first %d bytes: #HOPS lines must come before the first command, within the first %d bytes", MAX_HEADER, MAX_HEADER))
			end
			return {}, false
		end
		stop = string.len(h) + 1
	end
	local header = "\n" .. string.sub(h, 1, stop - 1) .. "\n"
	local tokens, found, pos = {}, 0, 1
	while true do
		local nl = string.find(header, "\n[ \t]*#HOPS[^A-Za-z0-9_%-]", pos)
		if not nl then
			break
		end
		local start = nl + 1 -- the line's first byte in header (header[i] is s[i - 1])
		local finish = string.find(header, "\n", start, true)
		found = found + 1
		local where = "line " .. line_number(s, start - 1)
		if found > MAX_LINES then
			fail("syntax", string.format("%s: more than %d #HOPS lines", where, MAX_LINES))
		end
		local length = finish - start
		if length > MAX_LINE then
			fail("syntax", string.format("%s: %d bytes long (at most %d in a #HOPS line)", where, length, MAX_LINE))
		end
		local line = string.sub(header, start, finish - 1)
		local hash = string.find(line, "#", 1, true)
		line_tokens(string.sub(line, hash + 5), where, hash + 4, tokens)
		pos = finish
	end
	return tokens, found > 0
end

-- Returns nil (not a Hops job), or the canonical string; raises {key, message} when malformed.
function hops.parse_job(script, comment)
	local tokens, found = hops.directive_tokens(script)
	local c = comment or ""
	local _, blank = string.find(c, "^[ \t]*") -- anchored: one C loop over the leading blanks
	local first = blank + 1
	if string.sub(c, first, first + string.len(COMMENT_PREFIX) - 1) == COMMENT_PREFIX then
		if string.len(c) > MAX_COMMENT then
			fail("syntax", string.format("comment: %d bytes long (at most %d in a hops: comment)", string.len(c), MAX_COMMENT))
		end
		local skip = first + string.len(COMMENT_PREFIX) - 1
		line_tokens(string.sub(c, skip + 1), "comment", skip, tokens)
	elseif not found then
		return nil
	end
	if #tokens == 0 then
		fail("gpus", "no directives given (a '#HOPS' line or 'hops:' comment is empty)")
	end
	return hops.parse_tokens(tokens)
end

hops.printable = printable
hops.quote = quote
hops.split = split
hops.COMMENT_PREFIX = COMMENT_PREFIX
hops.MAX_HEADER = MAX_HEADER

return hops
