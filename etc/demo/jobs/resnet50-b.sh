#!/bin/bash
#SBATCH -J resnet50-b
#HOPS gpus=4,8 samples=26K batch-size=16 model=resnet50
#HOPS lr=0.05@4,0.1@8
# A `make demo` job: export the allocation Hops chose (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, ...), then train.
set -a; [ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"; set +a
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
