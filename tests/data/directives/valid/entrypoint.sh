#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1,2 samples=10K batch-size=4 model=mypkg.train:build
srun python train.py
