#!/bin/bash
#SBATCH --gres=gpu:a100:2
#SBATCH -p gpu
python train.py
