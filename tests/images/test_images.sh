#!/usr/bin/env bash
# shellcheck disable=SC2016 # bash -c '...' _ ARGS: the inner script expands them
# The images `make images` builds (mk/images.sh), run from the image itself:
# each layout is checked blob by blob (sha256 of every blob is its name),
# unpacked to a root filesystem (umoci raw unpack), and its entrypoint run
# under chroot as the user the image config names, never root:
#   - the config's User is non-root, the entrypoint prints the chart's
#     appVersion for --version and its usage for --help;
#   - the translator, long-running (in its own empty network namespace, so
#     it touches nothing of this machine), really runs with that uid and gid;
#   - the agent, as that user, refuses to program the node (permission
#     denied), and as root with only the chart's capabilities (NET_ADMIN,
#     BPF, PERFMON, SYS_ADMIN) runs and serves /healthz, in its own network
#     namespace;
#   - the agent image's init step (galactic-cni-install, as the DaemonSet's
#     init container runs it) installs the plugin atomically: run twice over
#     a running copy of the binary, no ETXTBSY, the running copy untouched,
#     every name present, executable and answering CNI VERSION, no temporary
#     file left; while a plain cp over the running copy fails with ETXTBSY
#     (what the chart's earlier `cp` init step would have hit on upgrade);
#   - galactic-cni, which runs on the node and not in the image, needs no
#     shared library beyond glibc's (its DT_NEEDED) and answers VERSION from
#     a root holding only the loader and glibc's libraries.
# Needs root (chroot, unshare). Prints 'images: N passed, N failed'.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
ver=$(sed -n 's/^#define GALACTIC_VERSION "\(.*\)"$/\1/p' common/version.h)
app=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/galactic/Chart.yaml)
tmp=$(mktemp -d /tmp/galactic-images.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
P=0 F=0
ok() { echo "ok   $*"; P=$((P+1)); }
bad() { echo "FAIL $*"; F=$((F+1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

[ "$(id -u)" = 0 ] || { echo "images: needs root (chroot)"; echo "images: 0 passed, 1 failed"; exit 1; }
check "chart appVersion ($app) is the daemons' version ($ver)" [ "$app" = "$ver" ]

# glibc's own libraries: what a node has without any package of ours
GLIBC_SONAMES='libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2'
# only_glibc "SONAME...": every name given is one of glibc's (and there is one)
only_glibc() {
  [ -n "$1" ] || return 1
  for l in $1; do [[ " $GLIBC_SONAMES " == *" $l "* ]] || return 1; done
}

blob() { echo "$1/blobs/sha256/${2#sha256:}"; }

# uid_of PID: the real, effective uid and gid of a running process
ids_of() { awk '/^Uid:/{u=$2" "$3} /^Gid:/{g=$2" "$3} END{print u" "g}' "/proc/$1/status"; }

for name in galactic-agent galactic-translator; do
  L=build/images/$name
  if [ ! -f "$L/index.json" ]; then bad "$name: $L not built (make images)"; continue; fi
  # every blob is what its name says
  nb=0 good=0
  for f in "$L"/blobs/sha256/*; do
    nb=$((nb+1)); [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$(basename "$f")" ] && good=$((good+1))
  done
  check "$name: all $nb blobs match their digests" [ "$nb" -ge 3 ] && [ "$good" = "$nb" ]
  ref=$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$L/index.json")
  check "$name: tagged $ver" [ "$ref" = "$ver" ]
  man=$(blob "$L" "$(jq -r '.manifests[0].digest' "$L/index.json")")
  cfg=$(blob "$L" "$(jq -r '.config.digest' "$man")")
  user=$(jq -r '.config.User // ""' "$cfg")
  ep=$(jq -r '.config.Entrypoint[0] // ""' "$cfg")
  uid=${user%%:*} gid=${user#*:}
  check "$name: config user '$user' is numeric and not root" \
    bash -c '[[ "$1" =~ ^[0-9]+:[0-9]+$ ]] && [ "${1%%:*}" != 0 ] && [ "${1#*:}" != 0 ]' _ "$user"
  check "$name: entrypoint is $name" [ "$ep" = "/usr/local/bin/$name" ]

  R=$tmp/$name
  if ! umoci raw unpack --image "$L:$ver" "$R" >"$tmp/unpack.log" 2>&1; then
    bad "$name: umoci raw unpack: $(tail -1 "$tmp/unpack.log")"; continue
  fi
  check "$name: the image's passwd names uid $uid" grep -q "^galactic:x:$uid:$gid:" "$R/etc/passwd"
  out=$(chroot --userspec="$uid:$gid" "$R" "$ep" --version 2>&1); rc=$?
  check "$name --version as $user: '$out' (exit $rc)" [ "$rc" = 0 ] && [ "$out" = "$name $ver" ]
  out=$(chroot --userspec="$uid:$gid" "$R" "$ep" --help 2>&1); rc=$?
  check "$name --help as $user (exit $rc)" [ "$rc" = 0 ] && [[ "$out" == *"usage: $name"* ]]
  # only the image's own files: no library missing from the layer
  check "$name: links no library outside the image" \
    bash -c '! chroot "$1" /lib64/ld-linux-x86-64.so.2 --list "$2" 2>&1 | grep -q "not found"' _ "$R" "$ep"

  mkdir -p "$R/tmp/state" "$R/proc"; chown "$uid:$gid" "$R/tmp/state"
  if [ "$name" = galactic-translator ]; then
    # long-running as the image's user, in an empty network namespace
    printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n' > "$R/tmp/kubeconfig"
    unshare --net -- chroot --userspec="$uid:$gid" "$R" "$ep" --kubeconfig /tmp/kubeconfig \
      --namespace galactic-system --metrics-addr 127.0.0.1:0 >"$tmp/$name.log" 2>&1 &
    pid=$!; pids+=("$pid")
    ids=
    for _ in $(seq 50); do
      # unshare execs chroot, which execs the entrypoint: same pid, wait for the last exec
      if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$R$ep" ]; then ids=$(ids_of "$pid"); break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    sleep 0.5
    check "$name runs as uid/gid $uid/$gid (real, effective: '$ids')" [ "$ids" = "$uid $uid $gid $gid" ]
    check "$name: still running after 0.5 s as $user ($(tail -1 "$tmp/$name.log"))" kill -0 "$pid"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  else
    # The agent programs the node's kernel: as the image's user it refuses
    # with the reason; the chart runs it as root with only NET_ADMIN, BPF,
    # PERFMON and SYS_ADMIN and a read-only root filesystem, which is enough
    # (here in an empty network namespace with its own /proc, like a pod's;
    # chroot needs SYS_CHROOT).
    agent() { # STATE-DIR, then setpriv/chroot args..., then -- agent args
      local st=$1 pre=(); shift; while [ "$1" != -- ]; do pre+=("$1"); shift; done; shift
      exec unshare --net --mount --propagation private -- bash -c '[ -z "${RO:-}" ] || { mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && mount -t tmpfs -o mode=0700 tmpfs "$1/tmp/rstate"; } && ip link set lo up && mount -t proc proc "$1/proc" && shift && exec "$@"' _ \
        "$R" "${pre[@]}" "$ep" --state-dir "$st" --backend kernel --cni-socket "$st/cni.sock" \
        --interval 1 "$@"
    }
    agent /tmp/state chroot --userspec="$uid:$gid" "$R" -- >"$tmp/$name.user.log" 2>&1 &
    pid=$!; pids+=("$pid")
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill "$pid" 2>/dev/null
    wait "$pid"; rc=$?; out=$(cat "$tmp/$name.user.log")
    check "$name as $user refuses to program the node (exit $rc): $(tail -1 <<<"$out")" \
      bash -c '[ "$1" != 0 ] && [ "$1" != 124 ] && [[ "$2" == *"Permission denied"* ]]' _ "$rc" "$out"
    mkdir -m 0700 "$R/tmp/rstate"
    # as the chart runs it: a read-only root, the state directory writable
    RO=1 agent /tmp/rstate setpriv --inh-caps=-all --bounding-set=-all,+net_admin,+bpf,+perfmon,+sys_admin,+sys_chroot chroot "$R" -- \
      --metrics-addr 127.0.0.1:9471 >"$tmp/$name.log" 2>&1 &
    pid=$!; pids+=("$pid")
    code=
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$R$ep" ]; then
        code=$(nsenter --net="/proc/$pid/ns/net" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9471/healthz)
        [ "$code" = 200 ] && break
      fi
      sleep 0.1
    done
    caps=$(awk '/^CapEff:/{print $2}' "/proc/$pid/status" 2>/dev/null)
    check "$name as root with the chart's capabilities serves /healthz ($code; CapEff $caps): $(tail -1 "$tmp/$name.log")" \
      [ "$code" = 200 ]
    # CapEff: exactly net_admin(12), sys_chroot(18), sys_admin(21), perfmon(38), bpf(39)
    check "$name: effective capabilities are the chart's set (+sys_chroot) ($caps)" \
      [ "$caps" = "$(printf '%016x' $(( (1<<12) | (1<<18) | (1<<21) | (1<<38) | (1<<39) )))" ]
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    # the same set opens the bpf backend (no fallback; read-only root): maps
    # and pins on the namespace's own bpffs, the kernel's BTF from a read-only sysfs (what a
    # pod sees; the chart mounts the host's /sys/fs/bpf over it)
    rm -rf "$R/tmp/rstate"; mkdir -m 0700 "$R/tmp/rstate"; mkdir -p "$R/sys"
    RO=1 unshare --net --mount --propagation private -- bash -c '
      [ -z "${RO:-}" ] || { mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && mount -t tmpfs -o mode=0700 tmpfs "$1/tmp/rstate"; } && ip link set lo up && mount -t proc proc "$1/proc" && mount -t sysfs -o ro sysfs "$1/sys" &&
      mount -t bpf bpf "$1/sys/fs/bpf" && shift && exec "$@"' _ "$R" \
      setpriv --inh-caps=-all --bounding-set=-all,+net_admin,+bpf,+perfmon,+sys_admin,+sys_chroot chroot "$R" \
      "$ep" --state-dir /tmp/rstate --backend bpf --cni-socket /tmp/rstate/cni.sock --interval 1 \
      --metrics-addr 127.0.0.1:9471 >"$tmp/$name.bpf.log" 2>&1 &
    pid=$!; pids+=("$pid")
    code=
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$R$ep" ]; then
        code=$(nsenter --net="/proc/$pid/ns/net" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9471/healthz)
        [ "$code" = 200 ] && break
      fi
      sleep 0.1
    done
    check "$name --backend bpf with the chart's capabilities serves /healthz ($code): $(grep -o 'backend bpf: [^"]*' "$tmp/$name.bpf.log" | head -1)" \
      bash -c '[ "$1" = 200 ] && grep -q "backend bpf: " "$2" && ! grep -q "refused" "$2"' _ "$code" "$tmp/$name.bpf.log"
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  fi
done

# The init step, as the DaemonSet runs it: root in the agent image, the
# node's CNI bin directory mounted at /host/opt/cni/bin.
R=$tmp/galactic-agent
if [ -x "$R/usr/local/bin/galactic-cni-install" ]; then
  D=$R/host/opt/cni/bin
  mkdir -p "$D"
  names=(galactic-cni galactic-veth galactic-bgp galactic-tap)
  install_step() { chroot "$R" /usr/local/bin/galactic-cni-install --from /usr/local/bin/galactic-cni --to /host/opt/cni/bin >"$tmp/install.log" 2>&1; }
  check "init step on an empty directory" install_step
  # a running copy: the plugin blocked reading its stdin (a runtime's ADD in flight)
  mkfifo "$tmp/stdin"
  CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS=/proc/1/ns/net CNI_IFNAME=eth0 CNI_PATH=/host/opt/cni/bin \
    chroot "$R" /host/opt/cni/bin/galactic-veth <"$tmp/stdin" >/dev/null 2>&1 &
  run=$!; pids+=("$run")
  exec 7>"$tmp/stdin"
  for _ in $(seq 50); do [ "$(readlink "/proc/$run/exe" 2>/dev/null)" = "$D/galactic-veth" ] && break; sleep 0.1; done
  check "a copy of galactic-veth is running" [ "$(readlink "/proc/$run/exe")" = "$D/galactic-veth" ]
  old=$(stat -c %i "$D/galactic-veth")
  # the naive step fails on it: the file is busy
  out=$(cp "$R/usr/local/bin/galactic-cni" "$D/galactic-veth" 2>&1)
  check "cp over the running copy fails with ETXTBSY ('$out')" bash -c '[[ "$1" == *"Text file busy"* ]]' _ "$out"
  for n in 1 2; do
    install_step; rc=$?
    check "init step run $n over the running copy: exit $rc, no ETXTBSY" \
      bash -c '[ "$1" = 0 ] && ! grep -q "busy" "$2"' _ "$rc" "$tmp/install.log"
  done
  check "the running copy kept its file (exe now '$(readlink "/proc/$run/exe")')" \
    bash -c '[[ "$(readlink "/proc/$1/exe")" == *"(deleted)" ]] && kill -0 "$1"' _ "$run"
  check "galactic-veth is a new file (inode $old -> $(stat -c %i "$D/galactic-veth"))" \
    bash -c '[ -n "$1" ] && [ "$(stat -c %i "$2")" != "$1" ]' _ "$old" "$D/galactic-veth"
  for n in "${names[@]}"; do
    v=$(CNI_COMMAND=VERSION chroot "$R" "/host/opt/cni/bin/$n" </dev/null 2>&1)
    check "$n: mode $(stat -c %a "$D/$n"), same bytes as the image's, answers VERSION" \
      bash -c '[ "$(stat -c %a "$1")" = 755 ] && cmp -s "$1" "$2" && [ "$(jq -r ".supportedVersions|index(\"1.0.0\")!=null" <<<"$3")" = true ]' \
      _ "$D/$n" "$R/usr/local/bin/galactic-cni" "$v"
  done
  # The plugin runs on the node, not in the image: it may need nothing a
  # node's glibc does not bring (libjansson is linked in, mk/rules.mk).
  plug=$R/usr/local/bin/galactic-cni
  needed=$(readelf -d "$plug" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  check "galactic-cni needs only glibc (DT_NEEDED: ${needed:-none read})" only_glibc "$needed"
  # ... and runs from a root holding only the loader and glibc's libraries
  N=$tmp/node
  mkdir -p "$N/opt/cni/bin"
  cp "$plug" "$N/opt/cni/bin/galactic-cni"
  interp=$(readelf -l "$plug" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
  for f in "$interp" $(cd "$R" && for l in $GLIBC_SONAMES; do find lib* usr/lib* -maxdepth 2 -name "$l"; done 2>/dev/null); do
    f=${f#/}; mkdir -p "$N/$(dirname "$f")"; cp -L "$R/$f" "$N/$f"
  done
  v=$(CNI_COMMAND=VERSION chroot "$N" /opt/cni/bin/galactic-cni </dev/null 2>&1)
  check "galactic-cni answers VERSION on a node with only glibc ($(find "$N" -name '*.so*' | wc -l) libraries): ${v%%$'\n'*}" \
    bash -c '[ "$(jq -r ".supportedVersions|index(\"1.0.0\")!=null" <<<"$1" 2>/dev/null)" = true ]' _ "$v"
  left=$(find "$D" -name '.*' -type f | wc -l)
  check "no temporary file left ($left)" [ "$left" = 0 ]
  exec 7>&-
  kill "$run" 2>/dev/null; wait "$run" 2>/dev/null
  # a directory that cannot be written: a clear error and a non-zero exit
  # (a read-only bind mount in a private mount namespace: nothing outlives it)
  mkdir -p "$R/ro"
  out=$(unshare --mount --propagation private -- bash -c \
    'mount --bind -o ro "$1/ro" "$1/ro" && exec chroot "$1" /usr/local/bin/galactic-cni-install --from /usr/local/bin/galactic-cni --to /ro' \
    _ "$R" 2>&1); rc=$?
  check "init step into a read-only directory fails (exit $rc): ${out%%$'\n'*}" \
    bash -c '[ "$1" != 0 ] && [[ "$2" == *"Read-only file system"* ]]' _ "$rc" "$out"
else
  bad "galactic-agent image has no galactic-cni-install"
fi

echo "images: $P passed, $F failed"
[ "$F" = 0 ]
