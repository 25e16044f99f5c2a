#!/bin/bash
# PID 1 of the test guest (`cargo xtask vm`): brings up soft-RoCE (rdma_rxe) and the kernel NFS
# server on a tmpfs export, and reads the export over four paths: a proto=tcp and a proto=rdma
# kernel mount, playsim's own NFS client over TCP (nfs://) and over RDMA (nfs+rdma://, port
# 20049; MOUNT over TCP to rpc.mountd). For each sequence in /payload/media it decodes every
# frame over each path and checks them against the md5s the host computed, plays it from the
# kernel mounts with caches dropped before each run, makes one paced run per path, survives a
# server restart in the middle of an nfs+rdma run and netem's loss and delay on the path, plays
# from Samba's share over three kernel SMB mounts and playsim's smb://, and
# measures the bench rows (fio on the kernel RDMA mount, playsim's clients, ib_write_bw). Then
# it tells the host it may read the
# export with playsim's own NFS client (hostfwd), waits for /out/poweroff, and powers off.
# Every result goes to /out (results.txt, the JSON reports, bench-runs.tsv); the console says
# PLAYSIM-GUEST-DONE or -FAIL. The host judges the JSON reports: this script only records.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "PLAYSIM-GUEST: $* (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }
die() { echo "PLAYSIM-GUEST-FAIL: $*"; echo "FAIL $*" >> /out/results.txt; sync; echo o > /proc/sysrq-trigger; sleep 10; }

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run; mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/lib/nfs 2>/dev/null
: > /out/results.txt
say "kernel $(uname -r), $(nproc) cpus"

# The binary built on the host must find every library it links.
if ldd /payload/playsim | grep -q "not found"; then
  ldd /payload/playsim | grep "not found"
  die "libraries missing in the guest: $(ldd /payload/playsim | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
fi
echo "LDD OK" >> /out/results.txt
# Runs use a copy on tmpfs, which dropping the caches leaves in memory: otherwise every cold
# run would first read the binary again over 9p, seconds of the guest's CPU under TCG.
PLAYSIM=/tmp/playsim
cp /payload/playsim "$PLAYSIM" || die "copying playsim to /tmp"

# Network: the NIC's name varies (ens3, eth0); MTU 9000 lets rxe use 4096-byte packets.
modprobe virtio_net
for i in $(seq 50); do IF=$(ls /sys/class/net | grep -v '^lo$' | head -1); [ -n "$IF" ] && break; sleep 0.1; done
[ -n "$IF" ] || die "no network interface"
ip link set lo up
ip link set "$IF" mtu 9000 up
ip addr add 10.0.2.15/24 dev "$IF"
ip route add default via 10.0.2.2

# Soft-RoCE.
modprobe rdma_rxe || die "modprobe rdma_rxe"
modprobe ib_uverbs; modprobe rdma_ucm
rdma link add rxe0 type rxe netdev "$IF" || die "rdma link add rxe0"
say "rxe0 up"

# The kernel NFS server, TCP on 2049 and RDMA on 20049, exporting a tmpfs.
mkdir -p /export /mnt/tcp /mnt/rdma /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery /run/rpcbind
mount -t tmpfs -o size=1g tmpfs /export
chmod 1777 /export
echo "/export *(rw,insecure,no_root_squash,no_subtree_check,async,fsid=1)" > /etc/exports
: > /var/lib/nfs/etab; : > /var/lib/nfs/rmtab
modprobe nfsd; modprobe svcrdma 2>/dev/null; modprobe rpcrdma 2>/dev/null
mount -t nfsd nfsd /proc/fs/nfsd
mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs
rpcbind -w || die rpcbind
exportfs -ra || die exportfs
rpc.mountd -p 20048 || die rpc.mountd
rpc.nfsd 8 || die rpc.nfsd
echo "rdma 20049" > /proc/fs/nfsd/portlist || die "nfsd rdma listener"
say "nfsd up: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)"

