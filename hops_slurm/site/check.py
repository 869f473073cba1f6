"""``hops-slurm site check``: what Hops needs from the running Slurm, what is there, and what each setting
does to the jobs outside Hops.

Where it sits: after :mod:`hops_slurm.site.facts` (the running Slurm, read once); pure: facts and the Hops
configuration in, one :class:`Finding` per check out, in a fixed order. Status ``OK``; ``MISSING`` (Hops
cannot run until it is there) and ``CONFLICT`` (a setting Hops cannot run with) are blockers, and the
command exits non-zero on any; ``WARN`` is a recommendation or a consequence the site should know of.
The ``outside`` text of every finding says what the setting does to jobs that are not Hops's: the
cluster-wide lines of the slurm.conf snippet are justified by it (docs/admin-guide.md, "What Hops
changes in slurm.conf").
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from hops_slurm.config import SiteConfig
from hops_slurm.site.facts import (MODULE_FILE, OFFER_FILE, OFFER_MODULE, PARTITION_FILE, SiteFacts, code_lines,
                                   parse_partition_file)
from hops_slurm.slurm.dialect import DIALECTS
from hops_slurm.slurm.snapshot import GATE, OFFER

OK, MISSING, CONFLICT, WARN = "OK", "MISSING", "CONFLICT", "WARN"
BLOCKERS = (MISSING, CONFLICT)
#: the reservations the engine makes: the gate, the offer, one per placed job, one per owner's probes
ENGINE_RESERVATION = re.compile(r"hops-(?:gate|offer|j[0-9]{1,12}|p[0-9]{1,12})")
#: Slurm's defaults where scontrol prints none
DEFAULT_BATCH_SCHED_DELAY = 3
DEFAULT_BF_INTERVAL = 30
GATE_EFFECT = (f"while the engine runs, its gate reservation {GATE} (root only) covers every node of the Hops "
               "partitions: a job of another partition does not start on such a node; only jobs the engine "
               "places (and its probes) run there")


@dataclass(frozen=True)
class Finding:
    check: str  # short name: release, submit-plugin, hook, ...
    needs: str  # what Hops needs
    found: str  # what is there
    status: str  # OK, MISSING, CONFLICT, WARN
    outside: str  # what the setting does to jobs outside Hops

    @property
    def blocker(self) -> bool:
        return self.status in BLOCKERS

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _words(value: str) -> list[str]:
    return [w.strip() for w in re.split(r"[,\s]+", value) if w.strip()]


def _scheduler_params(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in value.split(","):
        key, _, val = word.strip().partition("=")
        if key and key not in out:
            out[key] = val
    return out


def _release(facts: SiteFacts) -> Finding:
    version = facts.version
    m = re.match(r"(\d{1,4})\.(\d{1,4})", version)
    series = f"{int(m[1]):02d}.{int(m[2]):02d}" if m else ""
    ok = series in DIALECTS
    return Finding("release", f"Slurm {', '.join(DIALECTS)}", version or "(not printed)", OK if ok else CONFLICT,
                   "none: read only")


def _submit_plugin(facts: SiteFacts) -> Finding:
    value = facts.config.get("JobSubmitPlugins", "")
    plugins = [w.removeprefix("job_submit/") for w in _words(value) if w != "(null)"]
    return Finding("submit-plugin", "JobSubmitPlugins includes lua", f"JobSubmitPlugins={value or '(none)'}",
                   OK if "lua" in plugins else MISSING,
                   "Slurm runs job_submit.lua on every submission and edit; a site that has its own hook runs it "
                   "already. Adding the plugin needs a slurmctld restart")


def _hook(facts: SiteFacts) -> list[Finding]:
    hook = facts.hook
    where = f"{hook.conf_dir}/job_submit.lua" if hook.conf_dir else "job_submit.lua"
    outside = ("the site's own rules keep applying to every job; the Hops module acts only on jobs with #HOPS "
               "lines (or a hops: comment) in a Hops partition")
    needs = f"job_submit.lua beside slurm.conf calls {MODULE_FILE}"
    if hook.hook_text is None:
        found = f"cannot read: {hook.hook_error}" if hook.hook_error else f"missing: {where}"
        return [Finding("hook", needs, found, MISSING, outside)]
    code = "\n".join(line for _, line in code_lines(hook.hook_text))
    loads = MODULE_FILE in code
    submit = re.search(r"\.job_submit\s{0,8}\(", code) is not None
    modify = re.search(r"\.job_modify\s{0,8}\(", code) is not None
    if not loads or not submit:
        found = f"does not {'call' if loads else 'load'} the Hops module (#HOPS jobs are not held): {where}"
        return [Finding("hook", needs, found, MISSING, outside)]
    if not modify:
        return [Finding("hook", needs, f"calls job_submit only (an edited #HOPS job is not checked): {where}", WARN, outside)]
    return [Finding("hook", needs, f"calls job_submit and job_modify: {where}", OK, outside)]


def _module(facts: SiteFacts, config: SiteConfig) -> list[Finding]:
    hook = facts.hook
    where = str(hook.module_dir) if hook.module_dir else "(unknown)"
    present = hook.module_files.get(MODULE_FILE, False)
    out = [Finding("hook-module", f"{MODULE_FILE} where the hook loads it", f"{'present' if present else 'missing'}: "
                   f"{where}/{MODULE_FILE}", OK if present else MISSING,
                   "none while present; while the site's hook loads a missing module, slurmctld refuses to start "
                   "(job_submit/lua fails to load) and `scontrol reconfigure` fails")]
    if config.engine.offer_file is not None:
        present = hook.module_files.get(OFFER_MODULE, False)
        out.append(Finding("offer-module", f"{OFFER_MODULE} beside it ([engine] offer_file is set)",
                           f"{'present' if present else 'missing'}: {where}/{OFFER_MODULE}", OK if present else WARN,
                           "none: offers go to #HOPS jobs only; without the file every new #HOPS job is held"))
    out.append(_partition_file(facts, config, where))
    out.append(_hook_dir(facts, where))
    return out


def _hook_dir(facts: SiteFacts, where: str) -> Finding:
    """slurmctld runs the hook while it holds its job lock, and the hook opens files in the module's directory
    with plain Lua (which cannot tell a FIFO from a file before opening it): only root may write there, and
    what is there must be plain files (docs/security.md, "The submit hook")."""
    hook = facts.hook
    needs = "the module's directory owned by root and writable by root only; plain files in it"
    outside = ("every job passes through the hook: a FIFO or a file another user can replace there would stall "
               "or steer every submission, Hops or not")
    if hook.module_dir is None or hook.dir_owner is None or hook.dir_mode is None:
        return Finding("hook-dir", needs, f"not read: {where}", WARN, outside)
    problems = []
    if hook.dir_owner != 0:
        problems.append(f"owned by uid {hook.dir_owner}")
    if hook.dir_mode & 0o022:
        problems.append(f"mode {hook.dir_mode:04o} (group or others may write)")
    engine_files = (PARTITION_FILE, OFFER_FILE)  # the daemon writes these itself, never as links
    for name, kind in hook.kinds.items():
        if kind not in ("file", "missing") and (name in engine_files or kind != "symbolic link"):
            problems.append(f"{name} is a {kind}")
    if problems:
        return Finding("hook-dir", needs, f"{where}: {'; '.join(problems)}", CONFLICT, outside)
    return Finding("hook-dir", needs, f"{where}: root's, mode {hook.dir_mode:04o}", OK, outside)


def _partition_file(facts: SiteFacts, config: SiteConfig, where: str) -> Finding:
    wanted = list(config.slurm.hops_partitions)
    needs = f"{PARTITION_FILE} naming {','.join(wanted)}"
    outside = "none: jobs of other partitions are not touched whatever the file says"
    text = facts.hook.partition_file
    if text is None:
        return Finding("partition-file", needs, f"missing (the daemon writes it at start; until then #HOPS jobs that "
                       f"name no partition are refused): {where}/{PARTITION_FILE}", WARN, outside)
    names, problem = parse_partition_file(text)
    if problem:
        return Finding("partition-file", needs, f"{problem}: {where}/{PARTITION_FILE}", CONFLICT, outside)
    unknown = [n for n in names if facts.partitions and n not in facts.partitions]
    if unknown:
        return Finding("partition-file", needs, f"names {','.join(unknown)}, which Slurm does not have", CONFLICT, outside)
    if names != wanted:
        return Finding("partition-file", needs, f"names {','.join(names)}: the hook and the daemon disagree "
                       "(restart the daemon: it rewrites the file)", CONFLICT, outside)
    return Finding("partition-file", needs, f"names {','.join(names)}: {where}/{PARTITION_FILE}", OK, outside)


def _select(facts: SiteFacts) -> list[Finding]:
    c = facts.config
    select = c.get("SelectType", "")
    gres = _words(c.get("GresTypes", ""))
    return [
        Finding("select-type", "SelectType=select/cons_tres", f"SelectType={select}",
                OK if select == "select/cons_tres" else CONFLICT,
                "cluster-wide: how Slurm allocates every job; cons_tres is cons_res plus GPUs as a consumable "
                "resource (what GPU sites run); changing it needs a restart"),
        Finding("gres-types", "GresTypes includes gpu", f"GresTypes={c.get('GresTypes', '(none)')}",
                OK if "gpu" in gres else MISSING,
                "cluster-wide: lets nodes declare GPUs; a job that asks for none is not affected"),
    ]


def _memory(facts: SiteFacts, config: SiteConfig) -> Finding:
    c = facts.config
    params = c.get("SelectTypeParameters", "").upper()
    needs = "DefMemPerCPU (or DefMemPerGPU) on the Hops partitions, or cluster-wide"
    outside = ("a DefMemPerCPU= on the Hops partitions' lines applies to their jobs only; a cluster-wide one is the "
               "memory of every job that does not ask for memory (--mem)")
    if "MEMORY" not in params:
        return Finding("memory", needs, f"SelectTypeParameters={params or '(none)'}: memory is not consumable",
                       OK, outside)
    cluster = next((f"{k}={c[k]}" for k in ("DefMemPerCPU", "DefMemPerGPU", "DefMemPerNode")
                    if c.get(k, "").upper() not in ("", "UNLIMITED", "0", "(NULL)", "N/A")), "")
    if cluster:
        return Finding("memory", needs, f"{cluster} (cluster-wide)", OK, outside)
    parts = [p for p in config.slurm.hops_partitions if p in facts.partitions]
    without = [p for p in parts if not facts.partitions[p].def_mem()]
    if parts and not without:
        return Finding("memory", needs, "; ".join(f"{p}: {facts.partitions[p].def_mem()}" for p in parts), OK, outside)
    return Finding("memory", needs, f"no default memory on {','.join(without or parts) or 'the Hops partitions'}: a job "
                   "takes its nodes' whole memory and no second job shares them", MISSING, outside)


def _partitions(facts: SiteFacts, config: SiteConfig) -> list[Finding]:
    if not facts.partitions:
        return [Finding("partitions", "the Hops partitions", facts.errors.get("partitions", "no partition"), MISSING,
                        "none: read only")]
    out: list[Finding] = []
    hops = config.slurm.hops_partitions
    profiler = config.slurm.profiler_partition
    for name in hops:
        part = facts.partitions.get(name)
        check = f"partition:{name}"
        needs = "exists, State=UP, Default=NO"
        if part is None:
            out.append(Finding(check, needs, "no such partition", MISSING, "none"))
            continue
        found = f"State={part.state} Default={'YES' if part.default else 'NO'} Nodes={len(part.nodes)}"
        if part.default:
            out.append(Finding(check, needs, found, WARN,
                               "Default=YES: every job that names no partition, Hops or not, lands in it, where the "
                               "engine's gate keeps a job without #HOPS lines from starting: leave Default=YES to "
                               "the site's own partition"))
        elif part.state != "UP":
            out.append(Finding(check, needs, found, WARN, f"none: its jobs (Hops's) do not start while it is {part.state}"))
        else:
            out.append(Finding(check, needs, found, OK, "none: only jobs that ask for it run in it"))
        out.append(_gres(facts, name, part.nodes))
        out.append(_overlap(facts, name, part.nodes, hops, profiler))
    prof = facts.partitions.get(profiler)
    out.append(Finding(f"profiler:{profiler}", "the probes' partition exists",
                       "no such partition" if prof is None else f"State={prof.state} Nodes={len(prof.nodes)}",
                       MISSING if prof is None else OK,
                       "none: the engine's probes (one short job per new model and GPU type) run in it"))
    return out


def _gres(facts: SiteFacts, partition: str, names: tuple[str, ...]) -> Finding:
    check, needs = f"gpus:{partition}", "typed GPU GRES (gpu:<type>:<n>) on its nodes"
    outside = "none: the node definitions are the site's"
    if facts.nodes is None:
        return Finding(check, needs, f"nodes not read: {facts.errors.get('nodes', '')}"[:300], WARN, outside)
    nodes = [n for n in facts.nodes if n.name in set(names)]
    untyped = [n.name for n in nodes if n.gpus_total and not n.gpu_type]
    gpu = [n for n in nodes if n.gpus_total and n.gpu_type]
    without = [n.name for n in nodes if not n.gpus_total]
    types = sorted({n.gpu_type for n in gpu})
    found = f"{len(gpu)} of {len(nodes)} nodes: {sum(n.gpus_total for n in gpu)} GPUs ({','.join(types) or 'none'})"
    if untyped:
        return Finding(check, needs, f"untyped GPUs on {','.join(untyped[:8])}: give them Type= in gres.conf and "
                       "Gres=gpu:<type>:<n> in slurm.conf", CONFLICT, outside)
    if not gpu:
        return Finding(check, needs, found, MISSING, outside)
    if without:
        return Finding(check, needs, f"{found}; without GPUs: {','.join(without[:8])}", WARN,
                       "none: Hops plans GPUs only; nodes without GPUs in its partition are not used by it")
    return Finding(check, needs, found, OK, outside)


def _overlap(facts: SiteFacts, partition: str, nodes: tuple[str, ...], hops: tuple[str, ...], profiler: str) -> Finding:
    check, needs = f"overlap:{partition}", "its nodes in no partition outside Hops (the profiler's aside)"
    mine = set(nodes)
    shared = {p.name: sorted(mine & set(p.nodes)) for p in facts.partitions.values()
              if p.name not in hops and p.name != profiler and mine & set(p.nodes)}
    if not shared:
        return Finding(check, needs, "no node shared", OK, "none: the site's partitions keep their nodes")
    found = "; ".join(f"{p}: {','.join(n[:6])}{'...' if len(n) > 6 else ''}" for p, n in sorted(shared.items()))
    return Finding(check, needs, f"shared with {found}", WARN, GATE_EFFECT)


def _requeue(facts: SiteFacts) -> Finding:
    value = facts.config.get("JobRequeue", "1")
    return Finding("requeue", "JobRequeue=1 (Slurm's default), or sbatch --requeue on every Hops job",
                   f"JobRequeue={value}", OK if value.strip() == "1" else CONFLICT,
                   "cluster-wide default: batch jobs may be requeued (after a node failure, by preemption or an "
                   "administrator); a user opts out with --no-requeue. With 0 the engine cannot move a Hops job "
                   "(Slurm refuses requeuehold)")


def _scheduler(facts: SiteFacts) -> list[Finding]:
    c = facts.config
    params = _scheduler_params(c.get("SchedulerParameters", "") if c.get("SchedulerParameters") != "(null)" else "")
    delay = params.get("batch_sched_delay", str(DEFAULT_BATCH_SCHED_DELAY))
    interval = params.get("bf_interval", str(DEFAULT_BF_INTERVAL))
    backfill = c.get("SchedulerType", "sched/backfill") == "sched/backfill"
    return [
        Finding("batch-sched-delay", "batch_sched_delay=0 (recommended)", f"batch_sched_delay={delay}",
                OK if delay == "0" else WARN,
                "cluster-wide: how long slurmctld gathers submissions and releases before it schedules them "
                "(default 3 s); with 0 every job, Hops or not, may start at once, at more scheduling passes on a "
                "site with bursts of submissions. Without it a job the engine releases waits up to that long"),
        Finding("bf-interval", "bf_interval=1 (recommended)",
                f"bf_interval={interval}" + ("" if backfill else f" (SchedulerType={c.get('SchedulerType')})"),
                OK if interval == "1" and backfill else WARN,
                "cluster-wide: seconds between backfill passes (default 30); 1 starts every backfilled job sooner "
                "and costs slurmctld a pass a second (bound it with bf_max_job_test on a long queue). Without it a "
                "released Hops job that the main pass misses waits for the next backfill pass"),
    ]


def _preempt(facts: SiteFacts) -> Finding:
    value = facts.config.get("PreemptType", "preempt/none")
    mode = facts.config.get("PreemptMode", "OFF")
    ok = value in ("preempt/none", "(null)", "")
    return Finding("preempt", "PreemptType=preempt/none, or a site preemption that spares the Hops partitions",
                   f"PreemptType={value} PreemptMode={mode}", OK if ok else WARN,
                   "none from Hops: the site's preemption stays; it may also stop a Hops job the engine placed, "
                   "which the engine sees at its next refresh and plans again")


def _reservations(facts: SiteFacts) -> Finding:
    needs = "no reservation named hops-* but the engine's (hops-gate, hops-offer, hops-j<id>, hops-p<id>)"
    if facts.reservations is None:
        return Finding("reservations", needs, f"not read: {facts.errors.get('reservations', '')}"[:300], WARN, "none")
    foreign = sorted(r.name for r in facts.reservations if r.name.startswith("hops-")
                     and not ENGINE_RESERVATION.fullmatch(r.name))
    engine = sorted(r.name for r in facts.reservations if ENGINE_RESERVATION.fullmatch(r.name))
    if foreign:
        return Finding("reservations", needs, f"not the engine's: {','.join(foreign[:8])}", WARN,
                       "the engine treats hops-* reservations as its own: rename the site's")
    found = f"the engine's: {','.join(engine[:8])}" if engine else "none named hops-*"
    if OFFER in engine or GATE in engine:
        found += " (removed by `hops-slurm site leave`)"
    return Finding("reservations", needs, found, OK, "none: the site's reservations are not touched")


def check_site(facts: SiteFacts, config: SiteConfig) -> list[Finding]:
    """Every check, in the order printed."""
    return [_release(facts), _submit_plugin(facts), *_hook(facts), *_module(facts, config), *_select(facts),
            _memory(facts, config), *_partitions(facts, config), _requeue(facts), *_scheduler(facts), _preempt(facts),
            _reservations(facts)]


def blockers(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.blocker]


__all__ = ["BLOCKERS", "CONFLICT", "Finding", "MISSING", "OK", "WARN", "blockers", "check_site"]
