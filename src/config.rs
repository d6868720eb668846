//! Configuration with the Java key names (`NamesrvConfig` + `NettyServerConfig`, §7 of the reference) and our own
//! keys, all read from one Java-style properties file (`-c`). One table below declares every key once: its field,
//! type, default and Java name; parsing, printing (`-p`, GET_NAMESRV_CONFIG) and updating all come from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::protocol::props;

mod controller_keys;
pub(crate) use controller_keys::CONTROLLER_KEYS;
mod bounds;
mod fleet_peers;
pub(crate) use fleet_peers::entries as fleet_peer_entries;
pub use fleet_peers::PeerIps;
mod secrets;
pub(crate) use secrets::{is_secret_key, Class};
mod update;

/// A value that a properties string converts into, with Java's `MixAll.properties2Object` rules.
pub(crate) trait ConfigValue: Sized {
    fn parse_value(s: &str) -> Option<Self>;
    fn show(&self) -> String;
}

impl ConfigValue for String {
    fn parse_value(s: &str) -> Option<Self> {
        Some(s.trim().to_string())
    }
    fn show(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for bool {
    /// `Boolean.parseBoolean`: "true" in any case is true, anything else false.
    fn parse_value(s: &str) -> Option<Self> {
        Some(s.trim().eq_ignore_ascii_case("true"))
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

macro_rules! numeric_value {
    ($($t:ty),*) => {$(
        impl ConfigValue for $t {
            fn parse_value(s: &str) -> Option<Self> {
                s.trim().parse().ok()
            }
            fn show(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
numeric_value!(i32, i64, u16, u64, usize);

impl ConfigValue for crate::allow_list::AllowList {
    /// A bad entry makes the value unparsable; `Config::from_file` turns that into a start-up error.
    fn parse_value(s: &str) -> Option<Self> {
        Self::parse(s).ok()
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

impl<T: ConfigValue> ConfigValue for Option<T> {
    fn parse_value(s: &str) -> Option<Self> {
        T::parse_value(s).map(Some)
    }
    fn show(&self) -> String {
        self.as_ref().map(T::show).unwrap_or_default()
    }
}

/// A key that is not in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownKey;

/// Which group a key belongs to: Java's two config classes, or ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOwner {
    Namesrv,
    Netty,
    Ours,
}

/// Whether UPDATE_NAMESRV_CONFIG (318) may change a key while the server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// Behaviour a running name server may change (Java's NamesrvConfig switches, and Java's thread-pool sizes,
    /// which mean nothing here).
    Runtime,
    /// Set at start only: files and directories, listeners, transport security, limits and every other protection.
    /// 318 refuses them (docs/security.md).
    Start,
}

macro_rules! config_table {
    ($( $owner:ident $update:ident $class:ident $field:ident : $ty:ty = $default:expr, $name:literal; )*) => {
        /// The effective configuration. Field names are the Java keys in snake case.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config {
            $( pub $field: $ty, )*
            /// Keys from the `-c` file that are not ours: kept and shown like Java does.
            pub extra: BTreeMap<String, String>,
            /// Our own keys as the `-c` file wrote them: written back when 318 rewrites the file, so that no
            /// setting of ours (allow-list, limits, TLS, ACL) is lost by an update.
            pub file_ours: BTreeMap<String, String>,
            /// The resolved host names of `namesrvPeers` (`fleet_peers.rs`), shared by every clone.
            pub fleet_peer_ips: PeerIps,
        }

        impl Default for Config {
            fn default() -> Self {
                Config {
                    $( $field: $default, )*
                    extra: BTreeMap::new(),
                    file_ours: BTreeMap::new(),
                    fleet_peer_ips: PeerIps::default(),
                }
            }
        }

        /// Every known key with its owner and update policy, in table order.
        pub const KEYS: &[(&str, KeyOwner, Update)] = &[ $( ($name, KeyOwner::$owner, Update::$update), )* ];

        /// Every known key with its classification, in table order (`secrets.rs`).
        pub const CLASSES: &[(&str, Class)] = &[ $( ($name, Class::$class), )* ];

        impl Config {
            /// Sets a known key. `Err` for an unknown key; an unparsable value is `Ok(false)` (ignored, as Java).
            pub fn set(&mut self, key: &str, value: &str) -> Result<bool, UnknownKey> {
                match key {
                    $( $name => Ok(match <$ty as ConfigValue>::parse_value(value) {
                        Some(v) => { self.$field = v; true }
                        None => false,
                    }), )*
                    _ => Err(UnknownKey),
                }
            }

            /// Whether a known key is a boolean, read as Java's `Boolean.parseBoolean` does (anything but "true"
            /// is false): the admin CLI refuses other values for it rather than turn a switch off by a typo.
            pub fn is_boolean(key: &str) -> bool {
                match key {
                    $( $name => stringify!($ty) == "bool", )*
                    _ => false,
                }
            }

            /// The type of a known key as written in the table (`"i32"`, `"bool"`, …): the bounds test finds every
            /// numeric key 318 may set with it.
            #[cfg(test)]
            pub(crate) fn type_name(key: &str) -> Option<&'static str> {
                match key {
                    $( $name => Some(stringify!($ty)), )*
                    _ => None,
                }
            }

            /// The current value of a known key as text; `None` for unknown keys and unset optional values.
            pub fn get(&self, key: &str) -> Option<String> {
                match key {
                    $( $name => {
                        let v = &self.$field;
                        let shown = ConfigValue::show(v);
                        if is_unset(&shown, stringify!($ty)) { None } else { Some(shown) }
                    } )*
                    _ => None,
                }
            }
        }
    };
}

/// The update policy of a known key; `None` for keys not in the table.
pub(crate) fn update_policy(key: &str) -> Option<Update> {
    KEYS.iter().find(|(name, _, _)| *name == key).map(|(_, _, update)| *update)
}

/// An `Option` field that is `None` prints as nothing; Java omits null fields.
fn is_unset(shown: &str, ty: &str) -> bool {
    shown.is_empty() && ty.starts_with("Option")
}

fn home_path(rest: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_else(|_| ".".into());
    Path::new(&home).join(rest).to_string_lossy().into_owned()
}

config_table! {
    // NamesrvConfig
    Namesrv Start Public rocketmq_home: Option<String> = std::env::var("ROCKETMQ_HOME").ok(), "rocketmqHome";
    Namesrv Start Public kv_config_path: String = home_path("namesrv/kvConfig.json"), "kvConfigPath";
    Namesrv Start Public config_store_path: String = home_path("namesrv/namesrv.properties"), "configStorePath";
    Namesrv Runtime Public product_env_name: String = "center".into(), "productEnvName";
    Namesrv Runtime Public cluster_test: bool = false, "clusterTest";
    Namesrv Runtime Public order_message_enable: bool = false, "orderMessageEnable";
    Namesrv Runtime Public return_order_topic_config_to_broker: bool = true, "returnOrderTopicConfigToBroker";
    Namesrv Runtime Public client_request_thread_pool_nums: i32 = 8, "clientRequestThreadPoolNums";
    Namesrv Runtime Public default_thread_pool_nums: i32 = 16, "defaultThreadPoolNums";
    Namesrv Runtime Public client_request_thread_pool_queue_capacity: i32 = 50000, "clientRequestThreadPoolQueueCapacity";
    Namesrv Runtime Public default_thread_pool_queue_capacity: i32 = 10000, "defaultThreadPoolQueueCapacity";
    Namesrv Start Public scan_not_active_broker_interval: i64 = 5000, "scanNotActiveBrokerInterval";
    Namesrv Runtime Public un_register_broker_queue_capacity: i32 = 3000, "unRegisterBrokerQueueCapacity";
    Namesrv Runtime Public support_acting_master: bool = false, "supportActingMaster";
    Namesrv Runtime Public enable_all_topic_list: bool = true, "enableAllTopicList";
    Namesrv Runtime Public enable_topic_list: bool = true, "enableTopicList";
    Namesrv Runtime Public notify_min_broker_id_changed: bool = false, "notifyMinBrokerIdChanged";
    Namesrv Start Public enable_controller_in_namesrv: bool = false, "enableControllerInNamesrv";
    Namesrv Runtime Public need_wait_for_service: bool = false, "needWaitForService";
    Namesrv Runtime Public wait_seconds_for_service: i32 = 45, "waitSecondsForService";
    Namesrv Runtime Public delete_topic_with_broker_registration: bool = false, "deleteTopicWithBrokerRegistration";
    Namesrv Start Public config_black_list: String = "configBlackList;configStorePath;kvConfigPath".into(), "configBlackList";
    // NettyServerConfig
    Netty Start Public bind_address: String = "0.0.0.0".into(), "bindAddress";
    Netty Start Public listen_port: u16 = 9876, "listenPort";
    Netty Start Public server_worker_threads: i32 = 8, "serverWorkerThreads";
    Netty Start Public server_callback_executor_threads: i32 = 0, "serverCallbackExecutorThreads";
    Netty Start Public server_selector_threads: i32 = 3, "serverSelectorThreads";
    Netty Start Public server_oneway_semaphore_value: i32 = 256, "serverOnewaySemaphoreValue";
    Netty Start Public server_async_semaphore_value: i32 = 64, "serverAsyncSemaphoreValue";
    Netty Start Public server_channel_max_idle_time_seconds: i32 = 120, "serverChannelMaxIdleTimeSeconds";
    Netty Start Public server_socket_snd_buf_size: i32 = 0, "serverSocketSndBufSize";
    Netty Start Public server_socket_rcv_buf_size: i32 = 0, "serverSocketRcvBufSize";
    Netty Start Public write_buffer_high_water_mark: i32 = 0, "writeBufferHighWaterMark";
    Netty Start Public write_buffer_low_water_mark: i32 = 0, "writeBufferLowWaterMark";
    Netty Start Public server_socket_backlog: i32 = 1024, "serverSocketBacklog";
    Netty Start Public server_netty_worker_group_enable: bool = true, "serverNettyWorkerGroupEnable";
    Netty Start Public server_pooled_byte_buf_allocator_enable: bool = true, "serverPooledByteBufAllocatorEnable";
    Netty Runtime Public enable_shutdown_gracefully: bool = false, "enableShutdownGracefully";
    Netty Runtime Public shutdown_wait_time_seconds: i32 = 30, "shutdownWaitTimeSeconds";
    Netty Start Public use_epoll_native_selector: bool = false, "useEpollNativeSelector";
    // Ours
    Ours Start Public reactor_threads: usize = 0, "reactorThreads";
    Ours Start Public pin_threads: bool = true, "pinThreads";
    Ours Start Public max_frame_length: usize = crate::protocol::DEFAULT_MAX_FRAME, "maxFrameLength";
    Ours Start Public writer_queue_capacity: usize = 65536, "writerQueueCapacity";
    Ours Start Public writer_queue_bytes: usize = 256 * 1024 * 1024, "writerQueueBytes";
    Ours Start Public decoder_queue_bytes: usize = 16 * 1024 * 1024, "decoderQueueBytes";
    Ours Start Public max_inflated_body: usize = 64 * 1024 * 1024, "maxInflatedBody";
    Ours Start Public route_cache_bytes: usize = 16 * 1024 * 1024, "routeCacheBytes";
    Ours Start Public decoder_threshold_bytes: usize = 64 * 1024, "decoderThresholdBytes";
    Ours Start Public http_address: String = String::new(), "httpAddress";
    // The address server on httpAddress (`/rocketmq/nsaddr`, what Java clients read with rocketmq.namesrv.domain):
    // the name servers to hand out, ';'-separated; empty = off.
    Ours Start Public nsaddr_list: String = String::new(), "nsaddrList";
    // The change feed (`/events` on httpAddress): how many events are kept for resuming streams (0 = off), and
    // how many streams may be open at once (more get 503).
    Ours Start Public event_feed_size: usize = 4096, "eventFeedSize";
    Ours Start Public event_feed_streams: usize = 16, "eventFeedStreams";
    // The HTTP endpoint's protections (http::Limits, docs/operations.md): connections at once, request head and
    // body sizes, the time to deliver a head (also the idle keep-alive time) and to take a reply, and whether
    // /metrics needs an account under aclEnable.
    Ours Start Public http_max_connections: usize = 256, "httpMaxConnections";
    Ours Start Public http_max_header_bytes: usize = 16 * 1024, "httpMaxHeaderBytes";
    Ours Start Public http_max_body_bytes: usize = 4096, "httpMaxBodyBytes";
    Ours Start Public http_header_timeout_seconds: u64 = 10, "httpHeaderTimeoutSeconds";
    Ours Start Public http_write_timeout_seconds: u64 = 10, "httpWriteTimeoutSeconds";
    Ours Start Public http_metrics_auth: bool = false, "httpMetricsAuth";
    // How long a broker that left a cluster (and is not back) stays a health verdict (`health`, "brokers_lost").
    Ours Start Public health_loss_window_seconds: u64 = 600, "healthLossWindowSeconds";
    // The chart history /api/history serves: seconds between samples (min 1); 360 are kept, an hour at 10 s.
    Ours Start Public http_history_step_seconds: u64 = 10, "httpHistoryStepSeconds";
    Ours Start Public route_snapshot_path: String = String::new(), "routeSnapshotPath";
    Ours Start Public route_snapshot_interval_seconds: i64 = 30, "routeSnapshotIntervalSeconds";
    // TLS: Java reads these as JVM system properties (TlsSystemConfig); we take the same names from `-c`. Read at
    // start only. `tls.config.file` (if it exists) overrides the others except the mode, as Java's does.
    Ours Start Public tls_server_mode: String = "permissive".into(), "tls.server.mode";
    Ours Start Public tls_test_mode_enable: bool = true, "tls.test.mode.enable";
    Ours Start Public tls_server_cert_path: String = String::new(), "tls.server.certPath";
    Ours Start Public tls_server_key_path: String = String::new(), "tls.server.keyPath";
    Ours Start Secret tls_server_key_password: String = String::new(), "tls.server.keyPassword";
    Ours Start Public tls_server_need_client_auth: String = "none".into(), "tls.server.need.client.auth";
    Ours Start Public tls_server_auth_client: bool = false, "tls.server.authClient";
    Ours Start Public tls_server_trust_cert_path: String = String::new(), "tls.server.trustCertPath";
    Ours Start Public tls_config_file: String = "/etc/rocketmq/tls.properties".into(), "tls.config.file";
    // Limits (docs/decisions/0006). 0 = unlimited where noted.
    Ours Start Public max_topics_per_registration: usize = 0, "maxTopicsPerRegistration";
    Ours Start Public max_connections: usize = 100_000, "maxConnections";
    Ours Start Public max_pending_write_bytes: usize = 16 * 1024 * 1024, "maxPendingWriteBytes";
    Ours Start Public slow_reader_close_seconds: i64 = 30, "slowReaderCloseSeconds";
    Ours Start Public admin_allow_list: crate::allow_list::AllowList = Default::default(), "adminAllowList";
    // Authentication (docs/security.md): the broker's key name, and the 4.x account file.
    Ours Start Public acl_enable: bool = false, "aclEnable";
    Ours Start Public acl_file: String = String::new(), "aclFile";
    // ACL 2.0 (5.3+), with the brokers' key names (AuthConfig): users learned from the brokers (auth_sync), the
    // credential the cluster's brokers and proxies sign with, request codes that need no signature, a Super user
    // known from the start; and ours: how often the brokers are asked, and where the last good list is kept.
    Ours Start Public authentication_enabled: bool = false, "authenticationEnabled";
    Ours Start Secret inner_client_authentication_credentials: String = String::new(), "innerClientAuthenticationCredentials";
    Ours Start Public authentication_whitelist: String = String::new(), "authenticationWhitelist";
    Ours Start Secret init_authentication_user: String = String::new(), "initAuthenticationUser";
    Ours Start Public auth_users_refresh_seconds: u64 = 10, "authUsersRefreshSeconds";
    Ours Start Public auth_users_path: String = home_path("namesrv/authUsers.json"), "authUsersPath";
    // The audit trail (target `audit`) to a file of its own, appended; empty = with the other logs.
    Ours Start Public audit_log_path: String = String::new(), "auditLogPath";
    // The main log (crate::logging): empty logDir = stderr; else logDir/namesrv.log, rolled at logMaxFileSize
    // bytes (0 = never) keeping logMaxFiles rolled files; logFormat text or json.
    Ours Start Public log_dir: String = String::new(), "logDir";
    Ours Start Public log_max_file_size: usize = 100 * 1024 * 1024, "logMaxFileSize";
    Ours Start Public log_max_files: usize = 10, "logMaxFiles";
    Ours Start Public log_format: String = "text".into(), "logFormat";
    // The fleet view (crate::fleet): the other name servers of the fleet, `;`- or `,`-separated host:port (ours may
    // be listed, it is skipped; empty = off), and how often each is compared with us.
    Ours Start Public namesrv_peers: String = String::new(), "namesrvPeers";
    Ours Start Public fleet_check_seconds: u64 = 30, "fleetCheckSeconds";
    // Frames in progress (docs/decisions/0032): once its first byte is in, a frame must be whole within
    // frameReadTimeoutSeconds, or within its length at frameMinBytesPerSecond if that is longer (a big registration
    // over a slow link); otherwise its connection is closed and what it held given back. 0 = no deadline / the floor
    // only.
    Ours Start Public frame_read_timeout_seconds: u64 = 30, "frameReadTimeoutSeconds";
    Ours Start Public frame_min_bytes_per_second: u64 = 256 * 1024, "frameMinBytesPerSecond";
    // ACL 2.0 (auth_sync): addresses that may be asked for users though they are not the IP their broker registered
    // from (NAT, a proxy in between): CIDRs or addresses, comma-separated; empty = only addresses that match.
    // Host names are never asked, listed or not.
    Ours Start Public auth_users_broker_allow_list: crate::allow_list::AllowList = Default::default(), "authUsersBrokerAllowList";
    // Bootstrap from peers (crate::fleet::bootstrap, decision 0034): a server that starts with no routes and has
    // namesrvPeers serves a peer's table provisionally (false = wait for the brokers). Host names among
    // namesrvPeers are resolved again every fleetResolveSeconds (at least 1), each address a peer of its own.
    Ours Start Public bootstrap_from_peers: bool = true, "bootstrapFromPeers";
    Ours Start Public fleet_resolve_seconds: u64 = 30, "fleetResolveSeconds";
    // Replicated KV (crate::kv_raft, decision 0033): off = no thread, no port, today's behaviour. This node's id, the
    // group's static membership (`id=ip:port` entries, `;`- or `,`-separated; the port is each node's Raft port),
    // whether this node joins a group that exists (it then forms none at its first start and waits to be added),
    // where its Raft files live, how long a KV write may wait for a majority (ms, 100..=60000), and the entries
    // between two snapshots (at least 1).
    Ours Start Public kv_replication_enabled: bool = false, "kvReplicationEnabled";
    Ours Start Public kv_replication_node_id: u64 = 0, "kvReplicationNodeId";
    Ours Start Public kv_replication_peers: String = String::new(), "kvReplicationPeers";
    Ours Start Public kv_replication_join: bool = false, "kvReplicationJoin";
    Ours Start Public kv_replication_store_path: String = home_path("namesrv/kvraft"), "kvReplicationStorePath";
    Ours Start Public kv_replication_timeout_millis: u64 = 3000, "kvReplicationTimeoutMillis";
    Ours Start Public kv_replication_snapshot_entries: u64 = 1000, "kvReplicationSnapshotEntries";
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot parse config file {path}: {source}")]
    Parse { path: PathBuf, source: props::PropsError },
    /// Refused at load rather than ignored like Java's unparsable values: see `from_file`.
    #[error("invalid adminAllowList in config file {path}: {source}")]
    AllowList { path: PathBuf, source: crate::allow_list::AllowListError },
}

/// Why `aclEnable=true` has no account file to read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AclPathError {
    #[error("aclEnable=true needs aclFile, rocketmqHome or ROCKETMQ_HOME to find plain_acl.yml")]
    NoFile,
}

impl Config {
    /// Reads a `-c` file: known keys set, unparsable values and unknown keys reported in the returned warnings
    /// (Java ignores both silently), and `configStorePath` becomes the file's path (Java does the same).
    pub fn from_file(path: &Path) -> Result<(Config, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        let pairs = props::parse(&text).map_err(|source| ConfigError::Parse { path: path.into(), source })?;
        // Unlike Java's ignored unparsable values, a bad allow-list stops start-up: ignoring it would silently
        // leave every peer allowed to write.
        for (_, v) in pairs.iter().filter(|(k, _)| k == "adminAllowList") {
            crate::allow_list::AllowList::parse(v)
                .map_err(|source| ConfigError::AllowList { path: path.into(), source })?;
        }
        let mut config = Config::default();
        let mut warnings = config.apply(&pairs);
        warnings.extend(config.clamp_bounded());
        for (k, v) in &pairs {
            if KEYS.iter().any(|(name, owner, _)| name == k && *owner == KeyOwner::Ours) {
                config.file_ours.insert(k.clone(), v.trim().to_string());
            }
        }
        config.config_store_path = path.to_string_lossy().into_owned();
        Ok((config, warnings))
    }

    /// Applies key/value pairs; returns a warning per unknown key or unparsable value.
    pub fn apply(&mut self, pairs: &[(String, String)]) -> Vec<String> {
        let mut warnings = Vec::new();
        for (k, v) in pairs {
            match self.set(k, v) {
                Ok(true) => {}
                Ok(false) => warnings.push(format!("ignoring unparsable value for {k}: {v:?}")),
                Err(UnknownKey) => {
                    // The controller's keys are read from `extra` when it starts (controller_node::settings).
                    if !CONTROLLER_KEYS.contains(&k.as_str()) {
                        warnings.push(format!("unknown configuration key {k} (kept, has no effect)"));
                    }
                    self.extra.insert(k.clone(), v.trim().to_string());
                }
            }
        }
        warnings
    }

    /// GET_NAMESRV_CONFIG: every Java key with a value plus the extra keys of the `-c` file, sorted by key. Our
    /// own keys are never listed (they are not Java's, so the answer stays Java's); `-p` shows them.
    pub fn java_entries(&self) -> Vec<(String, String)> {
        let mut out: BTreeMap<String, String> = self.extra.clone();
        for (name, owner, _) in KEYS {
            if *owner == KeyOwner::Ours {
                continue;
            }
            if let Some(v) = self.get(name) {
                out.insert((*name).to_string(), v);
            }
        }
        out.into_iter().collect()
    }

    /// Every key including ours, sorted: what `-p` prints.
    pub fn all_entries(&self) -> Vec<(String, String)> {
        let mut out: BTreeMap<String, String> = self.java_entries().into_iter().collect();
        for (name, owner, _) in KEYS {
            if *owner == KeyOwner::Ours {
                if let Some(v) = self.get(name) {
                    out.insert((*name).to_string(), v);
                }
            }
        }
        out.into_iter().collect()
    }

    /// What UPDATE_NAMESRV_CONFIG writes to `configStorePath`: what Java writes (every Java key and the extra keys)
    /// plus our own keys exactly as the `-c` file had them. 318 cannot change our keys, so reading the file back
    /// gives the same configuration plus the update.
    pub fn persisted_entries(&self) -> Vec<(String, String)> {
        let mut out: BTreeMap<String, String> = self.java_entries().into_iter().collect();
        out.extend(self.file_ours.iter().map(|(k, v)| (k.clone(), v.clone())));
        out.into_iter().collect()
    }

    /// The account file of `aclEnable`: `aclFile` (relative to `rocketmqHome` unless absolute), or
    /// `<rocketmqHome>/conf/plain_acl.yml` where Java's broker looks for it.
    pub(crate) fn acl_path(&self) -> Result<PathBuf, AclPathError> {
        let home = self.rocketmq_home.as_deref().map(str::trim).filter(|h| !h.is_empty()).map(PathBuf::from);
        let file = self.acl_file.trim();
        match (file, home) {
            ("", Some(home)) => Ok(home.join("conf/plain_acl.yml")),
            ("", None) => Err(AclPathError::NoFile),
            (f, _) if Path::new(f).is_absolute() => Ok(PathBuf::from(f)),
            (f, Some(home)) => Ok(home.join(f)),
            (f, None) => Ok(PathBuf::from(f)),
        }
    }

    /// `needWaitForService`: routes are refused until `waitSecondsForService` have passed since start.
    pub(crate) fn waiting_for_service(&self, ms_since_start: i64) -> bool {
        self.need_wait_for_service && ms_since_start < i64::from(self.wait_seconds_for_service) * 1000
    }

    /// The number of reactor threads to run: the setting, or one per core.
    pub(crate) fn reactor_count(&self) -> usize {
        if self.reactor_threads > 0 {
            self.reactor_threads
        } else {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_java() {
        let c = Config::default();
        assert_eq!(c.listen_port, 9876);
        assert_eq!(c.scan_not_active_broker_interval, 5000);
        assert_eq!(c.server_channel_max_idle_time_seconds, 120);
        assert!(c.enable_all_topic_list && c.return_order_topic_config_to_broker);
        assert!(c.kv_config_path.ends_with("namesrv/kvConfig.json"));
    }

    #[test]
    fn set_known_unknown_and_unparsable() {
        let mut c = Config::default();
        assert_eq!(c.set("listenPort", " 9877 "), Ok(true));
        assert_eq!(c.listen_port, 9877);
        assert_eq!(c.set("listenPort", "x"), Ok(false));
        assert_eq!(c.listen_port, 9877);
        assert_eq!(c.set("orderMessageEnable", "TRUE"), Ok(true));
        assert!(c.order_message_enable);
        assert_eq!(c.set("noSuchKey", "1"), Err(UnknownKey));
        assert!(Config::is_boolean("orderMessageEnable") && Config::is_boolean("aclEnable"));
        assert!(!Config::is_boolean("listenPort") && !Config::is_boolean("noSuchKey"));
        let warnings = c.apply(&[("noSuchKey".into(), "1".into())]);
        assert_eq!(warnings.len(), 1);
        assert_eq!(c.extra.get("noSuchKey").map(String::as_str), Some("1"));
    }

    #[test]
    fn java_entries_are_sorted_and_exclude_our_keys() {
        let c = Config::default();
        let entries = c.java_entries();
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert!(keys.contains(&"listenPort"));
        assert!(!keys.contains(&"reactorThreads"));
        assert!(c.all_entries().iter().any(|(k, _)| k == "reactorThreads"));
    }

    #[test]
    fn persisted_file_keeps_our_keys_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.properties");
        std::fs::write(&path, "adminAllowList=127.0.0.1\nmaxConnections=7\nunknownKey=u\nlistenPort=9999\n").unwrap();
        let (mut c, _) = Config::from_file(&path).unwrap();
        c.set("orderMessageEnable", "true").unwrap();
        let persisted = c.persisted_entries();
        let get = |k: &str| persisted.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("adminAllowList"), Some("127.0.0.1"));
        assert_eq!(get("maxConnections"), Some("7"));
        assert_eq!(get("unknownKey"), Some("u"));
        assert_eq!(get("listenPort"), Some("9999"));
        assert_eq!(get("orderMessageEnable"), Some("true"));
        assert_eq!(get("reactorThreads"), None, "our keys the file did not set stay unset");
    }

    #[test]
    fn limit_defaults_keep_drop_in_behaviour() {
        let c = Config::default();
        assert_eq!(c.max_topics_per_registration, 0, "unlimited: real brokers register 100k+ topics");
        assert_eq!(c.max_connections, 100_000);
        assert_eq!(c.max_pending_write_bytes, 16 * 1024 * 1024);
        assert_eq!(c.slow_reader_close_seconds, 30);
        assert!(c.admin_allow_list.is_off());
        assert_eq!(c.get("adminAllowList"), Some(String::new()));
    }

    #[test]
    fn allow_list_from_file_is_parsed_or_stops_start_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("good.properties");
        std::fs::write(&path, "adminAllowList=10.1.2.3/8, ::1\nmaxConnections=5\n").unwrap();
        let (c, warnings) = Config::from_file(&path).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(c.get("adminAllowList").as_deref(), Some("10.0.0.0/8,::1/128"));
        assert_eq!(c.max_connections, 5);
        let bad = dir.path().join("bad.properties");
        std::fs::write(&bad, "adminAllowList=10.0.0.0/8,10.0.0.300\n").unwrap();
        let e = Config::from_file(&bad).unwrap_err();
        let ConfigError::AllowList { path, source } = &e else { panic!("{e}") };
        assert_eq!((path, source.entry.as_str()), (&bad, "10.0.0.300"));
        let e = e.to_string();
        assert!(e.contains("adminAllowList") && e.contains("\"10.0.0.300\"") && e.contains("bad.properties"), "{e}");
    }

    #[test]
    fn acl_path_needs_a_file_or_a_home() {
        let c = Config { rocketmq_home: None, acl_file: String::new(), ..Config::default() };
        assert_eq!(c.acl_path(), Err(AclPathError::NoFile));
        assert!(c.acl_path().unwrap_err().to_string().contains("aclFile"));
        let c = Config { rocketmq_home: Some("/opt/rmq".into()), ..c };
        assert_eq!(c.acl_path(), Ok(PathBuf::from("/opt/rmq/conf/plain_acl.yml")));
    }
}
