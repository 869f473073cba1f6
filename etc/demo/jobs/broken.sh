#!/bin/bash
#SBATCH -J broken
#HOPS gpus=1,2,2 samples=1M batch-size=64 model=resnet18
echo "never runs: the duplicate GPU count is rejected at submission"
