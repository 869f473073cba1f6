"""A training job in miniature for the live notice tests (tests/hops_slurm/slurm/test_notice_live.py).

It counts samples (8 every 50 ms), checkpoints them to ``<out>/<job id>.ckpt`` every second through
:mod:`profiler.preempt` (atomic write, then the mark), resumes from that file after a requeue, and logs
what happens to ``<out>/<job id>.log`` with the time. On the notice it does what ``MODE`` says:
``answer`` (save, mark, wait to be requeued), ``ignore`` (train on without saving again: a job deep in a
long step, say; any checkpoint after the notice would answer it), ``finish`` (exit 0 at once).

Usage: ``notice_job.py OUT MODE``
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from profiler.preempt import Preemption


def main(out: Path, mode: str) -> int:
    job = os.environ.get("SLURM_JOB_ID", "local")
    ckpt, log = out / f"{job}.ckpt", out / f"{job}.log"

    def say(text: str) -> None:
        with log.open("a") as fh:
            fh.write(f"{time.time():.3f} {text}\n")

    samples = int(json.loads(ckpt.read_text())["samples"]) if ckpt.exists() else 0

    def save() -> None:
        tmp = ckpt.with_suffix(".tmp")
        tmp.write_text(json.dumps({"samples": samples}))
        os.replace(tmp, ckpt)

    pre = Preemption.from_env()
    say(f"start run={os.environ.get('SLURM_RESTART_COUNT', '0')} samples={samples}")
    last, noticed = time.monotonic(), False
    while True:
        if pre.stopping:
            say(f"term samples={samples}")
            return 143
        if pre.requested and not noticed:
            noticed = True
            say(f"notice samples={samples}")
            if mode == "finish":
                say("finished")
                return 0
            if mode == "answer":
                save()
                pre.checkpointed(samples)
                say(f"answered samples={samples}")
                if pre.await_requeue():
                    say(f"term samples={samples}")
                    return 143
        samples += 8
        time.sleep(0.05)
        if time.monotonic() - last >= 1.0 and not noticed:
            save()
            pre.checkpointed(samples)
            last = time.monotonic()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
