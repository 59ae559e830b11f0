#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A real single-node Kubernetes on this machine, for the tests of the
# kubernetes backend plugin (tests/k8s/). Nothing is pulled from a registry
# and nothing goes through the system's services:
#
#   - Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler,
#     kubelet, kubectl) and etcd are built once from the Go module proxy with
#     a pinned Go toolchain that comes from that proxy too (not the
#     machine's), and kube-router (its NetworkPolicy firewall only) the
#     same way; the binaries are cached outside the repository under
#     $LLM_SANDBOX_CACHE/k8s/<version>-<recipe hash>/bin. (SIG Network's
#     kube-network-policies was the first choice; it cannot work on this
#     kernel: it sends packets to user space with nft's `queue` statement and
#     CONFIG_NFT_QUEUE is off. kube-router filters with iptables and ipsets.)
#   - Debian's containerd, runc and CNI plugins run with a private config,
#     socket, root, bridge and pod range; the pause image (tests/k8s/pause.c)
#     and the project's test image (scripts/container-test-image.sh) are
#     imported as docker-archive tarballs.
#
#   scripts/k8s-cluster.sh up [--no-netpol]  start (or say it runs); the LAST
#                                            line printed is the kubeconfig's
#                                            path, progress goes to stderr
#   scripts/k8s-cluster.sh down              stop everything by recorded PID
#                                            and remove what it made
#   scripts/k8s-cluster.sh status            what runs; exit 0 all up, 1 some
#                                            part dead or left over, 3 down
#   scripts/k8s-cluster.sh build [--check]   only build (or find) the binaries;
#                                            --check: exit 0 when cached
#   scripts/k8s-cluster.sh toolchain         fetch the pinned Go and check that
#                                            it reads Kubernetes' go.mod (the
#                                            build's set-up, in seconds: the
#                                            fresh check runs it)
#   scripts/k8s-cluster.sh kubectl ARGS...   the built kubectl on this cluster
#                                            (/usr/bin/kubectl may be another)
#   scripts/k8s-cluster.sh import TAR...     import docker-archive images (the
#                                            server's, deploy/kubernetes/)
#
# LLM_SANDBOX_CACHE (default /var/cache/llm-sandbox) holds the caches;
# LLM_SANDBOX_K8S_STATE (default /var/lib/llm-sandbox-k8s) the cluster's
# state: sockets, PKI, logs, pid files, etcd, the kubelet's root, containerd's
# state. `down` removes it. containerd's root (its images) is a cache kept in
# $LLM_SANDBOX_CACHE/k8s/containerd-root, emptied of containers at every
# start and stop. In the state directory, for the tests:
#   admin.kubeconfig   the kubeconfig (client certificate in system:masters)
#   test-image         the name of the imported test image
#   netpol             1, or 0 after `up --no-netpol`
#   logs/NAME.log      each daemon's log
# The ports and names are fixed: one cluster per machine. Needs root.
set -eu

KV=v1.34.4                  # Kubernetes; etcd at the version its go.mod names
KR_VERSION=v2.1.0           # kube-router: the only v2 release the proxy serves
TOP=${LLM_SANDBOX_CACHE:-/var/cache/llm-sandbox}/k8s
K=${LLM_SANDBOX_K8S_STATE:-/var/lib/llm-sandbox-k8s}
SRC=$(cd "$(dirname "$0")/.." && pwd)
HERE=$SRC/tests/k8s

# Private names and ranges: the bridge, the pod and service ranges (Podman
# uses 10.88/16 and docker 172.17-31/16 and 192.168/16) and the ports, all
# away from the defaults another cluster or daemon would take.
BRIDGE=llmsbk8s0
POD_CIDR=10.213.64.0/24
SVC_CIDR=10.213.0.0/24
SVC_IP=10.213.0.1
API_PORT=16443
ETCD_PORT=12379             # peer +1, metrics +2
KUBELET_PORT=11250          # healthz 11248
CM_PORT=11257
SCHED_PORT=11259
KR_HEALTH_PORT=11244
PAUSE_IMAGE=docker.io/llm-sandbox-k8s/pause:1
# The test image's name carries its tarball's recipe hash (as in
# tests/integration/containers.py), written to $K/test-image at `up`.
TEST_REPO=docker.io/llm-sandbox-test/debian

