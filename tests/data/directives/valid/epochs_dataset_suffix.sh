#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1 epochs=3 dataset-size=50K batch-size=128 model=mobilenetv2
srun python train.py
