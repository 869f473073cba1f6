#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1 samples=10K batch-size=4 model=resnet50 params=25.6M
srun python train.py
