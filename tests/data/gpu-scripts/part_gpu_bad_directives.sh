#!/bin/bash
#SBATCH --partition=gpu
#HOPS gpus=0 batch-size=64
python train.py
