#!/usr/bin/env bash
# Builds the Debian package of namesrv with dpkg-deb out of a binary built beforehand (no second build, no
# cargo-deb): /usr/bin/mqnamesrv, the systemd unit of docs/systemd (with that path), the conffile
# /etc/rocketmq/namesrv.properties, and the maintainer scripts next to this file (the user rocketmq, /var/lib/rocketmq;
# all of it gone on purge).
#
#   docs/deploy/debian/build.sh [--binary PATH] [--out DIR] [--version V]
#
# Defaults: target/release/mqnamesrv, target/debian, the version in Cargo.toml. Prints the .deb's path on stdout.
set -euo pipefail

die() {
    echo "build.sh: error: $*" >&2
    exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
binary=$root/target/release/mqnamesrv
out=$root/target/debian
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)
while [[ $# -gt 0 ]]; do
    case $1 in
    --binary) binary=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --version) version=${2:?}; shift 2 ;;
    *) die "unknown argument '$1' (expected --binary, --out or --version)" ;;
    esac
done
for tool in dpkg-deb dpkg-shlibdeps strip; do
    command -v "$tool" >/dev/null || die "$tool is not on PATH (apt-get install dpkg-dev binutils)"
done
[[ -x $binary ]] || die "no executable at $binary (cargo build --release --bin mqnamesrv, or pass --binary)"
arch=$(dpkg --print-architecture)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/pkg
install -d "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/etc/rocketmq" "$pkg/usr/share/doc/namesrv"
strip -o "$pkg/usr/bin/mqnamesrv" "$binary"
chmod 0755 "$pkg/usr/bin/mqnamesrv"
# Debian's path for a packaged binary; the unit of docs/systemd is written for a hand install under /usr/local.
sed 's|/usr/local/bin/mqnamesrv|/usr/bin/mqnamesrv|g' "$root/docs/systemd/mqnamesrv.service" \
    >"$pkg/lib/systemd/system/mqnamesrv.service"
grep -q '^ExecStart=/usr/bin/mqnamesrv ' "$pkg/lib/systemd/system/mqnamesrv.service" \
    || die "docs/systemd/mqnamesrv.service has no ExecStart=/usr/local/bin/mqnamesrv line to point at /usr/bin"
install -m 0644 "$here/namesrv.properties" "$pkg/etc/rocketmq/namesrv.properties"
install -m 0755 "$here/postinst" "$here/prerm" "$here/postrm" "$pkg/DEBIAN/"
echo /etc/rocketmq/namesrv.properties >"$pkg/DEBIAN/conffiles"
printf 'Files: *\nCopyright: the namesrv authors\nLicense: Apache-2.0\n' >"$pkg/usr/share/doc/namesrv/copyright"

# The library versions the binary needs, as dpkg-shlibdeps reads them from the installed packages.
mkdir -p "$stage/debian"
printf 'Source: namesrv\n\nPackage: namesrv\nArchitecture: any\n' >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O "pkg/usr/bin/mqnamesrv" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[[ -n $depends ]] || die "dpkg-shlibdeps found no dependencies for $binary"
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: namesrv
Version: $version
Architecture: $arch
Maintainer: namesrv maintainers <namesrv@localhost>
Installed-Size: $size
Depends: $depends, passwd
Section: net
Priority: optional
Homepage: https://rocketmq.apache.org/
Description: RocketMQ name server (Rust drop-in for the Apache RocketMQ NameServer)
 Serves topic routes to RocketMQ brokers and clients on port 9876, speaking the
 Java name server's protocol, with its configuration keys.
CONTROL

mkdir -p "$out"
deb=$out/namesrv_${version}_${arch}.deb
# gzip: xz takes most of a minute on a busy 2-core machine for a few percent less.
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$deb" >/dev/null
echo "$deb"
