#!/usr/bin/env bash
# A single-node SLURM on this machine for CI (Debian's slurm-wlm and munge): `start` writes a
# config under $SLURM_DIR (default /tmp/kopt-slurm) with two stand-in GPUs (GRES on /dev/null and
# /dev/zero: jobs that ask for a GPU are scheduled as on a GPU node, no device is bound), starts munged, slurmctld
# and slurmd, and waits until the node is idle; `stop` ends them. No accounting: the executor
# plugin's job status comes from squeue. Needs root.
set -euo pipefail
dir=${SLURM_DIR:-/tmp/kopt-slurm}
host=$(hostname -s)
case "${1:-start}" in
start)
  command -v slurmctld >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge; }
  mkdir -p "$dir"/{state,spool,log} /run/munge /etc/munge /var/log/munge /var/lib/munge
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
  chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  cpus=$(nproc); mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat > "$dir/slurm.conf" <<CONF
ClusterName=kopt-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  printf 'NodeName=%s Name=gpu File=/dev/null\nNodeName=%s Name=gpu File=/dev/zero\n' "$host" "$host" > "$dir/gres.conf"
  mkdir -p /etc/slurm && ln -sf "$dir/slurm.conf" /etc/slurm/slurm.conf && ln -sf "$dir/gres.conf" /etc/slurm/gres.conf
  export SLURM_CONF="$dir/slurm.conf"
  pgrep -x slurmctld >/dev/null || slurmctld -f "$SLURM_CONF"
  pgrep -x slurmd >/dev/null || slurmd -f "$SLURM_CONF"
  for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
  sinfo -h -o %t 2>/dev/null | grep -q idle || { echo "slurm_local.sh: the node did not come up" >&2; tail -5 "$dir"/log/*.log >&2; exit 1; }
  sinfo
  ;;
stop)
  pkill -x slurmd || true; pkill -x slurmctld || true; pkill -x munged || true
  for _ in $(seq 20); do pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || pgrep -x munged >/dev/null || break; sleep 0.5; done
  rm -rf "$dir"
  ;;
esac
