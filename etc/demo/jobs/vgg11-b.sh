#!/bin/bash
#SBATCH -J vgg11-b
#HOPS gpus=1,2,4 samples=17K batch-size=32 model=vgg11
# A `make demo` job: export the allocation Hops chose (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, ...), then train.
set -a; [ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"; set +a
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
