#!/usr/bin/env bash
# Route-query server CPU per request: old (tiny_http) vs new (hyper), each with httpAddress on and /metrics scraped every second,
# and the new one without httpAddress. Interleaved rounds. CPU from /proc/<pid>/stat (utime+stime, clock ticks).
P=/work/wt-rel/target/release/namesrv-perf
tick=$(getconf CLK_TCK)
for round in 1 2 3; do
  for side in old new new-nohttp; do
    bin=/tmp/mqnamesrv-old; [[ $side == new* ]] && bin=/work/wt-rel/target/release/mqnamesrv
    dir=$(mktemp -d); port=$((20000 + round * 10)); hport=$((port + 1))
    http="httpAddress=127.0.0.1:$hport"; [[ $side == new-nohttp ]] && http=""
    printf 'listenPort=%s\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\n%s\n' $port $dir $dir "$http" > $dir/ns.properties
    RUST_LOG=warn $bin -c $dir/ns.properties > $dir/log 2>&1 & pid=$!
    for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
    ( end=$((SECONDS + 15)); while (( SECONDS < end )); do curl -s -o /dev/null --max-time 2 http://127.0.0.1:$hport/metrics; sleep 1; done ) & scraper=$!
    c0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$($P query --addr 127.0.0.1:$port --duration 10 --warmup 0 2>&1 | tail -1)
    c1=$(awk '{print $14+$15}' /proc/$pid/stat)
    ok=$(echo "$out" | sed -n 's/.*(ok \([0-9]*\).*/\1/p')
    awk -v c=$((c1 - c0)) -v t=$tick -v n=$ok -v s=$side -v r=$round 'BEGIN { printf "round %d %-10s server CPU %.2f s, %d queries, %.3f µs/query\n", r, s, c/t, n, c/t*1e6/n }'
    kill $scraper 2>/dev/null; wait $scraper 2>/dev/null
    kill $pid; wait $pid 2>/dev/null; rm -rf $dir
  done
done
