"""Where work runs (an executor): `local`, or `slurm` (each run or bisection step is a Slurm job).

spec.py: the settings (profile `cluster:` + command line); plan.py: the job script and the sbatch/srun
lines (pure); slurm.py: the Slurm commands (submit, watch, cancel); launch.py: a run as a job;
task.py: the shim each task runs on the node (stdlib only); doctor.py: `doctor --executor slurm`.
"""