# Go: a pinned toolchain, fetched from the Go module proxy (as Go's own
# GOTOOLCHAIN does) and checked against its SHA-256 here, never the
# machine's: Debian 12's golang-go is 1.19, which cannot read Kubernetes'
# go.mod (go 1.24.0), and a development machine's newer Go would hide that.
# Private module and build caches (shared by every recipe key, they are
# content-addressed), pure-Go static binaries.
GO_VERSION=go1.24.13
case $(uname -m) in
x86_64) GO_ARCH=amd64 GO_SHA256=d2b048367a3d1a748b87f756fa06df12ce3b419e1d5f2a3612acb8950d615f9f ;;
aarch64) GO_ARCH=arm64 GO_SHA256=50c7b3e59fa87479d8edf3e9ad81daa477c050fb580f2661cb3b8adaf70af86c ;;
*) GO_ARCH=unknown GO_SHA256="" ;;
esac
GO_ROOT=$TOP/go/toolchain-$GO_VERSION.linux-$GO_ARCH-$(printf '%s' "$GO_SHA256" | cut -c1-16)
GO_PROXY_URL=${LLM_SANDBOX_GOPROXY:-https://proxy.golang.org}
export GOMODCACHE=$TOP/go/mod GOCACHE=$TOP/go/build GOFLAGS=-modcacherw
export GOTOOLCHAIN=local CGO_ENABLED=0
PATH=$GO_ROOT/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

# What the cached binaries are built from; a change here builds again.
K8S_RECIPE="k8s.io/kubernetes@$KV cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kubectl} + go.etcd.io/etcd/server/v3 at kubernetes' go.mod; staging replaced by published v0 modules; $GO_VERSION; CGO_ENABLED=0 -trimpath -s -w, version ldflags; v1"
KR_RECIPE="github.com/cloudnativelabs/kube-router/v2@$KR_VERSION cmd/kube-router; $GO_VERSION; CGO_ENABLED=0 -trimpath -s -w; v1"
K8S_BIN=$TOP/$KV-$(printf '%s' "$K8S_RECIPE" | sha256sum | cut -c1-16)/bin
KR_BIN=$TOP/kube-router-$KR_VERSION-$(printf '%s' "$KR_RECIPE" | sha256sum | cut -c1-16)/bin

P=$K/pki
L=$K/logs
KUBECONFIG_PATH=$K/admin.kubeconfig
CTR_SOCK=$K/containerd/containerd.sock
CTR_ROOT=$TOP/containerd-root

say() { echo "k8s-cluster: $*" >&2; }
die() { say "$*"; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
heavy() { nice -n 19 ionice -c3 "$@"; }

# ---------------------------------------------------------------- build

# The pinned Go toolchain in $GO_ROOT: the module proxy's
# golang.org/toolchain zip (what `GOTOOLCHAIN=goX.Y.Z` downloads), checked
# against GO_SHA256, unpacked with its file modes.
fetch_go() {
    [ -x "$GO_ROOT/bin/go" ] && return 0
    [ -n "$GO_SHA256" ] || die "no pinned Go toolchain for $(uname -m) (amd64 and arm64 only)"
    local url zip tmp
    url=$GO_PROXY_URL/golang.org/toolchain/@v/v0.0.1-$GO_VERSION.linux-$GO_ARCH.zip
    say "fetching Go $GO_VERSION (the toolchain that builds the cluster) from the Go module proxy:"
    say "  $url (about 80 MB, once)"
    mkdir -p "$TOP/go"
    tmp=$(mktemp -d "$TOP/go/toolchain.XXXXXX")
    zip=$tmp/go.zip
    curl -fsSL --retry 3 --max-time 900 -o "$zip" "$url" || {
        rm -rf "$tmp"
        die "could not fetch Go $GO_VERSION from $url"
    }
    printf '%s  %s\n' "$GO_SHA256" "$zip" | sha256sum -c --quiet - >/dev/null 2>&1 || {
        rm -rf "$tmp"
        die "Go $GO_VERSION from $url does not have the pinned SHA-256 $GO_SHA256: not used"
    }
    /usr/bin/python3 - "$zip" "$tmp/root" "golang.org/toolchain@v0.0.1-$GO_VERSION.linux-$GO_ARCH/" \
        <<'PY' || { rm -rf "$tmp"; die "could not unpack $zip"; }
import os, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
top = sys.argv[3]  # a module zip: every file under MODULE@VERSION/
for i in z.infolist():
    if not i.filename.startswith(top) or ".." in i.filename.split("/"):
        sys.exit("unexpected path in the toolchain zip: " + i.filename)
    dst = os.path.join(sys.argv[2], i.filename[len(top):])
    if i.is_dir():
        os.makedirs(dst, exist_ok=True)
        continue
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with z.open(i) as f, open(dst, "wb") as o:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            o.write(b)
    os.chmod(dst, (i.external_attr >> 16) & 0o755 or 0o644)
PY
    "$tmp/root/bin/go" version >/dev/null || { rm -rf "$tmp"; die "the fetched Go $GO_VERSION does not run"; }
    rm -rf "$GO_ROOT"
    mv "$tmp/root" "$GO_ROOT"
    rm -rf "$tmp"
    say "Go $GO_VERSION in $GO_ROOT"
}

# The scratch module that builds Kubernetes from the proxy: `go install
# k8s.io/kubernetes/...@v` refuses its replace directives, so every
# `k8s.io/X => ./staging/src/k8s.io/X` line of its own go.mod becomes a
# replace by the published k8s.io/X of the matching v0 version.
k8s_module() {
    local d=$1 mod sv etcdv
    sv=v0.${KV#v1.}
    mkdir -p "$d"
    cd "$d"
    mod=$(go mod download -json "k8s.io/kubernetes@$KV" |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])')
    etcdv=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$mod")
    [ -n "$etcdv" ] || die "no etcd server version in $mod"
    {
        printf 'module local/llm-sandbox-k8s-build\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$KV"
        awk -v sv="$sv" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "\t" $1 " => " $1 " " sv }' "$mod"
        printf ')\n'
    } >go.mod
    go get "k8s.io/kubernetes/cmd/kube-apiserver@$KV" "k8s.io/kubernetes/cmd/kube-controller-manager@$KV" \
        "k8s.io/kubernetes/cmd/kube-scheduler@$KV" "k8s.io/kubernetes/cmd/kubelet@$KV" \
        "k8s.io/kubernetes/cmd/kubectl@$KV" "go.etcd.io/etcd/server/v3@$etcdv" >"$d.log" 2>&1 || {
        tail -n 20 "$d.log" >&2
        die "go get for Kubernetes $KV failed"
    }
}

build_k8s() {
    [ -x "$K8S_BIN/kubectl" ] && return 0
    local t0 work ld p minor
    t0=$(now)
    say "building Kubernetes $KV and etcd from the Go module proxy into $K8S_BIN"
    say "  (cold: about 20-30 min on 2 cores at nice 19, ~1 GB of modules, ~4 GB of Go build cache)"
    mkdir -p "$TOP"
    work=$(mktemp -d "$TOP/build.XXXXXX")
    (
        trap 'rm -rf "$work" "$work.log"' EXIT
        k8s_module "$work/mod"
        minor=${KV#v1.}
        minor=${minor%%.*}
        ld="-s -w"
        for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
            ld="$ld -X $p.gitVersion=$KV -X $p.gitMajor=1 -X $p.gitMinor=$minor"
            ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
        done
        mkdir -p "$work/bin"
        heavy go build -trimpath -ldflags "$ld" -o "$work/bin/" \
            k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
            k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
            k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3 >"$work.log" 2>&1 || {
            tail -n 30 "$work.log" >&2
            die "go build of Kubernetes $KV failed"
        }
        mv "$work/bin/server" "$work/bin/etcd"
        mkdir -p "$(dirname "$K8S_BIN")"
        rm -rf "$K8S_BIN"
        mv "$work/bin" "$K8S_BIN"
    )
    say "built Kubernetes $KV in $(since "$t0")"
}

build_kube_router() {
    [ -x "$KR_BIN/kube-router" ] && return 0
    local t0 work
    t0=$(now)
    say "building kube-router $KR_VERSION (NetworkPolicy firewall) from the Go module proxy into $KR_BIN"
    say "  (cold: about 3-6 min on 2 cores at nice 19)"
    mkdir -p "$TOP"
    work=$(mktemp -d "$TOP/build.XXXXXX")
    (
        trap 'rm -rf "$work" "$work.log"' EXIT
        mkdir -p "$work/mod" "$work/bin"
        cd "$work/mod"
        printf 'module local/llm-sandbox-kube-router-build\n\ngo 1.22\n' >go.mod
        if ! go get "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KR_VERSION" \
            >"$work.log" 2>&1 ||
            ! heavy go build -trimpath -ldflags "-s -w" -o "$work/bin/" \
                github.com/cloudnativelabs/kube-router/v2/cmd/kube-router >>"$work.log" 2>&1; then
            tail -n 30 "$work.log" >&2
            die "build of kube-router $KR_VERSION failed"
        fi
        mkdir -p "$(dirname "$KR_BIN")"
        rm -rf "$KR_BIN"
        mv "$work/bin" "$KR_BIN"
    )
    say "built kube-router $KR_VERSION in $(since "$t0")"
}

# One build at a time per machine (two checkouts may run `up` together).
build_all() {
    local netpol=$1
    mkdir -p "$TOP"
    exec 9>"$TOP/.build.lock"
    flock 9
    if [ ! -x "$K8S_BIN/kubectl" ] || { [ "$netpol" != 0 ] && [ ! -x "$KR_BIN/kube-router" ]; }; then
        fetch_go
    fi
    build_k8s
    [ "$netpol" = 0 ] || build_kube_router
    exec 9>&-
}


# ---------------------------------------------------------------- helpers

NODE=llm-sandbox-k8s        # the node's name (kubelet --hostname-override)
CGROUP=llm-sandbox-k8s      # the kubelet's cgroup root in every v1 hierarchy
NETNS_PREFIX=${POD_CIDR%.*}.   # an address in our pods' netns starts with it
# The host-wide knobs the cluster changes, with the value it sets: the
# kubelet the first six (overcommit, panic on oops...), the firewall needs
# bridged traffic to pass iptables. `up` records them once; `down` puts back
# each one that still has our value. Not net.ipv4.ip_forward, which the
# bridge plugin turns on: the docker and podman daemons here need it as well.
SYSCTLS="vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1
  kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000
  net/bridge/bridge-nf-call-iptables=1"
# Started in this order, stopped in the reverse one.
DAEMONS="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-router"

kc() { "$K8S_BIN/kubectl" --kubeconfig="$KUBECONFIG_PATH" "$@"; }
ctrk() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }

# The recorded PID of a daemon, if that PID still runs the recorded binary
# (after a crash the number may belong to someone else's process by now).
pid_of() {
    local f=$K/run/$1.pid pid exe
    [ -s "$f" ] && [ -s "$K/run/$1.exe" ] || return 1
    pid=$(cat "$f")
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
    [ "$exe" = "$(cat "$K/run/$1.exe")" ] || return 1
    echo "$pid"
}

# Start a daemon in its own session and record ITS pid, not a wrapper's.
start_bg() {
    local name=$1 i
    shift
    rm -f "$K/run/$name.pid"
    readlink -f "$1" >"$K/run/$name.exe"
    # shellcheck disable=SC2016 # expanded by the inner bash: its own pid
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$K/run/$name.pid" "$@" \
        >"$L/$name.log" 2>&1 </dev/null &
    for i in $(seq 100); do
        [ -s "$K/run/$name.pid" ] && return 0
        sleep 0.05
    done
    die "$name did not start"
}

# poll SECONDS CMD...: whether CMD succeeds within SECONDS.
poll() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}

