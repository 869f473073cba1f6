#!/bin/bash
#SBATCH --gres=gpu:2
python train.py
