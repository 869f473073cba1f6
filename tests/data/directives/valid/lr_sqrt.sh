#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=2,4 samples=1M batch-size=64 model=vit-small lr=0.0003@4 lr-scale=sqrt
srun python train.py