no_tasks() { ! ctrk tasks ls -q 2>/dev/null | grep -q .; }

# wait_for WHAT SECONDS DAEMON CMD...: poll CMD until it succeeds, failing
# at once if DAEMON (whose log is shown) exits, and after SECONDS.
wait_for() {
    local what=$1 limit=$2 daemon=$3 end
    shift 3
    end=$(($(date +%s) + limit))
    until "$@" >/dev/null 2>&1; do
        if [ -n "$daemon" ] && ! pid_of "$daemon" >/dev/null; then
            tail -n 20 "$L/$daemon.log" >&2
            die "$daemon exited while waiting for $what (log: $L/$daemon.log)"
        fi
        if [ "$(date +%s)" -ge "$end" ]; then
            [ -z "$daemon" ] || tail -n 20 "$L/$daemon.log" >&2
            die "no $what after $limit s"
        fi
        sleep 0.2
    done
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (containerd, kubelet, iptables)"; }

# Debian packages, installed only when missing, saying which.
ensure_packages() {
    local p missing=""
    for p in containerd runc containernetworking-plugins iptables ipset nftables openssl \
        debootstrap gcc libc6-dev curl; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    say "installing with apt:$missing"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2 || {
        apt-get update >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing >&2
    }
}

subst() { # TEMPLATE OUT: fill in the @NAME@ placeholders of tests/k8s/ files
    sed -e "s|@K@|$K|g" -e "s|@NODE_IP@|$NODE_IP|g" -e "s|@BRIDGE@|$BRIDGE|g" \
        -e "s|@POD_CIDR@|$POD_CIDR|g" -e "s|@PAUSE_IMAGE@|$PAUSE_IMAGE|g" \
        -e "s|@KUBELET_PORT@|$KUBELET_PORT|g" -e "s|@KUBELET_HEALTHZ_PORT@|$((KUBELET_PORT - 2))|g" \
        -e "s|@CGROUP@|$CGROUP|g" -e "s|@CTR_ROOT@|$CTR_ROOT|g" "$1" >"$2"
}

# ---------------------------------------------------------------- images

# The pause image as a docker-archive, cached by the hash of its sources.
pause_archive() {
    local key out
    key=$(cat "$HERE/pause.c" "$HERE/pack_image.py" | sha256sum | cut -c1-16)
    out=$TOP/images/pause-$key.tar
    if [ ! -s "$out" ]; then
        mkdir -p "$TOP/images"
        gcc -static -O2 -Wall -Wextra -o "$out.bin" "$HERE/pause.c"
        /usr/bin/python3 "$HERE/pack_image.py" "$PAUSE_IMAGE" "$out" \
            --file "$out.bin:/pause:0755" --entrypoint '["/pause"]' 2>/dev/null
        rm -f "$out.bin"
    fi
    echo "$out"
}

have_image() { ctrk images ls -q | grep -qxF "$1"; }

# Kill and remove every task and container our containerd still holds (a
# crash left them): the kubelet must start from nothing. Prints the netns
# paths their specs named, for `down` to remove.
clear_containers() {
    local c
    for c in $(ctrk containers ls -q 2>/dev/null); do
        ctrk containers info "$c" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
spec = json.load(sys.stdin).get("Spec") or {}
for n in spec.get("linux", {}).get("namespaces", []):
    if n.get("type") == "network" and n.get("path", "").startswith("/var/run/netns/"):
        print(n["path"])' 2>/dev/null || true
    done
    for c in $(ctrk tasks ls -q 2>/dev/null); do ctrk tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    for c in $(ctrk tasks ls -q 2>/dev/null); do ctrk tasks delete -f "$c" >/dev/null 2>&1 || true; done
    for c in $(ctrk containers ls -q 2>/dev/null); do ctrk containers rm "$c" >/dev/null 2>&1 || true; done
}

# The pause image and the project's test image, imported unless containerd's
# root (a cache) has them already; test images of older recipes are removed.
import_images() {
    local t0 rootfs name old
    have_image "$PAUSE_IMAGE" || ctrk images import "$(pause_archive)" >/dev/null
    # the project's test image: built by debootstrap on a cold cache
    rootfs=$(heavy "$SRC/scripts/container-test-image.sh")
    name=$TEST_REPO:$(basename "$rootfs" .tar)
    for old in $(ctrk images ls -q | grep -F "$TEST_REPO:" | grep -vxF "$name"); do
        ctrk images rm "$old" >/dev/null
    done
    if ! have_image "$name"; then
        t0=$(now)
        say "importing $name into containerd (cold: ~30 s)"
        /usr/bin/python3 "$HERE/pack_image.py" "$name" - --layer-tar "$rootfs" \
            --cmd '["/bin/sh"]' 2>/dev/null | ctrk images import - >/dev/null
        have_image "$name" || die "the test image $name was not imported"
        say "imported $name ($(since "$t0"))"
    fi
    echo "$name" >"$K/test-image"
}

# ---------------------------------------------------------------- up

# One CA; the API server's serving certificate; one client certificate in
# system:masters for kubectl, the controllers, the kubelet and the API
# server's calls to the kubelet; the service-account key pair. ECDSA P-256:
# instant to make, and enough for a cluster that lives for a test run.
make_pki() {
    mkdir -p "$P"
    (
        cd "$P"
        umask 077
        key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
        key ca.key
        openssl req -x509 -new -key ca.key -sha256 -days 30 -subj /CN=llm-sandbox-k8s-ca -out ca.crt
        printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth" \
            "subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:$SVC_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
            >apiserver.ext
        printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
            "extendedKeyUsage=clientAuth" >client.ext
        key apiserver.key
        openssl req -new -key apiserver.key -subj /CN=kube-apiserver -out apiserver.csr
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -sha256 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
        key admin.key
        openssl req -new -key admin.key -subj "/O=system:masters/CN=admin" -out admin.csr
        openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
            -sha256 -extfile client.ext -out admin.crt 2>/dev/null
        key sa.key
        openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
        rm -f ./*.csr ./*.ext
    )
    cat >"$KUBECONFIG_PATH" <<X
apiVersion: v1
kind: Config
clusters:
- name: llm-sandbox-k8s
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $P/ca.crt
users:
- name: admin
  user:
    client-certificate: $P/admin.crt
    client-key: $P/admin.key
contexts:
- name: llm-sandbox-k8s
  context: {cluster: llm-sandbox-k8s, user: admin, namespace: default}
current-context: llm-sandbox-k8s
X
    chmod 600 "$KUBECONFIG_PATH"
}

save_sysctls() {
    local s
    [ -s "$K/sysctl.saved" ] && return 0
    for s in $SYSCTLS; do
        s=${s%=*}
        [ ! -e "/proc/sys/$s" ] || echo "$s $(cat "/proc/sys/$s")"
    done >"$K/sysctl.saved"
}

# The kubelet's cgroup root: one folder in every hierarchy of this hybrid
# cgroup v1 machine (runc makes pod folders in the named systemd and the
# unified one too), or the one under a cgroup2 mount (not tried here).
cgroup_dirs() {
    local h
    if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
        echo "/sys/fs/cgroup/$CGROUP"
        return 0
    fi
    for h in /sys/fs/cgroup/*/; do
        h=${h%/}
        [ ! -e "$h/cgroup.procs" ] || echo "$h/$CGROUP"
    done
}

# It must exist before the kubelet starts.
make_cgroups() {
    local d
    for d in $(cgroup_dirs); do
        mkdir -p "$d"
        if [ -e "$d/cpuset.cpus" ] && [ -z "$(cat "$d/cpuset.cpus")" ]; then
            cat "${d%/*}/cpuset.cpus" >"$d/cpuset.cpus"
            cat "${d%/*}/cpuset.mems" >"$d/cpuset.mems"
        fi
    done
}

api_ready() {
    curl -sf --max-time 2 --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" \
        "https://127.0.0.1:$API_PORT/readyz"
}

node_ready() {
    [ "$(kc get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

netpol_ready() {
    curl -sf --max-time 2 "http://127.0.0.1:$KR_HEALTH_PORT/healthz" &&
        iptables -w 5 -S KUBE-ROUTER-INPUT
}

start_kube_router() {
    # the firewall needs bridged pod-to-pod traffic to pass iptables
    echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
    start_bg kube-router "$KR_BIN/kube-router" --kubeconfig="$KUBECONFIG_PATH" \
        --hostname-override="$NODE" --run-firewall=true --run-router=false \
        --run-service-proxy=false --run-loadbalancer=false --enable-cni=false \
        --enable-ipv4=true --enable-ipv6=false --service-cluster-ip-range="$SVC_CIDR" \
        --health-port="$KR_HEALTH_PORT" --metrics-port=0
    wait_for "NetworkPolicy firewall (kube-router) healthy" 60 kube-router netpol_ready
}

cmd_up() {
    local netpol=1 t0 t a
    for a in "$@"; do
        case $a in
        --no-netpol) netpol=0 ;;
        *) die "up: unknown option $a" ;;
        esac
    done
    need_root
    if all_running; then
        if [ "$(cat "$K/netpol")" = "$netpol" ]; then
            say "already up"
            echo "$KUBECONFIG_PATH"
            return 0
        fi
        say "running with netpol=$(cat "$K/netpol"), restarting with netpol=$netpol"
    fi
    [ ! -e "$K" ] || cmd_down
    t0=$(now)
    ensure_packages
    build_all "$netpol"
    NODE_IP=$(ip -4 -o addr show dev eth0 | awk '{ print $4 }' | cut -d/ -f1 | head -n 1)
    [ -n "$NODE_IP" ] || die "no IPv4 address on eth0 (the kubelet refuses loopback)"

    t=$(now)
    mkdir -p "$K/run" "$L" "$K/cni/net.d" "$K/containerd" "$K/kubelet" "$K/pod-logs"
    echo "$netpol" >"$K/netpol"
    save_sysctls
    { nft list tables 2>/dev/null || true; } >"$K/nft-tables.before"
    echo end >>"$K/nft-tables.before"
    make_cgroups
    make_pki
    subst "$HERE/containerd.toml" "$K/containerd/config.toml"
    subst "$HERE/cni.conflist" "$K/cni/net.d/10-llm-sandbox-k8s.conflist"
    subst "$HERE/kubelet.yaml" "$K/kubelet/config.yaml"
    say "state in $K, PKI and configs ($(since "$t"))"

    t=$(now)
    start_bg containerd /usr/bin/containerd --config "$K/containerd/config.toml"
    wait_for "containerd on $CTR_SOCK" 30 containerd ctr --address "$CTR_SOCK" version
    clear_containers >/dev/null
    import_images
    say "containerd and images ready ($(since "$t"))"

    t=$(now)
    start_bg etcd "$K8S_BIN/etcd" --name "$NODE" --data-dir "$K/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
        --initial-cluster "$NODE=http://127.0.0.1:$((ETCD_PORT + 1))" \
        --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 2))" \
        --unsafe-no-fsync   # throwaway data: no fsync wait on a busy disk
    wait_for "etcd healthy" 30 etcd curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
    start_bg kube-apiserver "$K8S_BIN/kube-apiserver" \
        --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 \
        --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
        --service-cluster-ip-range="$SVC_CIDR" --client-ca-file="$P/ca.crt" \
        --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
        --authorization-mode=Node,RBAC --kubelet-client-certificate="$P/admin.crt" \
        --kubelet-client-key="$P/admin.key" --kubelet-preferred-address-types=InternalIP \
        --allow-privileged=true --profiling=false --enable-priority-and-fairness=false
    wait_for "API server ready" 90 kube-apiserver api_ready
    say "etcd and API server ready ($(since "$t"))"

    t=$(now)
    start_bg kube-controller-manager "$K8S_BIN/kube-controller-manager" \
        --kubeconfig="$KUBECONFIG_PATH" --authentication-kubeconfig="$KUBECONFIG_PATH" \
        --authorization-kubeconfig="$KUBECONFIG_PATH" \
        --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
        --leader-elect=false --use-service-account-credentials=false \
        --bind-address=127.0.0.1 --secure-port="$CM_PORT" \
        --flex-volume-plugin-dir="$K/controller-volume-plugins" \
        --controllers='*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle-controller,-csrsigning'
    start_bg kube-scheduler "$K8S_BIN/kube-scheduler" \
        --kubeconfig="$KUBECONFIG_PATH" --authentication-kubeconfig="$KUBECONFIG_PATH" \
        --authorization-kubeconfig="$KUBECONFIG_PATH" --leader-elect=false \
        --bind-address=127.0.0.1 --secure-port="$SCHED_PORT"
    start_bg kubelet "$K8S_BIN/kubelet" --config="$K/kubelet/config.yaml" \
        --kubeconfig="$KUBECONFIG_PATH" --node-ip="$NODE_IP" --hostname-override="$NODE" \
        --root-dir="$K/kubelet/root" --cert-dir="$K/kubelet/pki" --v=1
    wait_for "node $NODE Ready" 120 kubelet node_ready
    wait_for "default ServiceAccount" 60 kube-controller-manager kc -n default get sa default
    wait_for "kube-root-ca.crt ConfigMap" 60 kube-controller-manager \
        kc -n default get configmap kube-root-ca.crt
    say "controllers, scheduler, kubelet: node Ready ($(since "$t"))"

    if [ "$netpol" = 1 ]; then
        t=$(now)
        start_kube_router
        say "NetworkPolicy firewall (kube-router) ready ($(since "$t"))"
    else
        say "NetworkPolicy firewall not started (--no-netpol): policies are not enforced"
    fi
    say "up in $(since "$t0"); kubectl: $K8S_BIN/kubectl --kubeconfig=$KUBECONFIG_PATH"
    echo "$KUBECONFIG_PATH"
}

