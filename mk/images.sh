#!/usr/bin/env bash
# Builds one OCI image of a daemon from this repo's release binaries, with no
# registry pull and no base image (docs/install.md "Images"):
#   mk/images.sh agent       build/images/galactic-agent      (+ galactic-cni, galactic-cni-install)
#   mk/images.sh translator  build/images/galactic-translator
# Each is an OCI image layout (directory, tag = the version) and the same
# layout as a tar (build/images/NAME-VERSION.oci.tar: `podman load`,
# `ctr images import`, `skopeo copy oci-archive:...` take it).
#
# The root filesystem holds the binaries, every shared library they link
# (ldd, copied from this machine's Debian packages), the dynamic loader, and a
# passwd/group naming the image's user: galactic, 65532:65532, which the image
# config runs as. umoci (Debian's package) turns the directory into a layer
# and writes the config: it needs no daemon, no storage driver and no
# registry, so it also works in CI's container (buildah/podman need a storage
# driver and, for `from scratch`, more of the host than CI offers).
# Timestamps are pinned (SOURCE_DATE_EPOCH, else the last commit's time), so
# the same binaries give the same config.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: mk/images.sh agent|translator}
ver=$(sed -n 's/^#define GALACTIC_VERSION "\(.*\)"$/\1/p' common/version.h)
bin=build/rel/bin
case $which in
  agent) name=galactic-agent; bins=(galactic-agent galactic-cni galactic-cni-install) ;;
  translator) name=galactic-translator; bins=(galactic-translator) ;;
  *) echo "images: unknown image '$which' (agent, translator)" >&2; exit 2 ;;
esac
command -v umoci >/dev/null || { echo "images: umoci is missing (make deps installs it)" >&2; exit 1; }
for b in "${bins[@]}"; do [ -x "$bin/$b" ] || { echo "images: $bin/$b not built (make all)" >&2; exit 1; }; done

out=build/images
work=$out/.work-$name
layout=$out/$name
rm -rf "$work" "$layout.tmp"
mkdir -p "$work/rootfs"/{usr/local/bin,etc,tmp} "$out"
chmod 1777 "$work/rootfs/tmp"
root=$work/rootfs

for b in "${bins[@]}"; do install -m 0755 "$bin/$b" "$root/usr/local/bin/$b"; done
# every library the binaries link, at the path the loader finds it
for b in "${bins[@]}"; do
  ldd "$bin/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
done | sort -u | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/:/sbin/nologin
galactic:x:65532:65532:galactic:/:/sbin/nologin
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
galactic:x:65532:
EOF
echo 'hosts: files dns' > "$root/etc/nsswitch.conf"

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
find "$root" -exec touch -h -d "@$epoch" {} +
rootless=(); [ "$(id -u)" = 0 ] || rootless=(--rootless)

L=$layout.tmp
umoci init --layout "$L"
umoci new --image "$L:$ver"
umoci insert "${rootless[@]}" --image "$L:$ver" --history.created "$created" \
  --history.created_by "mk/images.sh $which" "$root" /
umoci config --image "$L:$ver" --created "$created" --history.created "$created" \
  --author galactic --os linux --architecture amd64 \
  --config.user 65532:65532 --config.workingdir / \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.entrypoint "/usr/local/bin/${bins[0]}" \
  --config.label "org.opencontainers.image.title=$name" \
  --config.label "org.opencontainers.image.version=$ver" \
  --config.label "org.opencontainers.image.source=charts/galactic"
umoci gc --layout "$L"
rm -rf "$layout" "$work"
mv "$L" "$layout"
tar -C "$layout" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -cf "$out/$name-$ver.oci.tar.tmp" .
mv "$out/$name-$ver.oci.tar.tmp" "$out/$name-$ver.oci.tar"
echo "images: $name:$ver -> $layout ($(du -sh "$layout" | cut -f1)), $out/$name-$ver.oci.tar"
