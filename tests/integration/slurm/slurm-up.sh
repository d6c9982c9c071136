#!/usr/bin/env bash
# Single-node Slurm (Debian 12, slurm-wlm 22.05) on localhost for tests. Run as root.
# The project's copy of the shared recipe (../shared/scripts/slurm-up.sh); it adds the Torque
# wrappers (slurm-wlm-torque), the knobs SELECT_PARAMS, EXTRA_CONF and SLURMCTLD_PORT/SLURMD_PORT,
# and shares munged between clusters: each registers under /run/munge/seqera-users/, and
# munged stops with the last registered cluster if one of them started it (a cluster that
# started it may end while another one still needs it).
#   bash slurm-up.sh        install if needed, (re)start from a clean state, run a smoke job
#   bash slurm-up.sh down   stop every daemon this script started (by PID file)
# Clients then need: export SLURM_CONF=$SLURM_DIR/slurm.conf  (or LINK_ETC=1 to symlink /etc/slurm/slurm.conf)
# Knobs: SLURM_DIR=/tmp/slurm   SLURM_CPUS=<advertised CPUs, default nproc; e.g. 32 for throughput>
#        MIN_JOB_AGE=300 (s a finished job stays in squeue/scontrol)   WITH_DBD=1 (mariadb+slurmdbd -> real sacct)
#        SELECT_PARAMS=CR_Core (CR_Core_Memory makes --mem a consumable, enforced resource)
#        EXTRA_CONF='Key=Value<newline>...' (more slurm.conf lines)   SLURMCTLD_PORT=6817 SLURMD_PORT=6818
#        DBD_PORT=6819 MARIADB_PORT=3306 (with WITH_DBD=1; a second cluster needs its own)
#        NODE_EXTRA="Gres=tmpspace:10G TmpDisk=0" (more words on the node line)
#        PAIR_PORTS="6820 6821": instead of the one node, one slurmd per port on this machine
#          (Debian builds multiple-slurmd), nodes n1 n2 ... with 2 CPUs each, for real
#          multi-node jobs (a node named localhost cannot share the machine with them)
set -euo pipefail
SLURM_DIR=${SLURM_DIR:-/tmp/slurm}
CONF=$SLURM_DIR/slurm.conf
export SLURM_CONF=$CONF
R=$SLURM_DIR/run

USERS=/run/munge/seqera-users
ME=$USERS/$(printf %s "$SLURM_DIR" | md5sum | cut -c1-16)

