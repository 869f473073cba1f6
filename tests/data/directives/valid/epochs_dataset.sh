#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS gpus=1,2 epochs=90 dataset-size=1281167 batch-size=256 model=resnet50
srun python train.py
