#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=-4 samples=1M batch-size=64 model=resnet50
srun python train.py
