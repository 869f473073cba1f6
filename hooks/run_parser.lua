-- Runs batch scripts through the submit hook's parser in a plain Lua 5.1 interpreter (tests, benchmark).
-- `slurm` below is a FAKE of the plugin's C API (only what the hook reads and calls): the real one exists
-- only inside slurmctld, where the live tests and `hops-slurm bench hook` run it.
-- usage: lua5.1 run_parser.lua HOOK SCRIPT...        one tab-separated line per script file
--        lua5.1 run_parser.lua HOOK --batch FILE [--time]
--   FILE holds records "<script bytes> <comment bytes or -1>\n" followed by those bytes; one line per
--   record comes out (with --time, the seconds the parse took as a last field).
--        lua5.1 run_parser.lua HOOK --verdict FILE PARTITIONS_FILE
--   FILE holds records "<k>\n" then k fields "<name> <n>\n<n bytes>" (a job's request as sbatch fills it
--   in); one line per record: the hook module's verdict (hops_submit.lua: M.verdict).
-- HOOK is hooks/hops_submit.lua (the module), or an older job_submit.lua that sets the global HOPS.
slurm = { SUCCESS = 0, ERROR = -1, log_user = function() end, log_info = function() end }
local loaded = dofile(arg[1])
local MODULE = type(loaded) == "table" and loaded or nil
local H = MODULE and MODULE.hops or HOPS

local function run(script, comment)
	local ok, result = pcall(H.parse_job, script, comment)
	if not ok then
		if type(result) == "table" then
			return string.format("ERR\t%s\t%s", result.key, result.message)
		end
		return "INTERNAL\t" .. H.printable(result)
	elseif result == nil then
		return "NONE"
	end
	return "OK\t" .. result
end

local function clean(s)
	return (string.gsub(tostring(s), "[\t\n]", " "))
end

local function verdict(req, parts, problem)
	local ok, v = pcall(MODULE.verdict, req, parts, problem)
	if not ok then
		return "INTERNAL\t" .. H.printable(v)
	elseif v.kind == "NONE" then
		return "NONE"
	elseif v.kind == "ERR" then
		return "ERR\t" .. clean(v.message)
	end
	local changes = {}
	for _, field in ipairs({ "tres_per_job", "tres_per_node" }) do
		if v.changes[field] ~= nil then
			table.insert(changes, field .. "=" .. (v.changes[field] or ""))
		end
	end
	return table.concat({ "OK", v.canonical, table.concat(v.partitions, ","), table.concat(changes, " "), clean(v.note or "") }, "\t")
end

if arg[2] == "--verdict" then
	local f = assert(io.open(arg[3], "rb"))
	local parts, problem = MODULE.read_partitions(arg[4])
	while true do
		local head = f:read("*l")
		if not head or head == "" then
			break
		end
		local req = { uid = 1000 }
		for _ = 1, tonumber(head) do
			local name, n = string.match(f:read("*l"), "^([%w_]+) (%d+)$")
			local value = f:read(tonumber(n)) or ""
			if name == "uid" or name == "min_nodes" then
				req[name] = tonumber(value)
			else
				req[name] = value
			end
		end
		io.write(verdict(req, parts, problem), "\n")
	end
	f:close()
	os.exit(0)
end

if arg[2] == "--batch" then
	local f = assert(io.open(arg[3], "rb"))
	local timed = arg[4] == "--time"
	while true do
		local head = f:read("*l")
		if not head or head == "" then
			break
		end
		local n, m = string.match(head, "^(%d+) (%-?%d+)$")
		local script = f:read(tonumber(n)) or ""
		local comment = nil
		if tonumber(m) >= 0 then
			comment = f:read(tonumber(m)) or ""
		end
		if timed then
			local t0 = os.clock()
			local line = run(script, comment)
			io.write(line, "\t", string.format("%.6f", os.clock() - t0), "\n")
		else
			io.write(run(script, comment), "\n")
		end
	end
	f:close()
	os.exit(0)
end

for i = 2, #arg do
	local f = assert(io.open(arg[i], "rb"))
	local text = f:read("*a")
	f:close()
	local line = run(text, nil)
	local kind, rest = string.match(line, "^(%u+)(.*)$")
	print(kind .. "\t" .. arg[i] .. rest)
end
