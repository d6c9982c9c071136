#!/usr/bin/env bash
# A one-node Son of Grid Engine 8.1.9 (Debian 12's gridengine packages) for tests. Run as root.
# The project's copy of the shared recipe (../shared/scripts/sge-up.sh), adapted: a directory
# and ports of its own (several cells can run on one machine, beside a Slurm), the unpacked
# packages kept in a cache between runs, and `down`.
#   bash sge-up.sh        (re)start a clean cell in $SGE_DIR, run nothing else
#   bash sge-up.sh down   delete its jobs, stop its two daemons (by PID file)
# Clients then need: . $SGE_DIR/sge.env   (SGE_ROOT, SGE_CELL, ports, PATH with qsub first)
# Knobs: SGE_DIR=/tmp/sge  SGE_QMASTER_PORT=6444 SGE_EXECD_PORT=6445  SGE_SLOTS=4
#        SGE_PKG=/var/cache/seqera-gridengine (where the .debs are unpacked, reused)
#
# Why unpacked and not installed: Debian's gridengine-client and slurm-wlm-torque both own
# /usr/bin/qsub, so the packages are only `dpkg -x`-ed and their binaries called from the prefix.
# What Grid Engine does that other schedulers do not (each met while writing this):
#  - h_vmem is per slot: `-pe smp 2 -l h_vmem=100M` lets the job use 200M (setrlimit per
#    slot times slots, sge_execd); the backend divides memory by the slots it asks for.
#  - accounting (qacct) is written at once only with accounting_flush_time=00:00:00.
#  - without -o/-e a job's output goes to the submitting user's $HOME.
#  - a job whose start fails (bad -wd, unreadable script) waits in Eqw for ever.
#  - Debian's build dlopen()s its spooling library from the hard-coded /usr/lib/gridengine:
#    that path must lead to the unpacked binaries (a symlink to $SGE_PKG, left in place).
set -euo pipefail
SGE_DIR=${SGE_DIR:-/tmp/sge}
PKG=${SGE_PKG:-/var/cache/seqera-gridengine}
BIN=$PKG/usr/lib/gridengine
SHARE=$PKG/usr/share/gridengine
SPOOL=$SGE_DIR/spool
export SGE_ROOT=$SGE_DIR/root SGE_CELL=default
export SGE_QMASTER_PORT=${SGE_QMASTER_PORT:-6444} SGE_EXECD_PORT=${SGE_EXECD_PORT:-6445}
COMMON=$SGE_ROOT/$SGE_CELL/common
HOST=$(hostname)
SLOTS=${SGE_SLOTS:-4}

alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }
down() {
  local qm ex
  qm=$(cat "$SPOOL/qmaster/qmaster.pid" 2>/dev/null || true)
  ex=$(cat "$SPOOL"/execd/*/execd.pid 2>/dev/null | head -1 || true)
  if [ -n "$qm" ] && alive "$qm" && [ -r "$COMMON/settings.sh" ]; then
    # SIGTERM to execd leaves jobs running: delete them first, then forget what is left
    "$BIN/qdel" -u '*' >/dev/null 2>&1 || true
    for _ in $(seq 40); do
      [ -n "$ex" ] && ps -o stat= --ppid "$ex" 2>/dev/null | grep -qv '^Z' || break; sleep 0.25
    done
    "$BIN/qdel" -f -u '*' >/dev/null 2>&1 || true
  fi
  for pid in $ex $qm; do
    alive "$pid" || continue
    kill -TERM "$pid"
    for _ in $(seq 40); do alive "$pid" || break; sleep 0.25; done
    alive "$pid" && kill -KILL "$pid"
  done
  return 0
}
if [ "${1:-up}" = down ]; then down; exit 0; fi

# 0. a cell left running in this directory is stopped; the ports must be free
down
for p in "$SGE_QMASTER_PORT" "$SGE_EXECD_PORT"; do
  if ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then echo "port $p is in use" >&2; exit 1; fi
done

# 1. packages: runtime libraries through apt, the gridengine .debs downloaded and unpacked
LIBS="libjemalloc2 libhwloc15 libmunge2 libdb5.3 libtirpc3 libssl3 procps"
missing=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $LIBS 2>/dev/null | awk '$1!="ii"{print $2}' || true)
[ "$(dpkg-query -W -f='${Package}\n' $LIBS 2>/dev/null | wc -l)" -lt "$(echo $LIBS | wc -w)" ] && missing=yes
updated=0
if [ -n "$missing" ]; then
  apt-get update -qq; updated=1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $LIBS >/dev/null
fi
if [ ! -x "$BIN/sge_qmaster" ]; then
  debs=$(mktemp -d)
  fetch() { ( cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root \
              gridengine-common gridengine-client gridengine-master gridengine-exec ); }
  # a fresh machine has no package lists yet
  fetch || { [ "$updated" = 1 ] || apt-get update -qq; fetch; }
  rm -rf "$PKG.new"; mkdir -p "$PKG.new"
  for d in "$debs"/*.deb; do dpkg -x "$d" "$PKG.new"; done
  rm -rf "$debs" "$PKG"; mv "$PKG.new" "$PKG"
fi
if [ -L /usr/lib/gridengine ] || [ ! -e /usr/lib/gridengine ]; then
  [ -e /usr/lib/gridengine/libspoolb.so ] || ln -sfn "$BIN" /usr/lib/gridengine
fi

# 2. the host name must resolve (qmaster and execd look themselves up)
getent hosts "$HOST" >/dev/null || echo "127.0.0.1 $HOST" >> /etc/hosts

# 3. cell directory and spool (what Debian's postinst and init_cluster do)
rm -rf "$SGE_ROOT" "$SPOOL"
mkdir -p "$COMMON" "$SGE_ROOT/utilbin" "$SPOOL/qmaster/job_scripts" "$SPOOL/spooldb" "$SPOOL/execd"
ln -s "$SHARE/util" "$SGE_ROOT/util"
ln -s "$BIN" "$SGE_ROOT/utilbin/lx-amd64"
cat > "$COMMON/bootstrap" <<CONF
# Version: 8.1.9
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         berkeleydb
spooling_lib            libspoolb
spooling_params         $SPOOL/spooldb
binary_path             $BIN
qmaster_spool_dir       $SPOOL/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
CONF
echo "$HOST" > "$COMMON/act_qmaster"
# 127.0.0.1 reverse-resolves to "localhost" (the first /etc/hosts entry): alias it
echo "$HOST localhost" > "$COMMON/host_aliases"
cat > "$COMMON/settings.sh" <<CONF
export SGE_ROOT=$SGE_ROOT SGE_CELL=$SGE_CELL SGE_QMASTER_PORT=$SGE_QMASTER_PORT SGE_EXECD_PORT=$SGE_EXECD_PORT
export SGE_BIN=$BIN
export PATH=$BIN:\$PATH
CONF
ln -sf "$COMMON/settings.sh" "$SGE_DIR/sge.env"

# global configuration: root may submit, local spool, no mail, accounting written at once
sed -e "s|^execd_spool_dir .*|execd_spool_dir        $SPOOL/execd|" \
    -e 's|^min_uid .*|min_uid                0|' \
    -e 's|^min_gid .*|min_gid                0|' \
    -e 's|^mailer .*|mailer                 /bin/true|' \
    -e 's|^load_report_time .*|load_report_time       00:00:10|' \
    -e 's|^reporting_params .*|reporting_params       accounting=true reporting=false flush_time=00:00:15 joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00|' \
    "$SHARE/default-configuration" > "$SGE_DIR/global.conf"
export LD_LIBRARY_PATH=$BIN
"$BIN/spoolinit" berkeleydb libspoolb "$SPOOL/spooldb" init
"$BIN/spooldefaults.bin" configuration "$SGE_DIR/global.conf"
"$BIN/spooldefaults.bin" complexes "$SHARE/util/resources/centry"
"$BIN/spooldefaults.bin" usersets "$SHARE/util/resources/usersets"
"$BIN/spooldefaults.bin" pes "$SHARE/util/resources/pe"        # smp, make, mpi
"$BIN/spooldefaults.bin" managers root
unset LD_LIBRARY_PATH

# 4. qmaster
"$BIN/sge_qmaster"
for _ in $(seq 60); do "$BIN/qconf" -sh >/dev/null 2>&1 && break; sleep 0.5; done
Q="$BIN/qconf"
$Q -as "$HOST" >/dev/null                                  # submit host (it is the admin host)
printf '%s %s\n' hostname "$HOST" load_scaling NONE complex_values NONE user_lists NONE xuser_lists NONE \
  projects NONE xprojects NONE usage_scaling NONE report_variables NONE > "$SGE_DIR/exechost.conf"
$Q -Ae "$SGE_DIR/exechost.conf" >/dev/null
$Q -sp smp | sed "s/^slots .*/slots              $SLOTS/" > "$SGE_DIR/pe_smp.conf"
$Q -Mp "$SGE_DIR/pe_smp.conf" >/dev/null
# scheduler: dispatch within about a second instead of 15 s
$Q -ssconf | sed -e 's/^schedule_interval .*/schedule_interval                 0:0:1/' \
                 -e 's/^flush_submit_sec .*/flush_submit_sec                  1/' \
                 -e 's/^flush_finish_sec .*/flush_finish_sec                  1/' > "$SGE_DIR/sched.conf"
$Q -Msconf "$SGE_DIR/sched.conf" >/dev/null
{ printf '%s %s\n' qname all.q  hostlist "$HOST"  seq_no 0  load_thresholds NONE  suspend_thresholds NONE \
    nsuspend 1  suspend_interval 00:05:00  priority 0  min_cpu_interval 00:05:00  processors UNDEFINED \
    qtype "BATCH INTERACTIVE"  ckpt_list NONE  pe_list smp  rerun FALSE  slots "$SLOTS"  tmpdir /tmp \
    shell /bin/sh  prolog NONE  epilog NONE  shell_start_mode posix_compliant  starter_method NONE \
    suspend_method NONE  resume_method NONE  terminate_method NONE  notify 00:00:60  owner_list NONE \
    user_lists NONE  xuser_lists NONE  subordinate_list NONE  complex_values NONE  projects NONE \
    xprojects NONE  calendar NONE  initial_state default
  for l in rt cpu fsize data stack core rss vmem; do echo "s_$l INFINITY"; echo "h_$l INFINITY"; done
} > "$SGE_DIR/all.q.conf"     # load_thresholds NONE: a busy small machine must not put all.q in alarm
$Q -Aq "$SGE_DIR/all.q.conf" >/dev/null

# 5. execd; ready once the queue instance loses its 'u' (unknown) state
"$BIN/sge_execd"
st=""
for _ in $(seq 120); do
  st=$("$BIN/qstat" -f -q all.q 2>/dev/null | awk -v q="all.q@$HOST" '$1==q {print ($6==""?"ok":$6)}' || true)
  [ "$st" = ok ] && break; sleep 0.5
done
[ "$st" = ok ] || { echo "queue all.q@$HOST not ready (state '$st')" >&2; exit 1; }
echo "SGE up in $SGE_DIR (qmaster port $SGE_QMASTER_PORT); use: . $SGE_DIR/sge.env"
