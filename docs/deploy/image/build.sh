#!/usr/bin/env bash
# Builds the namesrv container image FROM scratch out of a binary that was already built, with no registry: the
# stripped binary, the shared libraries `ldd` lists for it, the CA roots, /etc/passwd and /etc/group with the
# fixed user rocketmq (10001:10001), and the image's namesrv.properties. The layout (paths, user, entrypoint,
# environment, volume, ports, stop signal) is the one docs/deploy/Containerfile gives on a Debian base, for those
# who can pull images; this script fails when the two Containerfiles disagree on any of it.
#
#   docs/deploy/image/build.sh [--binary PATH] [--tag NAME] [--version V] [--revision R]
#
# Defaults: target/release/mqnamesrv, namesrv:VERSION, the version in Cargo.toml, `git rev-parse --short=12 HEAD`.
# Needs podman (Debian's), strip (binutils), ldd (libc-bin) and a CA bundle at /etc/ssl/certs/ca-certificates.crt
# (ca-certificates). Prints the image ID on stdout and nothing else there.
set -euo pipefail

die() {
    echo "build.sh: error: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
binary=$root/target/release/mqnamesrv
tag=
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
revision=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
while [[ $# -gt 0 ]]; do
    case $1 in
    --binary) binary=${2:?}; shift 2 ;;
    --tag) tag=${2:?}; shift 2 ;;
    --version) version=${2:?}; shift 2 ;;
    --revision) revision=${2:?}; shift 2 ;;
    *) die "unknown argument '$1' (expected --binary, --tag, --version or --revision)" ;;
    esac
done
[[ -n $tag ]] || tag=namesrv:$version
for tool in podman strip ldd; do
    command -v "$tool" >/dev/null || die "$tool is not on PATH (apt-get install podman binutils libc-bin)"
done
[[ -x $binary ]] || die "no executable at $binary (cargo build --release --bin mqnamesrv, or pass --binary)"
ca=/etc/ssl/certs/ca-certificates.crt
[[ -f $ca ]] || die "no CA bundle at $ca (apt-get install ca-certificates)"

# The runtime half of both Containerfiles (the last stage) must be the same: what a user mounts, runs and probes.
runtime_lines() {
    awk '/^FROM / { n = 0; delete kept } /^(USER|ENV|VOLUME|EXPOSE|STOPSIGNAL|ENTRYPOINT|WORKDIR|LABEL|ARG) / { kept[n++] = $0 }
        END { for (i = 0; i < n; i++) print kept[i] }' "$1"
}
if ! diff <(runtime_lines "$here/Containerfile.scratch") <(runtime_lines "$here/../Containerfile") >&2; then
    die "docs/deploy/Containerfile and docs/deploy/image/Containerfile.scratch differ in their runtime layout (above)"
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
rootfs=$ctx/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/rocketmq" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$ctx/state/namesrv"
chmod 1777 "$rootfs/tmp"
chmod 0750 "$ctx/state" "$ctx/state/namesrv"
# Stripped: debug information and symbols are most of the file (a test build's binary is ~75 MB); a panic still
# prints its message, only a backtrace loses its names.
strip -o "$rootfs/usr/local/bin/mqnamesrv" "$binary"
chmod 0755 "$rootfs/usr/local/bin/mqnamesrv"
# Every library the dynamic linker loads, at the path it loads it from (the interpreter included).
ldd "$binary" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | while read -r lib; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done
[[ -n $(find "$rootfs" -name 'ld-linux*' -print -quit) ]] || die "ldd named no dynamic linker for $binary"
cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nrocketmq:x:10001:10001:rocketmq:/var/lib/rocketmq:/sbin/nologin\n' \
    >"$rootfs/etc/passwd"
printf 'root:x:0:\nrocketmq:x:10001:\n' >"$rootfs/etc/group"
cp "$here/namesrv.properties" "$rootfs/etc/rocketmq/namesrv.properties"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group" "$rootfs/etc/rocketmq/namesrv.properties"
cp "$here/Containerfile.scratch" "$ctx/Containerfile"

podman build --quiet --file "$ctx/Containerfile" --build-arg "NAMESRV_VERSION=$version" \
    --build-arg "NAMESRV_COMMIT=$revision" --tag "$tag" "$ctx"
