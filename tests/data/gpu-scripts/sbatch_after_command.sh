#!/bin/bash
#HOPS gpus=1,2,4 samples=1.2M batch-size=64 model=resnet50 lr=0.1@4
#SBATCH --time=10
module load cuda
#SBATCH --gres=gpu:8
python train.py
