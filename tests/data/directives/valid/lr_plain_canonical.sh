#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=2 samples=1M batch-size=8 model=resnet18 lr=1.50E+2@2
srun python train.py
