#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1 samples=1M batch-size=8 model=resnet18
srun python train.py
