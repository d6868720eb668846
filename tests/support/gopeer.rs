//! The Go client peer (`tests/peers/go`, built on `github.com/apache/rocketmq-client-go/v2`).
