#!/bin/bash
# PID 1 of the test guest (`cargo xtask vm`): brings up soft-RoCE (rdma_rxe) and the kernel NFS
# server on a tmpfs export, mounts the export twice (proto=tcp and proto=rdma,port=20049), and
# for each sequence in /payload/media plays it from both mounts with caches dropped before each
# run, checking the decoded frames against the md5s the host computed. Then it tells the host it
# may read the export with playsim's own NFS client (hostfwd), waits for /out/poweroff, and
# powers off. Every result goes to /out; the console says PLAYSIM-GUEST-DONE or -FAIL.
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
for seq in $(ls /payload/media); do
  for t in tcp rdma; do
    cold
    if timeout 600 /payload/playsim decode --md5 "/mnt/$t/$seq" > "/out/$seq-$t.md5" 2> "/out/$seq-$t.md5.err" \
       && cmp -s "/out/$seq-$t.md5" "/payload/expected/$seq.md5"; then
      echo "MD5 $seq $t OK $(wc -l < "/out/$seq-$t.md5") frames" >> /out/results.txt
    else
      echo "MD5 $seq $t MISMATCH" >> /out/results.txt
      cat "/out/$seq-$t.md5.err"
    fi
    cold
    timeout 600 /payload/playsim play "/mnt/$t/$seq" --fps max --quiet --json "/out/$seq-$t.json" \
      > "/out/$seq-$t.txt" 2>&1 || echo "PLAY $seq $t FAILED (exit $?)" >> /out/results.txt
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
if timeout 600 /payload/playsim run /tmp/pair.toml --quiet --json-dir /out/scenario > /out/scenario.txt 2>&1; then
  echo "SCENARIO tcp-vs-rdma OK" >> /out/results.txt
else
  echo "SCENARIO tcp-vs-rdma FAILED (exit $?)" >> /out/results.txt
  tail -20 /out/scenario.txt
fi
say "scenario done"
grep -E 'xprt' /proc/self/mountstats | sort | uniq -c
sync

echo "PLAYSIM-GUEST-READY-FOR-HOST"
for i in $(seq 1200); do [ -e /out/poweroff ] && break; sleep 0.5; done
[ -e /out/poweroff ] || say "no poweroff request from the host after 600 s"
umount /mnt/tcp /mnt/rdma
echo "PLAYSIM-GUEST-DONE"
sync; echo o > /proc/sysrq-trigger
sleep 10
