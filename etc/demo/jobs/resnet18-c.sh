#!/bin/bash
#SBATCH -J resnet18-c
#HOPS gpus=1 samples=26K batch-size=64 model=resnet18
# A `make demo` job: read the allocation Hops chose, then train (etc/demo/train.py).
[ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
