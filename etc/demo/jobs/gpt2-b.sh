#!/bin/bash
#SBATCH -J gpt2-b
#HOPS gpus=2,4 samples=5500 batch-size=8 model=gpt2
# A `make demo` job: read the allocation Hops chose, then train (etc/demo/train.py).
[ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
