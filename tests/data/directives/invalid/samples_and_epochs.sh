#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1 samples=1M epochs=2 dataset-size=10 batch-size=64 model=resnet50
srun python train.py