# ---------------------------------------------------------------- down

# Whether a process runs: a zombie has exited (this machine's init reaps
# orphans only every few seconds).
running() {
    local st
    st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$st" != Z ] && [ "$st" != X ]
}

stop_daemon() { # NAME GRACE_SECONDS
    local pid i t
    pid=$(pid_of "$1") || { rm -f "$K/run/$1.pid"; return 0; }
    t=$(now)
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq $(($2 * 10))); do
        running "$pid" || break
        sleep 0.1
    done
    if running "$pid"; then
        say "$1 ($pid) still there after $2 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        for i in $(seq 50); do
            running "$pid" || break
            sleep 0.1
        done
    fi
    say "stopped $1 ($pid, $(since "$t"))"
    rm -f "$K/run/$1.pid"
}

# A netns is ours if our CRI named it or an address in it is in our range.
our_netns() {
    local n
    for n in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
        ip -n "$n" -4 -o addr show 2>/dev/null | grep -q " inet ${NETNS_PREFIX//./\\.}" && echo "$n"
    done
}

our_mounts() {
    awk -v k="$K/" -v r="$CTR_ROOT/" 'index($5, k) == 1 || index($5, r) == 1 { print $5 }' \
        /proc/self/mountinfo
}

# The shims of our containerd, found by the socket in their command line.
our_shims() { pgrep -f -- "^[^ ]*containerd-shim[^ ]* .*-address $CTR_SOCK( |\$)" || true; }

