#!/bin/bash
#SBATCH -J bert-a
#HOPS gpus=4,8 samples=23K batch-size=16 model=bert
#HOPS lr=0.0001@4,0.00015@8
# A `make demo` job: read the allocation Hops chose, then train (etc/demo/train.py).
[ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
