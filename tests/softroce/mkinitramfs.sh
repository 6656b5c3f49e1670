#!/bin/bash
# Builds the tiny initramfs that boots a Soft-RoCE guest: static busybox plus
# the modules needed to mount the host's root over 9p with a tmpfs overlay.
# Everything else (rdma_rxe, veth, MPI, gdrbench) comes from the host root.
#
#   mkinitramfs.sh KVER OUT.cpio.gz
set -euo pipefail

kver=${1:?usage: mkinitramfs.sh KVER OUT.cpio.gz}
out=${2:?usage: mkinitramfs.sh KVER OUT.cpio.gz}
moddir=/lib/modules/$kver
busybox=/bin/busybox
[[ -f $moddir/modules.dep ]] || { echo "mkinitramfs: no $moddir/modules.dep (install linux-image-amd64)" >&2; exit 1; }
grep -q 'statically linked' <<< "$(file -L "$busybox")" ||
  { echo "mkinitramfs: $busybox is not static (install busybox-static)" >&2; exit 1; }

# Modules the initramfs loads itself; their dependencies are added in order.
wanted=(virtio_pci 9pnet_virtio 9p overlay virtio_net)

declare -A seen=()
order=()
# Depth-first over modules.dep so each module follows what it needs.
add_module() {
  local path=$1 line dep
  [[ -n ${seen[$path]:-} ]] && return
  seen[$path]=1
  line=$(grep -E "^${path}:" "$moddir/modules.dep")
  for dep in ${line#*:}; do add_module "$dep"; done
  order+=("$path")
}
for m in "${wanted[@]}"; do
  path=$(grep -oE "^[^:]*/${m}\.ko(\.[a-z]+)?:" "$moddir/modules.dep" | sed -n 1p)
  [[ -n $path ]] || { echo "mkinitramfs: module $m not in $moddir" >&2; exit 1; }
  add_module "${path%:}"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,lower,rw,newroot,modules}
cp "$busybox" "$work/bin/busybox"
i=0
for path in "${order[@]}"; do
  # Compressed modules are unpacked so busybox insmod can load them.
  name=$(printf '%02d-%s' "$i" "$(basename "${path%%.ko*}").ko")
  case $path in
    *.ko.xz) xz -dc "$moddir/$path" >"$work/modules/$name" ;;
    *.ko.zst) zstd -qdc "$moddir/$path" >"$work/modules/$name" ;;
    *) cp "$moddir/$path" "$work/modules/$name" ;;
  esac
  i=$((i + 1))
done

cat >"$work/init" <<'INIT'
#!/bin/busybox sh
# Mounts the host root (9p, read-only) under a tmpfs overlay and hands over
# to the guest script named by gdr.init= on the kernel command line.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in /modules/*.ko; do insmod "$m" || echo "initramfs: insmod $m failed"; done
gdr_init=
for arg in $(cat /proc/cmdline); do
  case $arg in gdr.init=*) gdr_init=${arg#gdr.init=} ;; esac
done
fail() { echo "initramfs: $*"; poweroff -f; }
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /lower ||
  fail "cannot mount the host root over 9p"
mount -t tmpfs -o size=512m tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
  fail "cannot mount the overlay"
[ -n "$gdr_init" ] && [ -f "/newroot$gdr_init" ] || fail "no guest script gdr.init=$gdr_init"
umount /proc /sys /dev
exec switch_root /newroot /bin/sh "$gdr_init"
INIT
chmod +x "$work/init"

mkdir -p "$(dirname "$out")"
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$out.tmp.$$"
mv "$out.tmp.$$" "$out"
echo "mkinitramfs: $out (${#order[@]} modules, kernel $kver)" >&2
