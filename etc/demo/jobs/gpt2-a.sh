#!/bin/bash
#SBATCH -J gpt2-a
#HOPS gpus=4,8 samples=11K batch-size=8 model=gpt2
#HOPS lr=0.0002@4,0.0003@8
# A `make demo` job: read the allocation Hops chose, then train (etc/demo/train.py).
[ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
