#!/bin/bash
#SBATCH -G 4
#HOPS gpus=4 samples=1M batch-size=8
python train.py
