#!/bin/bash
#SBATCH --job-name=resnet-ddp
#SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=8
#SBATCH --time=12:00:00
#HOPS gpus=1,2,4 samples=1.2M batch-size=64 model=resnet50 lr=0.1@4
srun python -m torch.distributed.run --nproc_per_node=4 train.py
