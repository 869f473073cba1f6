#!/bin/bash
#SBATCH --array=0-7
#SBATCH --gres=gpu:1
#HOPS gpus=1 samples=100K batch-size=32 model=resnet18
python sweep.py --seed $SLURM_ARRAY_TASK_ID
