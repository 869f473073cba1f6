#!/bin/bash
#SBATCH -J mobilenet-b
#HOPS gpus=1-4 samples=85K batch-size=64 model=mobilenetv2
#HOPS lr=0.045@4
# A `make demo` job: read the allocation Hops chose, then train (etc/demo/train.py).
[ -r "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env" ] && . "$HOPS_JOB_ENV_DIR/$SLURM_JOB_ID.env"
exec "$HOPS_DEMO_PYTHON" "$HOPS_DEMO_ROOT/etc/demo/train.py" "$0"
