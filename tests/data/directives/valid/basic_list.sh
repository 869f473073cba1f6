#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1,2,4,8 samples=1200000 batch-size=64 model=resnet50
srun python train.py