cp -r /payload/media/. /export/ || die "copying the media into the export"
OPTS=vers=3,nolock,nosharecache,rsize=1048576
mount -t nfs -o $OPTS,proto=tcp 10.0.2.15:/export /mnt/tcp || die "nfs mount over tcp"
mount -t nfs -o $OPTS,proto=rdma,port=20049 10.0.2.15:/export /mnt/rdma || die "nfs mount over rdma"
grep -E ' nfs ' /proc/mounts
say "mounted over tcp and rdma"

cold() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# Root may lock memory without limit anyway; the RDMA client registers whole frame buffers.
ulimit -l unlimited
# The source of sequence $2 over path $1. playsim's own clients are given the ports (rpc.mountd
# on 20048, nfsd on 2049 and, for RDMA, 20049 by default) so that no portmap call is needed.
source_of() {
  case $1 in
    tcp|rdma) echo "/mnt/$1/$2" ;;
    userspace-tcp-guest) echo "nfs://10.0.2.15/export/$2?mountport=20048&nfsport=2049" ;;
    userspace-rdma) echo "nfs+rdma://10.0.2.15/export/$2?mountport=20048" ;;
    # The same client through the kernel option's spelling, with 4 connections (below).
    userspace-rdma-nconnect4) echo "nfs://10.0.2.15/export/$2?proto=rdma&mountport=20048" ;;
  esac
}
# Why a command failed, in one line: its exit status and the last line it wrote to stderr.
why() { echo "exit $1: $(grep -v '^[[:space:]]*$' "$2" 2>/dev/null | tail -1)"; }
# Decodes every frame of sequence $1 over path $2 from cold caches and checks the md5s.
check_md5() {
  local seq=$1 t=$2 rc extra=""
  [ "$t" = userspace-rdma-nconnect4 ] && extra="--nconnect 4"
  cold
  timeout 600 "$PLAYSIM" decode --md5 "$(source_of "$t" "$seq")" $extra > "/out/$seq-$t.md5" 2> "/out/$seq-$t.md5.err"
  rc=$?
  if [ $rc != 0 ]; then
    echo "MD5 $seq $t FAILED ($(why $rc "/out/$seq-$t.md5.err"))" >> /out/results.txt
    tail -5 "/out/$seq-$t.md5.err"
  elif cmp -s "/out/$seq-$t.md5" "/payload/expected/$seq.md5"; then
    echo "MD5 $seq $t OK $(wc -l < "/out/$seq-$t.md5") frames" >> /out/results.txt
  else
    echo "MD5 $seq $t MISMATCH" >> /out/results.txt
  fi
}
for seq in $(ls /payload/media); do
  for t in tcp rdma; do
    check_md5 "$seq" "$t"
    cold
    timeout 600 "$PLAYSIM" play "/mnt/$t/$seq" --fps max --quiet --json "/out/$seq-$t.json" \
      > "/out/$seq-$t.txt" 2>&1 || echo "PLAY $seq $t FAILED (exit $?)" >> /out/results.txt
    say "$seq over $t done"
  done
  for t in userspace-tcp-guest userspace-rdma userspace-rdma-nconnect4; do
    check_md5 "$seq" "$t"
    say "$seq over $t done"
  done
done
# The TCP-against-RDMA pair as a scenario file (examples/tcp-vs-rdma.toml's shape, scaled to
# a TCG guest): one run per mount, each from a cold cache, and `playsim run`'s table.
cat > /tmp/pair.toml <<'TOML'
name = "pair"
cache = "cold"
fps = 24
frames = 24
[[run]]
name = "tcp"
[[run.stream]]
source = "/mnt/tcp/dpx"
[[run]]
name = "rdma"
[[run.stream]]
source = "/mnt/rdma/dpx"
TOML
if timeout 600 "$PLAYSIM" run /tmp/pair.toml --quiet --json-dir /out/scenario > /out/scenario.txt 2>&1; then
  echo "SCENARIO tcp-vs-rdma OK" >> /out/results.txt
else
  echo "SCENARIO tcp-vs-rdma FAILED (exit $?)" >> /out/results.txt
  tail -20 /out/scenario.txt
fi
say "scenario done"

