#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1,2,4 samples=1M batch-size=64 model=resnet50 lr=0.1@1,0.2@2
srun python train.py
