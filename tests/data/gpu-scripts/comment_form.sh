#!/bin/bash
#SBATCH --comment="hops:gpus=2,4 samples=1M batch-size=32 model=resnet50"
#SBATCH --gres=gpu:2
python train.py