# Record: the same capture (8 HD DPX frames, encoded, synced at the end) written to the guest's
# tmpfs, through each kernel mount (the kernel's NFS client over TCP and over RDMA) and through
# playsim's own NFS client over TCP and over RDMA (its WRITEs' data in read chunks), as a
# scenario of record runs that keep their files. The generator is deterministic, so every
# path's files must be byte-identical to the local ones; the host checks each JSON's storage
# label and counts.
REC="format = \"dpx\", preset = \"hd\", fps = \"max\", frames = 8, sync = \"end\", encoders = 1"
cat > /tmp/record.toml <<TOML
name = "rec"
[[run]]
name = "local"
keep = true
record = { destination = "/tmp/rec-local", $REC }
[[run]]
name = "tcp"
keep = true
record = { destination = "/mnt/tcp/rec-tcp", $REC }
[[run]]
name = "rdma"
keep = true
record = { destination = "/mnt/rdma/rec-rdma", $REC }
[[run]]
name = "userspace-tcp-guest"
keep = true
record = { destination = "nfs://10.0.2.15/export/rec-user?mountport=20048&nfsport=2049", $REC }
[[run]]
name = "userspace-rdma"
keep = true
record = { destination = "nfs+rdma://10.0.2.15/export/rec-urdma?mountport=20048", $REC }
TOML
timeout 600 "$PLAYSIM" run /tmp/record.toml --quiet --json-dir /out/record > /out/record.txt 2>&1
rc=$?
[ $rc = 0 ] || tail -20 /out/record.txt
(cd /tmp/rec-local && md5sum frame.*) > /out/record-local.md5
for t in tcp rdma userspace-tcp-guest userspace-rdma; do
  case $t in
    userspace-tcp-guest) dir=/export/rec-user ;;
    userspace-rdma) dir=/export/rec-urdma ;;
    *) dir=/export/rec-$t ;;
  esac
  (cd "$dir" 2>/dev/null && md5sum frame.*) > "/out/record-$t.md5"
  if [ $rc != 0 ]; then
    echo "RECORD $t FAILED (the scenario: $(why $rc /out/record.txt))" >> /out/results.txt
  elif [ "$(wc -l < /out/record-local.md5)" != 8 ]; then
    echo "RECORD $t FAILED (the local recording has $(wc -l < /out/record-local.md5) of 8 frames)" >> /out/results.txt
  elif cmp -s "/out/record-$t.md5" /out/record-local.md5; then
    echo "RECORD $t OK 8 frames, byte-identical to the local recording" >> /out/results.txt
  else
    echo "RECORD $t MISMATCH ($(wc -l < "/out/record-$t.md5") files against the local recording's 8)" >> /out/results.txt
  fi
done
rm -rf /export/rec-tcp /export/rec-rdma /export/rec-user /export/rec-urdma /tmp/rec-local
say "record runs done"
grep -E 'xprt' /proc/self/mountstats | sort | uniq -c
grep ' nfs ' /proc/mounts > /out/mounts.txt

# One paced run per path: the DPX sequence at 24 fps, 48 frames, looping, cold caches for the
# kernel mounts (playsim's own clients have no cache). The host compares the four reports and
# checks each one's storage label.
PATHS="tcp rdma userspace-tcp-guest userspace-rdma"
for t in $PATHS; do
  cold
  timeout 300 "$PLAYSIM" play "$(source_of "$t" dpx)" --fps 24 --frames 48 --loop --quiet \
    --json "/out/paced-$t.json" > "/out/paced-$t.txt" 2> "/out/paced-$t.err"
  rc=$?
  if [ $rc = 0 ]; then
    echo "PACED $t OK" >> /out/results.txt
  else
    echo "PACED $t FAILED ($(why $rc "/out/paced-$t.err"))" >> /out/results.txt
  fi
done
say "paced runs done"

# A directory of 3000 entries over nfs+rdma: READDIRPLUS's replies are larger than the 4 KiB
# a reply may take inline, so the call offers a reply chunk and the server writes the reply
# into it (RDMA_NOMSG). The listing must come whole, and the report counts those replies.
"$PLAYSIM" generate /export/many --preset 64x36 --frames 3000 --threads 2 > /out/many-gen.txt 2>&1
timeout 300 "$PLAYSIM" play "$(source_of userspace-rdma many)" --fps max --frames 24 --quiet \
  > /out/many-rdma.txt 2> /out/many-rdma.err
