#!/usr/bin/env bash
# Fetch the runtime classpath of Apache RocketMQ components from Maven Central into a local cache, outside git.
#
#   tests/peers/fetch.sh VERSION [ARTIFACT...]
#
# ARTIFACT is one of namesrv (default), broker, tools, client, acl (4.x: `AclClientRPCHook` lives there; 5.x has it
# in rocketmq-client), proxy (5.x) and client-java (the gRPC client, `rocketmq-client-java`, versioned apart from the
# server: 5.0.x). All requested artifacts of one VERSION share one flat
# lib directory, like the official binary release:
#
#   ${NAMESRV_PEERS_CACHE:-$HOME/.cache/namesrv-peers}/<VERSION>/lib
#
# The script prints that directory on stdout (and nothing else there). A marker file per artifact makes later runs
# instant; asking for a new artifact re-resolves the union of everything already fetched, so the directory never
# mixes two versions of one dependency. Concurrent callers are serialised with flock. Fails (exit 1, message on
# stderr) when Java, Maven or the artifacts are unavailable.
set -euo pipefail

die() {
    echo "fetch.sh: error: $*" >&2
    exit 1
}

[[ $# -ge 1 && -n "$1" ]] || die "usage: $0 VERSION [namesrv|broker|tools|client|acl|proxy|client-java ...]"
version=$1
shift
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION must look like 5.5.0, got '$version'"

artifacts=("$@")
[[ ${#artifacts[@]} -gt 0 ]] || artifacts=(namesrv)
for a in "${artifacts[@]}"; do
    case $a in
    namesrv | broker | tools | client | acl | proxy | client-java) ;;
    *) die "unknown artifact '$a' (expected namesrv, broker, tools, client, acl, proxy or client-java)" ;;
    esac
done

cache=${NAMESRV_PEERS_CACHE:-$HOME/.cache/namesrv-peers}
dir=$cache/$version
lib=$dir/lib
mkdir -p "$dir" || die "cannot create $dir"

all_present() {
    local a
    for a in "${artifacts[@]}"; do
        [[ -f $dir/.fetched-$a && -f $lib/rocketmq-$a-$version.jar ]] || return 1
    done
}

# Fast path: no lock, no Maven.
if all_present; then
    echo "$lib"
    exit 0
fi

exec 9>"$dir/.lock"
flock 9
if all_present; then
    echo "$lib"
    exit 0
fi

command -v java >/dev/null 2>&1 || die "java is not on PATH (Java 17 is needed to run the peers)"
command -v mvn >/dev/null 2>&1 || die "mvn is not on PATH (Maven is needed to fetch RocketMQ $version)"

# The union of what was fetched before and what is asked now.
want=()
for a in namesrv broker tools client acl proxy client-java; do
    if [[ -f $dir/.fetched-$a ]] || printf '%s\n' "${artifacts[@]}" | grep -qx "$a"; then
        want+=("$a")
    fi
done

work=$(mktemp -d "$dir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
{
    echo '<project xmlns="http://maven.apache.org/POM/4.0.0">'
    echo '  <modelVersion>4.0.0</modelVersion>'
    echo '  <groupId>local.namesrv.peers</groupId><artifactId>rmq-runtime</artifactId><version>1</version><packaging>pom</packaging>'
    echo '  <dependencies>'
    for a in "${want[@]}"; do
        echo "    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-$a</artifactId><version>$version</version></dependency>"
    done
    echo '  </dependencies>'
    echo '</project>'
} >"$work/pom.xml"

echo "fetch.sh: resolving rocketmq-{$(
    IFS=,
    echo "${want[*]}"
)}:$version with Maven (first run may take minutes)" >&2
if ! mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$work/lib" -DincludeScope=runtime >"$work/mvn.log" 2>&1; then
    tail -n 40 "$work/mvn.log" >&2
    die "Maven could not fetch rocketmq-{${want[*]}}:$version (is the version on Maven Central? is the network up?)"
fi
for a in "${want[@]}"; do
    [[ -f $work/lib/rocketmq-$a-$version.jar ]] || die "Maven finished but rocketmq-$a-$version.jar is missing"
done

# Swap the new directory in; keep the pom and log for debugging.
rm -rf "$dir/lib.old"
[[ -d $lib ]] && mv "$lib" "$dir/lib.old"
mv "$work/lib" "$lib"
rm -rf "$dir/lib.old"
cp "$work/pom.xml" "$dir/pom.xml"
cp "$work/mvn.log" "$dir/mvn.log"
for a in "${want[@]}"; do
    : >"$dir/.fetched-$a"
done
echo "$lib"
