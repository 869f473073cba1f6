#!/bin/bash
#SBATCH -J vit-b
#HOPS gpus=1,2 samples=16K batch-size=32 model=vit
#HOPS lr=0.0003@2 lr-scale=sqrt
# A `make demo` job: export the allocation Hops chose (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, ...), then train.
set -a; [ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"; set +a
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
