-- Runs batch scripts through hooks/job_submit.lua's parser in a plain Lua 5.1 interpreter.
-- `slurm` below is a FAKE of the plugin's C API (only the constants the file reads at load time):
-- the real one exists only inside slurmctld, where the integration tests run the same vectors.
-- usage: lua5.1 run_vectors.lua HOOK SCRIPT...   prints one tab-separated line per script.
slurm = { SUCCESS = 0, ERROR = -1 }
dofile(arg[1])
for i = 2, #arg do
	local f = assert(io.open(arg[i], "r"))
	local text = f:read("*a")
	f:close()
	local ok, result = pcall(HOPS.parse_job, text, nil)
	if not ok then
		print(string.format("ERR\t%s\t%s\t%s", arg[i], result.key, result.message))
	elseif result == nil then
		print(string.format("NONE\t%s", arg[i]))
	else
		print(string.format("OK\t%s\t%s", arg[i], result))
	end
end
