#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=0,1 samples=1M batch-size=64 model=resnet50
srun python train.py
