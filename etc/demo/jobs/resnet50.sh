#!/bin/bash
#SBATCH -J resnet50
#SBATCH -o /tmp/hops-demo-%j.out
#HOPS gpus=1,2,4,8 samples=1.2M batch-size=64 model=resnet50
#HOPS lr=0.1@8
echo "job $SLURM_JOB_ID on $SLURMD_NODENAME GPUs=$CUDA_VISIBLE_DEVICES"
sleep 20
