#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=2-16 levels=12 samples=1M batch-size=64 model=resnet50
srun python train.py
