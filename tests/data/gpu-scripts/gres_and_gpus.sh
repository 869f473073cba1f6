#!/bin/bash
#SBATCH --gres=gpu:2
#SBATCH --gpus=2
#HOPS gpus=1,2,4 samples=1.2M batch-size=64 model=resnet50 lr=0.1@4
python train.py
