#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=4 samples=1.2M batch-size=32 model=resnet18
srun python train.py
