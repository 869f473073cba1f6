#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1 samples=1M batch-size=64 model=$(reboot)
srun python train.py
