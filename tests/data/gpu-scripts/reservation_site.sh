#!/bin/bash
#SBATCH --reservation=maint
#SBATCH --gres=gpu:1
python train.py
