#!/bin/bash
#SBATCH --job-name=resnet-ddp
#SBATCH --gres=gpu:8
#SBATCH --time=1-00:00:00
#HOPS gpus=1,2,4 samples=1.2M batch-size=64 model=resnet50 lr=0.1@4
torchrun --standalone --nproc_per_node=8 train.py
