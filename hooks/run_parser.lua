-- Runs batch scripts through job_submit.lua's parser in a plain Lua 5.1 interpreter (tests, benchmark).
-- `slurm` below is a FAKE of the plugin's C API (only the constants the file reads at load time):
-- the real one exists only inside slurmctld, where the live tests and `hops-slurm bench hook` run it.
-- usage: lua5.1 run_parser.lua HOOK SCRIPT...        one tab-separated line per script file
--        lua5.1 run_parser.lua HOOK --batch FILE [--time]
--   FILE holds records "<script bytes> <comment bytes or -1>\n" followed by those bytes; one line per
--   record comes out (with --time, the seconds the parse took as a last field).
slurm = { SUCCESS = 0, ERROR = -1 }
dofile(arg[1])

local function run(script, comment)
	local ok, result = pcall(HOPS.parse_job, script, comment)
	if not ok then
		if type(result) == "table" then
			return string.format("ERR\t%s\t%s", result.key, result.message)
		end
		return "INTERNAL\t" .. HOPS.printable(result)
	elseif result == nil then
		return "NONE"
	end
	return "OK\t" .. result
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