rc=$?
nomsg=$(grep -o 'replies_in_reply_chunk_process=[0-9]*' /out/many-rdma.txt | cut -d= -f2)
if [ $rc = 0 ] && grep -q '(3000 frames)' /out/many-rdma.txt && [ "${nomsg:-0}" -ge 1 ]; then
  echo "LISTING userspace-rdma OK 3000 entries, $nomsg replies in the reply chunk" >> /out/results.txt
else
  echo "LISTING userspace-rdma FAILED (exit $rc, replies in the reply chunk: ${nomsg:-none}; $(why $rc /out/many-rdma.err))" >> /out/results.txt
fi
rm -rf /export/many
say "listing done"

# The matrix on a location over nfs+rdma:// (issue 23): its media made in a local stage and
# copied to the export through playsim's own client over RDMA (WRITEs whose data go in read
# chunks), then each trial played back over RDMA: one small DPX row, one rate, yes/no.
mkdir -p /export/mx
timeout 300 "$PLAYSIM" matrix "$(source_of userspace-rdma mx)" --formats dpx:256x144 --rates 24 \
  --streams 1 --window 2s --stage /tmp/mx-stage --quiet --json /out/matrix-rdma.json \
  > /out/matrix-rdma.txt 2> /out/matrix-rdma.err
rc=$?
if [ $rc = 0 ] && grep -q '"best_streams": 1' /out/matrix-rdma.json && [ -f /export/mx/matrix-media/.dpx-256x144.complete ]; then
  echo "MATRIX userspace-rdma OK $(grep -A1 '^format' /out/matrix-rdma.txt | tail -1)" >> /out/results.txt
else
  echo "MATRIX userspace-rdma FAILED ($(why $rc /out/matrix-rdma.err); $(ls -a /export/mx/matrix-media 2>&1 | tr '\n' ' '))" >> /out/results.txt
fi
rm -rf /export/mx /tmp/mx-stage
say "matrix done"

# The SMB server for the bench rows and the SMB mounts below: Samba's smbd shares the export
# as `media`, for one user; playsim's smb:// client takes the user from the environment. (The
# kernel's own server, ksmbd, oopses in smb2_open on this Debian 6.1 kernel at the first open.)
SMB_USER=playsim
SMB_PASSWORD=playsim-guest
smb_setup() {
  modprobe cifs || return 1
  mkdir -p /etc/samba /var/lib/samba/private /var/cache/samba /var/log/samba /run/samba
  printf '%s\n' '[global]' '  server role = standalone server' '  disable netbios = yes' \
    '  smb ports = 445' '  map to guest = never' '  load printers = no' '  printing = bsd' \
    '  printcap name = /dev/null' '  disable spoolss = yes' '  server multi channel support = yes' \
    '  log level = 1' '[media]' '  path = /export' '  read only = yes' "  valid users = $SMB_USER" \
    '  force user = root' > /etc/samba/smb.conf
  id "$SMB_USER" > /dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$SMB_USER" || return 1
  printf '%s\n%s\n' "$SMB_PASSWORD" "$SMB_PASSWORD" | smbpasswd -s -a "$SMB_USER" || return 1
  smbd -D || return 1
  for i in $(seq 100); do
    (echo > /dev/tcp/10.0.2.15/445) 2> /dev/null && return 0
    sleep 0.2
  done
  echo "smbd does not listen on 10.0.2.15:445"
  return 1
}
SMB_UP=0
if smb_setup > /out/smb-setup.txt 2>&1; then
  SMB_UP=1
  echo "SMB setup OK" >> /out/results.txt
  export PLAYSIM_SMB_USER=$SMB_USER PLAYSIM_SMB_PASSWORD=$SMB_PASSWORD
else
  echo "SMB setup FAILED ($(grep -v '^[[:space:]]*$' /out/smb-setup.txt | tail -1))" >> /out/results.txt
