#!/bin/sh
# Baked into the guest image as /init.sh (PID 1): mounts the payload share (read-only) and the
# out share (read-write) over 9p and execs the payload's guest script, so the payload changes
# without rebuilding the image.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
modprobe 9pnet_virtio; modprobe 9p
mkdir -p /payload /out
if mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 payload /payload \
   && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out /out \
   && [ -x /payload/guest.sh ]; then
  umount /proc
  exec /payload/guest.sh
fi
echo "PLAYSIM-GUEST-FAIL: no 9p shares or no /payload/guest.sh"
echo o > /proc/sysrq-trigger; sleep 5
