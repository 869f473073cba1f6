#!/bin/bash
#SBATCH --job-name=llm
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=32
#HOPS gpus=2-8 levels=4 samples=10M batch-size=16 model=gpt2 lr=0.0003@8 lr-scale=sqrt
export MASTER_ADDR=$(hostname)
torchrun --nnodes=1 --nproc_per_node=$HOPS_GPUS train_llm.py
