#!/bin/bash
#SBATCH -J bert-b
#HOPS gpus=1,2,4 samples=6500 batch-size=16 model=bert
# A `make demo` job: export the allocation Hops chose (HOPS_GPUS, HOPS_LR, HOPS_PLACEMENT, ...), then train.
set -a; [ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"; set +a
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
