#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine (Debian 12: slurmctld slurmd slurm-client munge),
# every file under one folder. Used by the tests (tests/integration/cluster) and the benchmark.
#
#   scripts/slurm-cluster.sh start DIR   start munged, slurmctld and slurmd; prints the lines to export
#   scripts/slurm-cluster.sh stop DIR    stop them (by the pids they wrote under DIR)
#
# Needs root (SlurmUser=root) and the Debian packages; exits 3 with the reason when it cannot start.
# One partition, `debug` (the default); up to 8 jobs share a CPU (OverSubscribe), as tests run several.
set -euo pipefail
cmd=${1:?usage: slurm-cluster.sh start|stop DIR}
dir=${2:?usage: slurm-cluster.sh start|stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  # Jobs first: a job left running when slurmd goes keeps its slurmstepd and program alive.
  if [[ -s "$dir/slurmctld.pid" ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    export SLURM_CONF=$dir/slurm.conf
    scancel --full --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    for _ in $(seq 100); do [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  for name in slurmd slurmctld munged; do
    if [[ -s "$dir/$name.pid" ]]; then
      pid=$(cat "$dir/$name.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$name.pid"
    fi
  done
}

if [[ $cmd == stop ]]; then stop; exit 0; fi
[[ $cmd == start ]] || { echo "usage: slurm-cluster.sh start|stop DIR" >&2; exit 2; }

for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || { echo "slurm-cluster: $tool not found (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 3; }
done
[[ $(id -u) == 0 ]] || { echo "slurm-cluster: needs root (the test cluster runs as SlurmUser=root)" >&2; exit 3; }

host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
[[ -s $dir/munge.key ]] || { head -c 1024 /dev/urandom > "$dir/munge.key"; chmod 400 "$dir/munge.key"; }
cat > "$dir/slurm.conf" <<EOF
ClusterName=xlatools-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket.2
CredType=cred/munge
SlurmctldPort=$(( 20000 + RANDOM % 20000 ))
SlurmdPort=$(( 40000 + RANDOM % 20000 ))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
Waittime=0
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
export SLURM_CONF=$dir/slurm.conf
munged --key-file "$dir/munge.key" --socket "$dir/munge.socket.2" --pid-file "$dir/munged.pid" \
  --log-file "$dir/log/munged.log" --seed-file "$dir/munge.seed" --force
slurmctld -f "$dir/slurm.conf" -i
slurmd -f "$dir/slurm.conf"
for _ in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then
    echo "export SLURM_CONF=$dir/slurm.conf"
    exit 0
  fi
  sleep 0.1
done
echo "slurm-cluster: the node did not become idle in 10 s; logs in $dir/log" >&2
sinfo >&2 || true
stop
exit 3
