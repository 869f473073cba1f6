#!/bin/bash
#SBATCH --gres=gpu:4
#HOPS gpus=4,4 samples=1M batch-size=8 model=resnet50
python train.py
