#!/bin/bash
#SBATCH -J gpt2
#SBATCH -o /tmp/hops-demo-%j.out
#HOPS gpus=4,8 samples=500K batch-size=16 model=gpt2-small lr=0.0002@4,0.0003@8
echo "job $SLURM_JOB_ID on $SLURMD_NODENAME GPUs=$CUDA_VISIBLE_DEVICES"
sleep 20