# iptables chains only our cluster makes: kube-router's firewall, and the
# kubelet's util chains (off in its config; a crash of an older one).
OUR_CHAINS='^KUBE-(ROUTER-|POD-FW-|NWPLCY-|FIREWALL$|KUBELET-CANARY$|IPTABLES-HINT$)'

# Remove them from every table of iptables and ip6tables: first the jumps to
# them from the built-in chains, then their rules, then the chains. And
# kube-router's ipsets.
remove_our_rules() {
    local ipt table rule chain chains set n=0
    for ipt in iptables ip6tables; do
        for table in filter nat mangle; do
            chains=$($ipt -w 5 -t "$table" -S 2>/dev/null | awk -v re="$OUR_CHAINS" '$1 == "-N" && $2 ~ re { print $2 }')
            [ -n "$chains" ] || continue
            $ipt -w 5 -t "$table" -S 2>/dev/null | awk -v re="$OUR_CHAINS" '
                $1 == "-A" && $2 !~ re { for (i = 3; i < NF; i++) if ($i == "-j" && $(i + 1) ~ re) { print; next } }' |
                sed 's/^-A /-D /' | while read -r rule; do
                    # shellcheck disable=SC2086 # a rule as iptables -S quotes it
                    eval "$ipt" -w 5 -t "$table" $rule || true
                done
            for chain in $chains; do $ipt -w 5 -t "$table" -F "$chain" || true; done
            for chain in $chains; do $ipt -w 5 -t "$table" -X "$chain" || true; done
            n=$((n + $(echo "$chains" | wc -l)))
        done
    done
    for set in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-SRC-|KUBE-DST-|kube-router-)'); do
        ipset destroy "$set" 2>/dev/null || true
        n=$((n + 1))
    done
    [ "$n" = 0 ] || say "removed $n iptables chains and ipsets"
}

