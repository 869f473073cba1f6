#!/bin/bash
#SBATCH -J demo
#SBATCH --time=01:00:00
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
#HOPS
srun python train.py
