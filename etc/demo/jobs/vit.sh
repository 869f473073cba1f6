#!/bin/bash
#SBATCH -J vit-small
#SBATCH -o /tmp/hops-demo-%j.out
#HOPS gpus=2-8 levels=4 epochs=30 dataset-size=50K batch-size=128 model=vit-small
#HOPS lr=0.0003@4 lr-scale=sqrt
echo "job $SLURM_JOB_ID on $SLURMD_NODENAME GPUs=$CUDA_VISIBLE_DEVICES"
sleep 20