fi

# Bench rows (issue 18, point 5): one file set of 8 frametest 2k frames (100 MB: the rows take
# 15-60 MB/s under TCG, and the tier's time is short), then rounds in which each
# row runs once, in alternation, from cold caches. The whole guest's CPU comes from /proc/stat
# (user+nice, system, irq, softirq), because the kernel client's work runs in kworkers and
# softirq, not in fio's process; knfsd and rxe share the guest, the same for every row. The
# host reads each run's output for its bytes and MB/s and prints the table; a run that fails
# is recorded with its exit status and never fails the tier.
BENCH_ROUNDS=3
HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
mkdir -p /out/bench
printf 'row\tround\texit\twall_s\tuser_s\tsystem_s\tirq_s\tsoftirq_s\toutput\n' > /out/bench-runs.tsv
bench_cpu() { awk '/^cpu /{print $2+$3, $4, $7, $8}' /proc/stat; }
# bench_run ROW ROUND OUTPUT FIGURES COMMAND...: one run, its stdout in /out/bench/OUTPUT; the
# file in /out/bench that holds its figures is FIGURES (the stdout itself, or a --json file),
# and its stderr is FIGURES.err.
bench_run() {
  local row=$1 round=$2 out=$3 figures=$4 rc c0 c1 t0 t1
  shift 4
  cold
  # The data's caches are dropped; the program and its libraries are loaded again before the
  # clock starts, so that no row pays for reading its binary back from the disk.
  "$1" --version > /dev/null 2>&1
  c0=$(bench_cpu); t0=$(date +%s.%N)
  timeout 300 "$@" > "/out/bench/$out" 2> "/out/bench/$figures.err"
  rc=$?
  t1=$(date +%s.%N); c1=$(bench_cpu)
  echo "$row $round $rc $t0 $t1 $c0 $c1 $figures" | awk -v hz="$HZ" '{
    printf "%s\t%s\t%s\t%.3f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\n", $1, $2, $3, $5 - $4,
      ($10 - $6) / hz, ($11 - $7) / hz, ($12 - $8) / hz, ($13 - $9) / hz, $14 }' >> /out/bench-runs.tsv
  [ $rc = 0 ] || echo "bench $row round $round: $(why $rc "/out/bench/$figures.err")"
}
# The verbs limit: ib_write_bw's server in the background (not measured: it waits in accept),
# the client measured; 100 x 1 MiB, about a file set's worth. Both connect with rdma_cm (-R), as NFS
# over RDMA does, so no GID index has to be chosen.
ib_write_pair() {
  local round=$1 server i
  ib_write_bw -d rxe0 -R -s 1048576 -n 100 -F > "/out/bench/ib_write_bw-server-$round.txt" 2>&1 &
  server=$!
  sleep 1
  bench_run ib_write_bw "$round" "ib_write_bw-$round.txt" "ib_write_bw-$round.txt" ib_write_bw -d rxe0 -R -s 1048576 -n 100 -F 10.0.2.15
  for i in $(seq 20); do kill -0 $server 2>/dev/null || break; sleep 0.5; done
  kill $server 2>/dev/null; wait $server 2>/dev/null
}
if timeout 300 "$PLAYSIM" frametest -w 2k -n 8 /export/ft > /out/bench/frametest-write.txt 2>&1; then
  # The kernel SMB row's mount: cache=none, so that fio's O_DIRECT reads go to the server as the
  # RDMA mount's do.
  if [ "$SMB_UP" = 1 ]; then
    mkdir -p /mnt/smb-bench
    timeout 120 mount -t cifs //10.0.2.15/media /mnt/smb-bench \
      -o "vers=3.1.1,cache=none,username=$SMB_USER,password=$SMB_PASSWORD" 2> /out/bench/smb-bench-mount.err \
      || echo "bench: the SMB mount failed: $(tail -1 /out/bench/smb-bench-mount.err)"
  fi
  for round in $(seq $BENCH_ROUNDS); do
    bench_run kernel-rdma-fio "$round" "kernel-rdma-fio-$round.json" "kernel-rdma-fio-$round.json" \
      fio --name=r --opendir=/mnt/rdma/ft --rw=read --bs=1M --iodepth=16 --ioengine=libaio --direct=1 \
      --output-format=json
    bench_run playsim-nfs-rdma "$round" "playsim-nfs-rdma-$round.txt" "playsim-nfs-rdma-$round.json" \
      "$PLAYSIM" frametest -r -t 1 --rsize 1M "$(source_of userspace-rdma ft)" \
      --json "/out/bench/playsim-nfs-rdma-$round.json"
    bench_run playsim-nfs-tcp "$round" "playsim-nfs-tcp-$round.txt" "playsim-nfs-tcp-$round.json" \
      "$PLAYSIM" frametest -r -t 1 --rsize 1M "$(source_of userspace-tcp-guest ft)" \
      --json "/out/bench/playsim-nfs-tcp-$round.json"
    if [ "$SMB_UP" = 1 ]; then
      bench_run kernel-smb-fio "$round" "kernel-smb-fio-$round.json" "kernel-smb-fio-$round.json" \
        fio --name=r --opendir=/mnt/smb-bench/ft --rw=read --bs=1M --iodepth=16 --ioengine=libaio --direct=1 \
        --output-format=json
      bench_run playsim-smb "$round" "playsim-smb-$round.txt" "playsim-smb-$round.json" \
        "$PLAYSIM" frametest -r -t 1 "smb://10.0.2.15/media/ft?sign=off" --json "/out/bench/playsim-smb-$round.json"
    fi
    ib_write_pair "$round"
    say "bench round $round done"
  done
