#!/bin/bash
#SBATCH --reservation=maint,hops-offer
#SBATCH --gres=gpu:1
python train.py
