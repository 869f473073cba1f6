#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1,2,3,4,5,6,7,8,9 samples=1M batch-size=64 model=resnet50
srun python train.py