else
  echo "bench: writing the frametest frames failed:"; tail -5 /out/bench/frametest-write.txt
  cp /out/bench/frametest-write.txt /out/bench/frametest-write.failed
fi
mountpoint -q /mnt/smb-bench && umount /mnt/smb-bench
rm -rf /export/ft

# A server fault in the middle of an nfs+rdma run, at 4 fps (a rate this guest sustains over
# soft-RoCE, about 35 MB/s, so that the storage drops are the fault's, not the link's): once
# the run has played for about 3 s (its
# live CSV has 3 rows: setup time varies with the host's load), nfsd stops (which closes its
# RDMA connections: removing the listener alone would leave them up); about 3 s later it comes
# back with its RDMA listener. The host checks the report: complete, storage drops, a reconnect.
: > /out/fault-rdma.timeline
rm -f /tmp/fault-live.csv
( timeout 120 "$PLAYSIM" play "$(source_of userspace-rdma dpx)" --fps 4 --duration 20s --loop \
    --quiet --live-csv /tmp/fault-live.csv --json /out/fault-rdma.json > /out/fault-rdma.txt 2> /out/fault-rdma.err
  echo $? > /out/fault-rdma.exit ) &
runner=$!
for i in $(seq 600); do
  [ "$(wc -l < /tmp/fault-live.csv 2>/dev/null || echo 0)" -ge 4 ] && break
  kill -0 $runner 2>/dev/null || break
  sleep 0.1
done
if kill -0 $runner 2>/dev/null; then
  rpc.nfsd 0
  echo "nfsd stopped at uptime $(cut -d' ' -f1 /proc/uptime) s" >> /out/fault-rdma.timeline
  sleep 3
  rpc.nfsd 8 || echo "FAULT rdma FAILED (rpc.nfsd 8 did not restart nfsd)" >> /out/results.txt
  echo "rdma 20049" > /proc/fs/nfsd/portlist \
    || echo "FAULT rdma FAILED (the RDMA listener did not come back)" >> /out/results.txt
  echo "nfsd back at uptime $(cut -d' ' -f1 /proc/uptime) s: $(tr '\n' ' ' < /proc/fs/nfsd/portlist)" \
    >> /out/fault-rdma.timeline
else
  echo "the run ended before the fault" >> /out/fault-rdma.timeline
fi
wait $runner
say "fault run done (exit $(cat /out/fault-rdma.exit 2>/dev/null))"

