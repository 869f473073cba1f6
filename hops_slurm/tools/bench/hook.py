"""``hops-slurm bench hook``: the submit hook's worst cases over 1 MB of input, in lua5.1 and in slurmctld.

Where it sits: a measurement of ``hooks/job_submit.lua`` (the tests assert its behaviour, never its speed).
Part 1 runs adversarial inputs of about 1 MiB (long runs of spaces in a comment line, thousands of
comment lines, ``#HOPS`` look-alikes, over-long ``#HOPS`` lines and comments, ...) through the hook's
parser in a lua5.1 process (``hooks/run_parser.lua --batch --time``: CPU seconds of ``parse_job`` alone),
and the previous, quadratic hook on the 20 KB input that took it seconds. Part 2 brings up its own
minicluster with the hook and times ``sbatch`` of the same scripts against a benign script of the same
size (the difference is the hook's share inside slurmctld, which holds its job lock while the hook runs).
Needs root and the Debian Slurm packages for part 2 (run it under ``flock /tmp/hops-live.lock``).
Writes ``hook.md`` under the output folder.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from hops_slurm.hooklua import HOOK, SITE_HOOK, run_batch
from hops_slurm.tools import results_header

NAME = "hook"
#: brings up its own minicluster (root, the Slurm packages): ``bench --on-slurm`` runs it here, not as a task
ON_SLURM = False
#: the environment variables this benchmark reads (they precede the command in its results header)
ENV = ()


def command(env: Mapping[str, str]) -> str:
    """The command that reruns this benchmark as it runs under ``env`` (its results header)."""
    return results_header.bench_command(NAME, ENV, env)


MIB = 1024 * 1024
REPEAT = 5
VALID = b"#HOPS gpus=1,2 samples=1M batch-size=8 model=resnet18\n"
SPEC = """cluster_name = "hopshook"
state_dir = "/var/tmp/hops-minicluster-bench-hook"
[ports]
slurmctld = 7417
slurmd_base = 17951
slurmdbd = 7419
mariadb = 13816
[[nodes]]
prefix = "gpu-"
count = 1
gpu_type = "a100"
gpus = 2
cpus = 4
memory_mb = 8000
[[partitions]]
name = "hops"
default = true
[[partitions]]
name = "profiler"
"""
# The previous hook (before the byte grammar), for the comparison row.
PREVIOUS_COMMIT = "4cff120"


def cases() -> dict[str, tuple[bytes, bytes | None]]:
    """Adversarial inputs of about 1 MiB each (the comment cases: 100 KiB for sbatch's argument limit)."""
    n = MIB
    head = b"#!/bin/bash\n"
    return {
        "spaces in a comment line, then a command": (head + b"#" + b" " * n + b"\nhostname\n", None),
        "spaces then a letter in a comment line": (head + b"#" + b" " * n + b"x\nhostname\n", None),
        "spaces in a comment line, then #HOPS": (head + b"#" + b" " * n + b"\n" + VALID + b"hostname\n", None),
        "spaces and tabs in a comment line": (head + b"#" + b" \t" * (n // 2) + b"\nhostname\n", None),
        "1 MiB of leading spaces before #HOPS": (head + b" " * n + VALID, None),
        "512 Ki comment lines, then #HOPS": (head + b"#\n" * (n // 2) + VALID, None),
        "512 Ki comment lines, no #HOPS": (head + b"#\n" * (n // 2) + b"hostname\n", None),
        "blank lines of spaces and tabs": (head + b" \t \n" * (n // 4) + VALID, None),
        "#HOPSX look-alike lines": (head + b"#HOPSX\n" * (n // 7) + VALID, None),
        "#HOPS inside comments": (head + b"# " + b"#HOPS" * (n // 5) + b"\n" + VALID, None),
        "one 1 MiB #HOPS line (over the cap)": (head + b"#HOPS gpus=1" + b" " * n + b"\n", None),
        "1 MiB of digits in a #HOPS value": (head + b"#HOPS samples=" + b"9" * n + b"\n", None),
        "16 #HOPS lines, then 1 MiB of comment": (head + VALID + b"#HOPS\n" * 15 + b"#" * n + b"\n", None),
        "17 #HOPS lines and more (over the cap)": (head + b"#HOPS\n" * (n // 6), None),
        "newlines only, then #HOPS": (head + b"\n" * n + VALID, None),
        "newlines only, no #HOPS": (head + b"\n" * n + b"hostname\n", None),
        "carriage returns in a #HOPS line": (head + b"#HOPS " + b"\r" * 1000 + b"\n" + b"#" * n + b"\n", None),
        "non-ASCII bytes in comments": (head + bytes(range(128, 256)) * (n // 128) + b"\n" + VALID, None),
        "hops: comment of 100 KiB spaces": (head + b"hostname\n", b"hops:" + b" " * (100 * 1024)),
        "plain comment of 100 KiB spaces": (head + b"hostname\n", b" " * (100 * 1024)),
        "benign: valid #HOPS, then 1 MiB of commands": (head + VALID + b"echo x\n" * (n // 7), None),
    }


def lua_times(inputs: dict[str, tuple[bytes, bytes | None]], hook: Path = HOOK, repeat: int = REPEAT) -> dict[str, tuple[str, float]]:
    """name -> (outcome, the slowest of ``repeat`` runs in CPU seconds)."""
    names = list(inputs)
    batch = [inputs[name] for name in names for _ in range(repeat)]
    outcomes = run_batch(batch, timed=True, hook=hook)
    out: dict[str, tuple[str, float]] = {}
    for i, name in enumerate(names):
        runs = outcomes[i * repeat : (i + 1) * repeat]
        first = runs[0]
        shown = first.kind if first.kind != "ERR" else f"rejected ({first.key})"
        out[name] = (shown, max(r.seconds or 0.0 for r in runs))
    return out


def previous_hook_time(size: int = 20 * 1024) -> float | None:
    """The hook before the byte grammar on its worst case (spaces, then a letter, in a comment line), if
    git has it: its trimming pattern ``^%s*(.-)%s*$`` retried the run of spaces at every position."""
    root = HOOK.parents[1]
    old = subprocess.run(["git", "-C", str(root), "show", f"{PREVIOUS_COMMIT}:hooks/job_submit.lua"], capture_output=True)
    if old.returncode != 0:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "old_job_submit.lua"
        path.write_bytes(old.stdout)
        # the old file has no HOPS.printable: give the runner one before the hook runs
        path.write_bytes(b"HOPS_PRINTABLE = tostring\n" + old.stdout.replace(b"HOPS = hops", b"hops.printable = tostring\nHOPS = hops"))
        case = (b"#!/bin/bash\n#" + b" " * size + b"x\nhostname\n", None)
        return run_batch([case], timed=True, hook=path)[0].seconds


def slurmctld_times(inputs: dict[str, tuple[bytes, bytes | None]], repeat: int = REPEAT) -> dict[str, tuple[str, float, float]]:
    """name -> (sbatch outcome, median and max wall seconds of ``sbatch``) on a live minicluster."""
    from hops_slurm.tools.minicluster.cluster import Minicluster
    from hops_slurm.tools.minicluster.spec import load_spec

    work = Path(tempfile.mkdtemp(prefix="hops-bench-hook-"))
    (work / "spec.toml").write_text(SPEC)
    cluster = Minicluster(load_spec(work / "spec.toml"), job_submit_lua=SITE_HOOK)
    cluster.down()
    cluster.up()
    results: dict[str, tuple[str, float, float]] = {}
    ids: list[str] = []
    try:
        env = cluster.env()
        for i, (name, (script, comment)) in enumerate(inputs.items()):
            path = work / f"case{i}.sh"
            path.write_bytes(script)
            argv = ["sbatch", "--parsable", "-H", "-o", "/dev/null", "-D", str(work)]
            if comment is not None:
                argv.append("--comment=" + comment.decode("latin-1"))
            times = []
            outcome = ""
            for _ in range(repeat):
                t0 = time.perf_counter()
                res = subprocess.run([*argv, str(path)], env=env, capture_output=True, text=True, timeout=60)
                times.append(time.perf_counter() - t0)
                if res.returncode == 0:
                    ids.append(res.stdout.strip().split(";")[0])
                    outcome = "accepted"
                else:
                    lines = res.stderr.strip().splitlines() or ["(no message)"]
                    said = next((ln for ln in lines if "#HOPS" in ln), lines[-1])
                    outcome = "refused: " + said.removeprefix("sbatch: error: ")[:90]
            results[name] = (outcome, statistics.median(times), max(times))
    finally:
        if ids:
            subprocess.run(["scancel", *ids], env=cluster.env(), capture_output=True, timeout=60)
        cluster.down()
    return results


def run(out_dir: Path) -> Path:
    from hops_slurm.tools.bench.machine import load, machine_line

    load0 = load()
    inputs = cases()
    lua = lua_times(inputs)
    old = previous_hook_time()
    live = slurmctld_times(inputs)
    baseline = live["benign: valid #HOPS, then 1 MiB of commands"][1]
    worst_lua = max(lua.items(), key=lambda kv: kv[1][1])
    worst_live = max(((k, v) for k, v in live.items()), key=lambda kv: kv[1][2])
    lines = [
        "# Submit hook: worst cases over 1 MB of input",
        "",
        "Produced by `hops-slurm bench hook` (hops_slurm/tools/bench/hook.py). lua5.1: CPU time of the hook's "
        f"`parse_job` alone, slowest of {REPEAT} runs (`hooks/run_parser.lua --batch --time`). slurmctld "
        f"(Slurm 22.05, a one-node minicluster with the hook): wall time of `sbatch -H` from the client, median "
        f"and slowest of {REPEAT}; it includes sending the script and slurmctld's own work, so compare with the benign "
        "script of the same size in the last row.",
        "",
        "| input (about 1 MiB) | hook's answer | lua5.1 ms (max) | sbatch outcome | sbatch ms (median) | sbatch ms (max) |",
        "|---|---|---|---|---|---|",
    ]
    for name in inputs:
        kind, secs = lua[name]
        outcome, med, worst = live[name]
        lines.append(f"| {name} | {kind} | {secs * 1e3:.2f} | {outcome.replace('|', '/')} | {med * 1e3:.1f} | {worst * 1e3:.1f} |")
    lines += [
        "",
        f"Slowest in lua5.1: **{worst_lua[0]}**, {worst_lua[1][1] * 1e3:.2f} ms. Slowest sbatch: **{worst_live[0]}**, "
        f"{worst_live[1][2] * 1e3:.1f} ms (median of the benign 1 MiB script: {baseline * 1e3:.1f} ms).",
    ]
    if old is not None:
        lines.append(f"The previous hook (commit {PREVIOUS_COMMIT}) on 20 KiB of spaces then a letter in one comment "
                     f"line: {old * 1e3:.0f} ms in lua5.1 (its trimming pattern was quadratic).")
    lines.append("Rows with and without `#HOPS` on the same shape separate the hook from sbatch's own work: sbatch "
                 "reads every leading comment line for `#SBATCH` on the client, and a 1 MiB script travels to slurmctld "
                 "either way.")
    lines += ["", machine_line(load0), ""]
    out = out_dir / "hook.md"
    return results_header.write(out, "\n".join(lines), generator=f"{__name__}:run",
                                 command=command(os.environ))
