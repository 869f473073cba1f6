#!/bin/bash
#SBATCH -J mobilenet-b
#HOPS gpus=1-4 samples=85K batch-size=64 model=mobilenetv2
#HOPS lr=0.045@4
# A `make demo` job: export the allocation Hops chose (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, ...), then train.
set -a; [ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"; set +a
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
