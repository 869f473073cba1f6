#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=2 samples=3G batch-size=8 model=gpt2-small
srun python train.py