# Loss and delay on the path (issue 20, point 3), with netem, which this guest's kernel has and
# the host's lacks. The guest reads its own export, so every NFS packet crosses lo: netem there
# delays each one 20 ms (+-5 ms) and loses 1%, both ways. The kernel client and playsim's own
# then play the DPX sequence at 4 fps for 10 s; the host checks that each run completes and that
# what the path cost is storage drops, never decode or unreadable ones.
modprobe sch_netem 2>/dev/null
for t in tcp userspace-tcp-guest; do
  if tc qdisc replace dev lo root netem delay 20ms 5ms loss 1% 2> "/out/netem-$t.err"; then
    cold
    timeout 120 "$PLAYSIM" play "$(source_of "$t" dpx)" --fps 4 --duration 10s --loop --quiet \
      --json "/out/netem-$t.json" > "/out/netem-$t.txt" 2>> "/out/netem-$t.err"
    echo $? > "/out/netem-$t.exit"
    tc qdisc del dev lo root
  else
    echo "the qdisc could not be added" > "/out/netem-$t.exit"
  fi
  say "netem run over $t done (exit $(cat "/out/netem-$t.exit"))"
done
sync

# SMB (issue 21, point 3): smbd shares the export as `media`; the kernel's cifs client mounts
# it with SMB 3.1.1 three ways (plain, multichannel, seal) and playsim plays the DPX sequence
# from each mount, from cold caches, with /proc/fs/cifs/DebugData kept while the mount is up
# (its channel count); then playsim's own smb:// client reads the same share. The host checks
# each report's label: the dialect, multichannel, seal and the session's channels.
if [ "$SMB_UP" = 1 ]; then
  for v in plain multichannel seal; do
    case $v in
      plain) extra="" ;;
      multichannel) extra=",multichannel,max_channels=4" ;;
      seal) extra=",seal" ;;
    esac
    mkdir -p "/mnt/smb-$v"
    if timeout 120 mount -t cifs //10.0.2.15/media "/mnt/smb-$v" \
        -o "vers=3.1.1,username=$SMB_USER,password=$SMB_PASSWORD$extra" 2> "/out/smb-$v.err"; then
      cold
      timeout 300 "$PLAYSIM" play "/mnt/smb-$v/dpx" --fps 24 --frames 48 --loop --quiet \
        --json "/out/smb-$v.json" > "/out/smb-$v.txt" 2>> "/out/smb-$v.err"
      rc=$?
      cat /proc/fs/cifs/DebugData > "/out/smb-$v.debugdata" 2>/dev/null
      if [ $rc = 0 ]; then
        echo "SMB $v OK" >> /out/results.txt
      else
        echo "SMB $v FAILED ($(why $rc "/out/smb-$v.err"))" >> /out/results.txt
      fi
      umount "/mnt/smb-$v"
    else
      echo "SMB $v FAILED (mount: $(tail -1 "/out/smb-$v.err"))" >> /out/results.txt
    fi
    say "smb $v done"
  done
  # playsim's own client, signed (its default) and encrypted (`seal=on`, as the seal mount).
  for v in userspace userspace-seal; do
    case $v in
      userspace) query="" ;;
      userspace-seal) query="?seal=on" ;;
    esac
    timeout 300 "$PLAYSIM" play "smb://10.0.2.15/media/dpx$query" --fps 24 --frames 48 --loop --quiet \
      --json "/out/smb-$v.json" > "/out/smb-$v.txt" 2> "/out/smb-$v.err"
    rc=$?
    if [ $rc = 0 ]; then
      echo "SMB $v OK" >> /out/results.txt
    else
      echo "SMB $v FAILED ($(why $rc "/out/smb-$v.err"))" >> /out/results.txt
    fi
  done
  say "smb over playsim's client done"
fi
sync

echo "PLAYSIM-GUEST-READY-FOR-HOST"
for i in $(seq 1200); do [ -e /out/poweroff ] && break; sleep 0.5; done
[ -e /out/poweroff ] || say "no poweroff request from the host after 600 s"
umount /mnt/tcp /mnt/rdma
echo "PLAYSIM-GUEST-DONE"
sync; echo o > /proc/sysrq-trigger
sleep 10
