#!/usr/bin/env bash
# Route-query server CPU per request of two builds, interleaved rounds: what a change on the reactor's hot path
# (e.g. counting replies by response code, issue 47) costs. Each server is started alone without httpAddress,
# loaded by `namesrv-perf query --addr … --duration D --warmup 0` (16 connections × depth 8, 100 topics × 2
# brokers, closed loop); CPU is utime+stime from /proc/<pid>/stat over the run, divided by the queries answered.
#
#   perf/metrics-cost.sh BEFORE_BIN AFTER_BIN [ROUNDS] [DURATION_S]
#
# Needs `cargo build --release --bins -p namesrv -p namesrv-perf` (for target/release/namesrv-perf).
set -euo pipefail
before=$1 after=$2 rounds=${3:-3} duration=${4:-10}
P=${P:-$(dirname "$0")/../target/release/namesrv-perf}
tick=$(getconf CLK_TCK)
for round in $(seq "$rounds"); do
  for side in before after; do
    bin=$before; [[ $side == after ]] && bin=$after
    dir=$(mktemp -d); port=$((21000 + round * 10))
    printf 'listenPort=%s\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n' \
      $port "$dir" "$dir" > "$dir/ns.properties"
    RUST_LOG=warn "$bin" -c "$dir/ns.properties" > "$dir/log" 2>&1 & pid=$!
    for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
    c0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$("$P" query --addr 127.0.0.1:$port --duration "$duration" --warmup 0 2>&1 | tail -1)
    c1=$(awk '{print $14+$15}' /proc/$pid/stat)
    ok=$(echo "$out" | sed -n 's/.*(ok \([0-9]*\).*/\1/p')
    awk -v c=$((c1 - c0)) -v t="$tick" -v n="$ok" -v s=$side -v r="$round" \
      'BEGIN { printf "round %d %-6s server CPU %.2f s, %d queries, %.3f µs/query\n", r, s, c/t, n, c/t*1e6/n }'
    kill $pid; wait $pid 2>/dev/null || true; rm -rf "$dir"
  done
done
