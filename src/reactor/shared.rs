//! What every reactor is given at start: the handles they share (`Shared`: channels, the snapshot cell, atomics)
//! and the plain settings read from the configuration once (`Settings`).

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use arc_swap::ArcSwap;
use crossbeam_channel::Sender;

use crate::clock::Clock;
use crate::state::Snapshot;
use crate::write_command::{ConnEvent, ReactorLink};

/// What all reactors share.
#[derive(Clone)]
pub(crate) struct Shared {
    pub cell: Arc<ArcSwap<Snapshot>>,
    pub writer: crate::write_command::WriterQueue,
    pub events: Sender<ConnEvent>,
    pub clock: Arc<dyn Clock>,
    /// Large registrations go to the decoder thread (`decoder.rs`): bodies of at least `settings.defer_bytes`.
    pub decoder: Sender<crate::decoder::Job>,
    /// `decoderQueueBytes`: body bytes waiting for the decoder thread, and big frames being read for it, so that
    /// reactors do not read every body into memory before the decoder gets to any (decision 0027).
    pub decoder_bytes: Arc<crate::limit::ByteBudget>,
    /// Open inbound connections over all reactors (counted at accept, so reactors cannot overshoot together).
    pub open_connections: Arc<AtomicUsize>,
    pub shutdown: Arc<AtomicBool>,
    /// Graceful shutdown has begun: stop accepting, finish what is in flight.
    pub draining: Arc<AtomicBool>,
    /// Every reactor's inbox, for dealing accepted connections round-robin.
    pub peers: Arc<Vec<ReactorLink>>,
    pub next_reactor: Arc<AtomicUsize>,
    /// `tls.server.mode` and the TLS configuration for inbound connections.
    pub tls: Arc<crate::tls::TlsSetup>,
    /// The accounts (`aclEnable=true`), swapped whole when the file changes.
    pub acl: Option<Arc<ArcSwap<crate::acl::Acl>>>,
    /// Refusals counted by reason.
    pub acl_metrics: Arc<crate::metrics::AclMetrics>,
    pub settings: Settings,
    /// `kvReplicationEnabled`: KV writes go to the KV Raft thread (`try_send`), which answers after the commit.
    pub kv_writes: Option<tokio::sync::mpsc::Sender<Box<crate::write_command::WriteCommand>>>,
}

/// What a reactor reads from the configuration, converted once at start (`Settings::from_config`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub started_ms: i64,
    pub max_frame: usize,
    /// Budget of each reactor's encoded-route cache.
    pub route_cache_bytes: usize,
    /// REGISTER_BROKER bodies this large go to the decoder thread (0 = never).
    pub defer_bytes: usize,
    pub idle_ms: i64,
    /// `maxConnections` (0 = unlimited): inbound connections beyond it are accepted and closed at once.
    pub max_connections: usize,
    /// `maxPendingWriteBytes`: replies queued for a peer past which we stop reading its requests (never = MAX).
    pub max_pending_write: usize,
    /// `slowReaderCloseSeconds` in ms (0 = never): a peer paused that long is closed.
    pub slow_reader_close_ms: i64,
    /// Answer GO_AWAY to 5.x clients while draining (`enableShutdownGracefully`).
    pub go_away: bool,
    /// `frameReadTimeoutSeconds` in ms (0 = no deadline) and `frameMinBytesPerSecond`: how long a frame may take to
    /// arrive ([`crate::limit::frame_deadline_ms`]).
    pub frame_timeout_ms: i64,
    pub frame_min_rate: u64,
}

impl Settings {
    pub(crate) fn from_config(config: &crate::config::Config, started_ms: i64) -> Settings {
        Settings {
            started_ms,
            max_frame: config.max_frame_length,
            route_cache_bytes: config.route_cache_bytes,
            defer_bytes: config.decoder_threshold_bytes,
            idle_ms: i64::from(config.server_channel_max_idle_time_seconds) * 1000,
            max_connections: config.max_connections,
            max_pending_write: match config.max_pending_write_bytes {
                0 => usize::MAX,
                n => n,
            },
            slow_reader_close_ms: config.slow_reader_close_seconds.max(0).saturating_mul(1000),
            go_away: config.enable_shutdown_gracefully,
            frame_timeout_ms: i64::try_from(config.frame_read_timeout_seconds.saturating_mul(1000)).unwrap_or(i64::MAX),
            frame_min_rate: config.frame_min_bytes_per_second,
        }
    }
}
