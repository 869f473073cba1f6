"""A demo Hops job: real PyTorch training on CPU that checkpoints, resumes after a requeue, and
EMULATES the speed of the GPUs it was given.

Where it sits: a job script in etc/demo/jobs/ sources the env file the engine wrote for it
(``$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env``: HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, recorder settings) and runs
``python train.py "$0"``; the script's own ``#HOPS`` lines say the model, batch size and total samples.
A job started on an offer (unheld, before the engine saw it) finds no file yet and
waits for it here (profiler.jobenv).

What is real: a tiny zoo model (profiler.zoo, size ``tiny``) trains on synthetic batches with SGD at the
learning rate Hops chose (HOPS_LR); its state, the optimizer's and the sample count are checkpointed
every few seconds to ``$HOPS_DEMO_STATE/ckpt/<job id>/`` and loaded again when Slurm restarts the batch
script after a preemption (requeue); the running-mode recorder (profiler.runtime) writes measurements
where the engine asks (HOPS_METRICS_FILE). Preemption with notice (profiler.preempt, docs/preemption.md):
each checkpoint is marked for the engine; on the notice (HOPS_PREEMPT_SIGNAL) the job saves at once,
marks it and waits to be requeued -- unless it can finish within half the grace, when it finishes.

What is EMULATED (no GPUs here): each step counts ``HOPS_GPUS x batch-size`` samples, and after the
real step the job sleeps so the step takes as long as etc/demo/emulation.toml says it would on the
allocation's GPU types (per-node-type speed factor, sync overhead, cross-node factor).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import torch

from hops_slurm.tools.demo.emulation import gpu_type_of, load_emulation, parse_config
from hops_slurm.directives import parse_script
from profiler.jobenv import load_job_env
from profiler.preempt import Preemption
from profiler.runtime import Recorder
from profiler.zoo import build_zoo_job

CHECKPOINT_EVERY = 3.0  # seconds between checkpoints
PROGRESS_EVERY = 10.0  # seconds between progress lines

log = logging.getLogger("hops-demo-job")


def _allocation() -> dict[str, int]:
    """The allocation as {node: GPUs}: HOPS_PLACEMENT from the engine (HOPS_CONFIG, its old name, from an
    engine of the release before), else this node with HOPS_GPUS or the GPUs Slurm lists."""
    placement = os.environ.get("HOPS_PLACEMENT") or os.environ.get("HOPS_CONFIG")
    if placement:
        return parse_config(placement)
    node = os.environ.get("SLURMD_NODENAME", "unknown-0")
    gpus = os.environ.get("HOPS_GPUS") or str(len([g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",") if g]))
    return {node: int(gpus)}


def _save(path: Path, state: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S", stream=sys.stdout)
    if len(argv) != 2:
        print("usage: train.py JOB_SCRIPT (the batch script whose #HOPS lines describe this job)", file=sys.stderr)
        return 2
    directives = parse_script(Path(argv[1]).read_text())
    if directives is None:
        print(f"{argv[1]}: no #HOPS lines", file=sys.stderr)
        return 2
    torch.set_num_threads(1)  # the demo machine has two cores for every job and daemon together
    load_job_env()  # what the engine chose (sourced by the script, or written once the engine adopts it)
    pre = Preemption.from_env()  # the notice (HOPS_PREEMPT_SIGNAL) and Slurm's SIGTERM (requeue, cancel)

    job_id = os.environ.get("SLURM_JOB_ID", "local")
    state_root = Path(os.environ.get("HOPS_DEMO_STATE", "/tmp/hops-demo"))
    ckpt_dir = state_root / "ckpt" / job_id
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ckpt_dir / "state.pt"

    emulation = load_emulation(Path(os.environ["HOPS_DEMO_EMULATION"])) if os.environ.get("HOPS_DEMO_EMULATION") else load_emulation()
    config = _allocation()
    gpus = sum(config.values())
    step_s = emulation.step_time(directives.model, config)
    types = sorted({gpu_type_of(n) for n in config})

    job = build_zoo_job(directives.model, "tiny", seed=int(job_id) if job_id.isdigit() else 0)
    lr = float(os.environ["HOPS_LR"]) if os.environ.get("HOPS_LR") else 0.01
    for group in job.optimizer.param_groups:
        group["lr"] = lr

    done, steps, history = 0, 0, []
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        job.model.load_state_dict(state["model"])
        job.optimizer.load_state_dict(state["optimizer"])
        for group in job.optimizer.param_groups:
            group["lr"] = lr  # the new allocation's learning rate
        done, steps, history = state["samples"], state["steps"], state["history"]
        log.info("job %s: resumed from checkpoint at %d/%d samples (%d earlier runs)", job_id, done, directives.samples, len(history))
    history.append({"config": config, "start": time.time(), "restart": os.environ.get("SLURM_RESTART_COUNT", "0")})
    log.info(
        "job %s: %s on %s (%d GPUs, lr %g); EMULATED %s speed: %.3f s per step of %d samples",
        job_id, directives.model, ",".join(f"{n}:{k}" for n, k in config.items()), gpus, lr, "/".join(types),
        step_s, gpus * directives.batch_size,
    )

    def checkpoint() -> None:
        history[-1]["samples_at_save"] = done
        _save(ckpt, {"model": job.model.state_dict(), "optimizer": job.optimizer.state_dict(),
                     "samples": done, "steps": steps, "history": history})

    def finishes_in_time() -> bool:  # on notice: the rest takes less than half the grace -> finish instead
        left = (directives.samples - done) / (gpus * directives.batch_size) * step_s
        return left < 0.5 * pre.grace

    rec = Recorder.from_env(batch_size=directives.batch_size, done_samples=done)  # records carry its count
    rec.world_size = gpus  # EMULATED data parallelism: one process stands for `gpus` ranks
    job.model.train()
    last_ckpt = last_progress = time.monotonic()
    loss = float("nan")
    train_on = False  # a notice came, and the job finishes within it
    while True:
        for inputs, targets in rec.wrap(job.loader):
            if done >= directives.samples or pre.stopping:
                break
            if pre.requested:
                train_on = train_on or finishes_in_time()
                if not train_on:
                    break
                pre.decline()  # no answer: the engine sees the job end instead
                log.info("job %s: notice; finishing within it (%d/%d samples)", job_id, done, directives.samples)
            start = time.monotonic()
            with rec.step():
                out = job.model(inputs)
                loss_t = job.loss_fn(out, targets)
                loss_t.backward()
                job.optimizer.step()
                job.optimizer.zero_grad(set_to_none=True)
                time.sleep(max(0.0, step_s - (time.monotonic() - start)))  # EMULATION: the rest of the GPU step
            loss = float(loss_t.detach())
            done += gpus * directives.batch_size
            steps += 1
            now = time.monotonic()
            if now - last_ckpt >= CHECKPOINT_EVERY:
                checkpoint()
                pre.checkpointed(done)
                last_ckpt = now
            if now - last_progress >= PROGRESS_EVERY:
                log.info("job %s: %d/%d samples, loss %.3f", job_id, min(done, directives.samples), directives.samples, loss)
                last_progress = now
        rec.flush()
        checkpoint()
        if done >= directives.samples:
            break  # finished: no mark (one would answer a notice, and a finished job must not be requeued)
        pre.checkpointed(done)  # after a notice, this mark answers it
        if pre.requested and not pre.stopping:
            log.info("job %s: notice at %d/%d samples; checkpoint saved, waiting to be requeued", job_id, done,
                     directives.samples)
            if not pre.await_requeue():
                log.info("job %s: no requeue followed the notice; training on", job_id)
                continue
        log.info("job %s: stopped by Slurm at %d/%d samples; checkpoint saved", job_id, done, directives.samples)
        return 143
    rec.close()
    summary = {"job_id": job_id, "model": directives.model, "samples": done, "steps": steps, "loss": loss,
               "runs": history}
    (ckpt_dir / "done.json").write_text(json.dumps(summary, indent=1))
    log.info("job %s: finished %d samples in %d steps over %d run(s), loss %.3f", job_id, done, steps, len(history), loss)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