# The nftables tables that iptables-nft made for those rules, where they did
# not exist before `up` and hold nothing but empty built-in chains now (a
# table someone else has put a rule or chain in since stays).
remove_empty_nft_tables() {
    [ -s "$K/nft-tables.before" ] || return 0
    command -v nft >/dev/null || return 0
    nft -j list ruleset 2>/dev/null | /usr/bin/python3 -c '
import json, sys
before = set(open(sys.argv[1]).read().split("\n"))
items = json.load(sys.stdin).get("nftables", [])
tables = {}
for it in items:
    for kind in ("table", "chain", "rule", "set", "map", "flowtable", "counter", "quota", "limit"):
        if kind in it:
            o = it[kind]
            key = (o["family"], o.get("table", o.get("name")) if kind != "table" else o["name"])
            t = tables.setdefault(key, {"busy": False})
            if kind == "chain" and "hook" not in o or kind not in ("table", "chain"):
                t["busy"] = True
for (fam, name), t in tables.items():
    if not t["busy"] and "table %s %s" % (fam, name) not in before:
        print(fam, name)' "$K/nft-tables.before" | while read -r fam name; do
        nft delete table "$fam" "$name" 2>/dev/null && say "removed the empty nftables table $fam $name"
    done
}

cmd_down() {
    local t0 ids netns n m pid s cur want h i d left
    need_root
    t0=$(now)
    [ -e "$K" ] || { say "nothing to tear down ($K does not exist)"; return 0; }

    # 1. while the kubelet and the API server run, let the kubelet stop the
    #    pods through CRI: CNI DEL, netns removal, the shims exit
    if pid_of kubelet >/dev/null && pid_of kube-apiserver >/dev/null && api_ready >/dev/null 2>&1; then
        if [ -n "$(kc get pods -A --no-headers 2>/dev/null)" ]; then
            kc delete pods -A --all --grace-period=1 --wait=false >/dev/null 2>&1 || true
        fi
        # pods just deleted through the API may still be stopping
        poll 60 no_tasks || say "pods still running after 60 s; killing them through containerd"
    fi

    # 2. the daemons, in reverse order of their start
    stop_daemon kube-router 10
    stop_daemon kubelet 15
    stop_daemon kube-scheduler 10
    stop_daemon kube-controller-manager 10
    stop_daemon kube-apiserver 30
    stop_daemon etcd 15

    # 3. what CRI still holds (a crash): the netns its sandboxes name, then
    #    the tasks and containers, then containerd
    netns=""
    ! pid_of containerd >/dev/null || netns=$(clear_containers)
    stop_daemon containerd 15

    # 4. leftovers of a crash: our shims, then every process in our cgroups
    ids=""
    for pid in $(our_shims); do
        ids="$ids $(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n '/^-id$/{n;p}')"
        say "killing leftover shim $pid"
        kill -KILL "$pid" 2>/dev/null || true
    done
    for h in $(cgroup_dirs); do
        [ -d "$h" ] || continue
        for pid in $(pod_pids "$h"); do
            say "killing leftover pod process $pid"
            kill -KILL "$pid" 2>/dev/null || true
        done
    done
    # a killed shim leaves its socket in containerd's fixed /run/containerd/s
    for i in $ids; do
        s=$(printf '%s' "$CTR_SOCK/k8s.io/$i" | sha256sum | cut -d' ' -f1)
        rm -f "/run/containerd/s/$s"
    done

    # 5. mounts under the state dir and containerd's root (deepest first),
    #    then our netns
    for i in 1 2 3; do
        m=$(our_mounts | sort -r)
        [ -n "$m" ] || break
        for n in $m; do umount "$n" 2>/dev/null || umount -l "$n" 2>/dev/null || true; done
    done
    for n in $netns $(our_netns); do
        n=${n#/var/run/netns/}
        [ -e "/var/run/netns/$n" ] || continue
        ip netns delete "$n" 2>/dev/null || { umount "/var/run/netns/$n" 2>/dev/null; rm -f "/var/run/netns/$n"; }
        say "removed netns $n"
    done
    rm -f /var/lib/cni/results/llm-sandbox-k8s-*

    # 6. network: the bridge, kube-router's rules
    if ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link delete "$BRIDGE"
        say "deleted bridge $BRIDGE"
    fi
    remove_our_rules
    remove_empty_nft_tables

    # 7. cgroups (deepest first; a killed process takes a moment to leave)
    for h in $(cgroup_dirs); do
        [ -d "$h" ] || continue
        for i in $(seq 50); do
            find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
            [ -d "$h" ] || break
            sleep 0.1
        done
        [ ! -d "$h" ] || say "could not remove cgroup $h"
    done

    # 8. the host knobs we changed, where they still have our value
    if [ -s "$K/sysctl.saved" ]; then
        while read -r s want; do
            cur=$(cat "/proc/sys/$s" 2>/dev/null) || continue
            case " $SYSCTLS " in *[[:space:]]"$s=$cur"[[:space:]]*) ;; *) continue ;; esac
            [ "$cur" != "$want" ] || continue
            echo "$want" >"/proc/sys/$s" 2>/dev/null && say "restored $s = $want (was $cur)"
        done <"$K/sysctl.saved"
    fi

    # 9. what the kubelet puts at fixed paths: its device-plugin socket and
    #    checkpoint, links to our pods' logs (a killed kubelet leaves them);
    #    the folders too when they are empty now, then the state dir
    rm -f /var/lib/kubelet/device-plugins/kubelet.sock \
        /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint
    for d in /var/log/containers/*.log; do
        case $(readlink "$d") in "$K"/*) rm -f "$d" ;; esac
    done
    rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet /var/log/containers 2>/dev/null || true
    if our_mounts | grep -q .; then
        die "mounts remain under $K or $CTR_ROOT; not removing $K"
    fi
    rm -rf --one-file-system "$K"
    left=$(leftovers)
    [ -z "$left" ] || { say "left behind:"; echo "$left" >&2; die "down did not remove everything"; }
    say "down in $(since "$t0"); nothing of the cluster is left"
}

# ---------------------------------------------------------------- status

# Anything of ours that is still there, one line each: processes (ours by
# their binary, socket or cgroup), mounts, netns, the bridge, iptables chains
# and ipsets, cgroups, the kubelet's device-plugin socket.
leftovers() {
    local p h ipt table
    # our daemons run by their full path; containerd with our config
    pgrep -a -f -- "^($K8S_BIN|$KR_BIN)/|^/usr/bin/containerd --config $K/" | sed 's/^/process /' || true
    for p in $(our_shims); do echo "process $p: containerd shim of $CTR_SOCK"; done
    for h in /sys/fs/cgroup/"$CGROUP" /sys/fs/cgroup/*/"$CGROUP"; do
        [ -d "$h" ] || continue
        echo "cgroup $h"
        for p in $(pod_pids "$h"); do echo "process $p in $h"; done
    done
    our_mounts | sed 's/^/mount /'
    for p in $(our_netns); do echo "netns $p"; done
    ! ip link show "$BRIDGE" >/dev/null 2>&1 || echo "link $BRIDGE"
    for ipt in iptables ip6tables; do
        for table in filter nat mangle; do
            $ipt -w 5 -t "$table" -S 2>/dev/null |
                awk -v re="$OUR_CHAINS" -v t="$ipt -t $table" '$1 == "-N" && $2 ~ re { print t ": chain " $2 }'
        done
    done
    ipset list -n 2>/dev/null | grep -E '^(KUBE-SRC-|KUBE-DST-|kube-router-)' | sed 's/^/ipset /' || true
    [ ! -e /var/lib/kubelet/device-plugins/kubelet.sock ] ||
        echo "socket /var/lib/kubelet/device-plugins/kubelet.sock"
    for p in /var/log/containers/*.log; do
        case $(readlink "$p") in "$K"/*) echo "log link $p" ;; esac
    done
}

all_running() {
    local d
    [ -s "$K/netpol" ] || return 1
    for d in $DAEMONS; do
        [ "$d" != kube-router ] || [ "$(cat "$K/netpol")" = 1 ] || continue
        pid_of "$d" >/dev/null || return 1
    done
}

# Every process in a cgroup tree of ours (the pods' processes).
pod_pids() { [ ! -d "$1" ] || find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null; }

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

cmd_status() {
    local d pid total=0 r st=0 shims pods left
    if [ ! -e "$K" ]; then
        left=$(leftovers)
        if [ -n "$left" ]; then
            echo "down ($K does not exist), but left behind:"
            echo "$left"
            return 1
        fi
        echo "down ($K does not exist), nothing left behind"
        return 3
    fi
    for d in $DAEMONS; do
        if pid=$(pid_of "$d"); then
            r=$(rss_kb "$pid")
            total=$((total + r))
            printf '%-24s running  pid %-7s rss %4d MiB\n' "$d" "$pid" $((r / 1024))
        elif [ -e "$K/run/$d.pid" ]; then
            printf '%-24s DEAD     (stale pid file)\n' "$d"
            st=1
        elif [ "$d" = kube-router ] && [ "$(cat "$K/netpol" 2>/dev/null)" = 0 ]; then
            printf '%-24s off      (up --no-netpol)\n' "$d"
        else
            printf '%-24s stopped\n' "$d"
            st=1
        fi
    done
    shims=0
    for pid in $(our_shims); do
        shims=$((shims + 1))
        total=$((total + $(rss_kb "$pid")))
    done
    printf '%-24s %d, and %d pod processes\n' "containerd shims" "$shims" \
        "$(pod_pids "$(cgroup_dirs | head -n 1)" | wc -l)"
    printf '%-24s %d MiB RSS (daemons and shims)\n' total $((total / 1024))
    if pid_of kube-apiserver >/dev/null && api_ready >/dev/null 2>&1; then
        pods=$(kc get pods -A --no-headers 2>/dev/null | wc -l)
        printf '%-24s %s, %d pods\n' "node $NODE" \
            "$(node_ready && echo Ready || echo 'not Ready')" "$pods"
    fi
    echo "kubeconfig               $KUBECONFIG_PATH"
    return $st
}

case "${1:-}" in
up)
    shift
    cmd_up "$@"
    ;;
down) cmd_down ;;
status) cmd_status ;;
toolchain)
    # what the build needs of the machine, without the 20-minute build: the
    # pinned toolchain, which must read Kubernetes' own go.mod (Debian 12's
    # Go 1.19 could not)
    fetch_go
    d=$(mktemp -d)
    trap 'rm -rf "$d"' EXIT
    mod=$(cd "$d" && go mod download -json "k8s.io/kubernetes@$KV" |
        /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["GoMod"])') ||
        die "go mod download k8s.io/kubernetes@$KV failed"
    (cd "$d" && cp "$mod" go.mod && go mod edit -json >/dev/null) ||
        die "$(go version) cannot read Kubernetes $KV's go.mod"
    say "$(go version) reads Kubernetes $KV's go.mod ($(awk '$1 == "go" { print "go " $2; exit }' "$mod"))"
    ;;
build)
    # --check: only say whether the binaries are cached (exit 0) or not (1)
    if [ "${2:-}" = --check ]; then
        [ -x "$K8S_BIN/kubectl" ] && [ -x "$KR_BIN/kube-router" ]
        exit
    fi
    need_root
    build_all 1
    ;;
kubectl)
    shift
    kc "$@"
    ;;
import)
    shift
    need_root
    for tar in "$@"; do ctrk images import "$tar" >/dev/null || die "importing $tar failed"; done
    ;;
*) die "usage: $0 up [--no-netpol] | down | status | build [--check] | toolchain | kubectl ARGS... | import TAR..." ;;
esac
