#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=8,1,4 samples=500K batch-size=16 model=vgg11
srun python train.py