# Whether another live cluster uses munged: its file names its directory, whose
# slurmctld is running or is starting (registered in the last two minutes); one that
# died without "down" does not count.
others() {
  for f in "$USERS"/*; do
    [ -e "$f" ] && [ "$f" != "$ME" ] || continue
    [ -n "$(find "$f" -mmin -2 2>/dev/null)" ] && return 0
    pid=$(cat "$(cat "$f")/run/slurmctld.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then return 0; fi
    rm -f "$f"
  done
  return 1
}

down() {
  # Jobs first, while the daemons can end them: a slurmstepd whose slurmd is gone waits
  # for it for good (an allocation in its idle seconds, a test's last sleeper).
  pid=$(cat "$R/slurmctld.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    ids=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $ids 2>/dev/null || true
      for _ in $(seq 50); do
        [ -z "$(timeout 5 squeue -h -o %A 2>/dev/null || true)" ] && break
        sleep 0.2
      done
    fi
  fi
  pids="$(echo "$R"/slurmd*.pid) $R/slurmctld.pid $R/slurmdbd.pid $R/mariadbd.pid"
  rm -f "$ME"
  if [ -e "$USERS.started" ] && ! others; then
    pids="$pids /run/munge/munged.pid" && rm -f "$USERS.started"
  fi
  for p in $pids; do
    [ -s "$p" ] || continue
    pid=$(cat "$p")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$p"
  done
}
if [ "${1:-up}" = down ]; then down; exit 0; fi

# 1. packages
PKGS=""
command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
  && command -v munged >/dev/null && command -v qsub >/dev/null \
  || PKGS="slurmctld slurmd slurm-client munge slurm-wlm-torque"
[ "${WITH_DBD:-0}" = 1 ] && ! command -v slurmdbd >/dev/null && PKGS="$PKGS mariadb-server slurmdbd"
if [ -n "$PKGS" ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $PKGS
fi

down
rm -rf "$SLURM_DIR"/{state,spool,log,db} "$SLURM_DIR"/spool-*   # fresh cluster: job ids restart at 1
mkdir -p "$SLURM_DIR"/{state,spool,log,run}

# 2. munge (the Debian package already created /etc/munge/munge.key)
[ -s /etc/munge/munge.key ] || mungekey --create --force
chown munge:munge /etc/munge /etc/munge/munge.key; chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
install -d -o munge -g munge -m 700 /var/lib/munge /var/log/munge
mkdir -p "$USERS" && printf %s "$SLURM_DIR" > "$ME"   # registered first: a "down" now keeps it
munge_up() {
  if ! { [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
    runuser -u munge -- /usr/sbin/munged            # daemonizes, writes /run/munge/munged.pid
    touch "$USERS.started"
  fi
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
munge_up || munge_up   # again if the last cluster's "down" stopped it under us

# 3. optional accounting database: mariadb (datadir under $SLURM_DIR/db) + slurmdbd
ACCT="AccountingStorageType=accounting_storage/none"
if [ "${WITH_DBD:-0}" = 1 ]; then
  mariadb-install-db --user=root --datadir="$SLURM_DIR/db" --auth-root-authentication-method=normal \
    --skip-test-db >"$SLURM_DIR/log/mariadb-install.log" 2>&1
  mariadbd --user=root --datadir="$SLURM_DIR/db" --socket=$R/mysqld.sock --bind-address=127.0.0.1 \
    --port=${MARIADB_PORT:-3306} --pid-file=$R/mariadbd.pid --log-error="$SLURM_DIR/log/mariadbd.log" >/dev/null 2>&1 &
  for _ in $(seq 100); do mariadb -S $R/mysqld.sock -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.1; done
  mariadb -S $R/mysqld.sock -uroot -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  printf '%s\n' AuthType=auth/munge DbdHost=localhost SlurmUser=root PidFile=$R/slurmdbd.pid \
    LogFile="$SLURM_DIR/log/slurmdbd.log" StorageType=accounting_storage/mysql StorageHost=127.0.0.1 \
    StoragePort=${MARIADB_PORT:-3306} StorageUser=slurm StoragePass=slurmpw StorageLoc=slurm_acct_db \
    DbdPort=${DBD_PORT:-6819} > "$SLURM_DIR/slurmdbd.conf"
  chmod 600 "$SLURM_DIR/slurmdbd.conf"
  slurmdbd                                          # reads slurmdbd.conf next to $SLURM_CONF
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/${DBD_PORT:-6819}) 2>/dev/null && break; sleep 0.1; done
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=${DBD_PORT:-6819}"
fi

# 4. slurm.conf
HW=$(slurmd -C | head -1 | cut -d' ' -f2-)          # CPUs=.. Boards=.. SocketsPerBoard=.. ... RealMemory=..
CPUS=${SLURM_CPUS:-$(nproc)}
if [ "$CPUS" != "$(nproc)" ]; then                  # advertise more CPUs than exist
  NODE="CPUs=$CPUS $(echo "$HW" | grep -o 'RealMemory=[0-9]*')"; OVERRIDE="SlurmdParameters=config_overrides"
else
  NODE="$HW"; OVERRIDE=""
fi
cat > "$CONF" <<EOF
ClusterName=localcluster
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool-%n
SlurmctldPidFile=$R/slurmctld.pid
SlurmdPidFile=$R/slurmd-%n.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
$ACCT
# final state + exit code of every job, works without slurmdbd:
#   sacct -c -j ID -P -n --format=JobID,State,ExitCode
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_DIR/log/jobcomp.txt
SchedulerType=sched/backfill
# the defaults (batch_sched_delay=3) start only ~0.8 trivial jobs/s; this gives a 1 s scheduling tick
SchedulerParameters=${SCHED_PARAMS:-batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1}
SelectType=select/cons_tres
SelectTypeParameters=${SELECT_PARAMS:-CR_Core}
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
ReturnToService=2
MinJobAge=${MIN_JOB_AGE:-300}
MaxJobCount=100000
MaxArraySize=100001
$OVERRIDE
${EXTRA_CONF:-}
EOF
NODES=localhost
if [ -n "${PAIR_PORTS:-}" ]; then
  MEM=$(echo "$HW" | grep -o 'RealMemory=[0-9]*' | cut -d= -f2)
  i=0; NODES=""
  for port in $PAIR_PORTS; do
    i=$((i + 1)); NODES="$NODES n$i"
    echo "NodeName=n$i NodeAddr=127.0.0.1 Port=$port CPUs=2 RealMemory=$((MEM / 4)) State=UNKNOWN" >> "$CONF"
  done
else
  echo "NodeName=localhost NodeAddr=127.0.0.1 $NODE ${NODE_EXTRA:-} State=UNKNOWN" >> "$CONF"
fi
echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$CONF"
# PBS_JOBID/PBS_O_WORKDIR inside jobs when the slurm-wlm-torque qsub/qstat wrappers are used
echo "optional /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pbs.so" > "$SLURM_DIR/plugstack.conf"
if [ "${LINK_ETC:-0}" = 1 ]; then ln -sf "$CONF" /etc/slurm/slurm.conf; fi

# 5. daemons (they daemonize and write PID files under $R)
slurmctld -f "$CONF"
for n in $NODES; do slurmd -f "$CONF" -N "$n"; done
for n in $NODES; do
  for _ in $(seq 100); do [ "$(sinfo -h -n "$n" -o %t 2>/dev/null)" = idle ] && break; sleep 0.1; done
done

# 6. smoke test
cd "$SLURM_DIR"
JID=$(sbatch --parsable -o "$SLURM_DIR/log/smoke-%j.out" --wrap 'echo hi')
st=""
for _ in $(seq 300); do
  st=$(squeue -h -t all -j "$JID" -o %T 2>/dev/null || true)
  case "$st" in COMPLETED|FAILED|CANCELLED) break;; esac; sleep 0.1
done
echo "smoke job $JID: $st, output: $(cat "$SLURM_DIR/log/smoke-$JID.out")"
[ "$st" = COMPLETED ]
echo "export SLURM_CONF=$CONF"
