//! Configuration with the Java key names (`NamesrvConfig` + `NettyServerConfig`, §7 of the reference) and our own
//! keys, all read from one Java-style properties file (`-c`). One table below declares every key once: its field,
//! type, default and Java name; parsing, printing (`-p`, GET_NAMESRV_CONFIG) and updating all come from it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::protocol::props;

/// A value that a properties string converts into, with Java's `MixAll.properties2Object` rules.
pub trait ConfigValue: Sized {
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
numeric_value!(i32, i64, u16, usize);

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

macro_rules! config_table {
    ($( $owner:ident $field:ident : $ty:ty = $default:expr, $name:literal; )*) => {
        /// The effective configuration. Field names are the Java keys in snake case.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Config {
            $( pub $field: $ty, )*
            /// Keys from the `-c` file that are not ours: kept and shown like Java does.
            pub extra: BTreeMap<String, String>,
        }

        impl Default for Config {
            fn default() -> Self {
                Config { $( $field: $default, )* extra: BTreeMap::new() }
            }
        }

        /// Every known key with its owner, in table order.
        pub const KEYS: &[(&str, KeyOwner)] = &[ $( ($name, KeyOwner::$owner), )* ];

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
    Namesrv rocketmq_home: Option<String> = std::env::var("ROCKETMQ_HOME").ok(), "rocketmqHome";
    Namesrv kv_config_path: String = home_path("namesrv/kvConfig.json"), "kvConfigPath";
    Namesrv config_store_path: String = home_path("namesrv/namesrv.properties"), "configStorePath";
    Namesrv product_env_name: String = "center".into(), "productEnvName";
    Namesrv cluster_test: bool = false, "clusterTest";
    Namesrv order_message_enable: bool = false, "orderMessageEnable";
    Namesrv return_order_topic_config_to_broker: bool = true, "returnOrderTopicConfigToBroker";
    Namesrv client_request_thread_pool_nums: i32 = 8, "clientRequestThreadPoolNums";
    Namesrv default_thread_pool_nums: i32 = 16, "defaultThreadPoolNums";
    Namesrv client_request_thread_pool_queue_capacity: i32 = 50000, "clientRequestThreadPoolQueueCapacity";
    Namesrv default_thread_pool_queue_capacity: i32 = 10000, "defaultThreadPoolQueueCapacity";
    Namesrv scan_not_active_broker_interval: i64 = 5000, "scanNotActiveBrokerInterval";
    Namesrv un_register_broker_queue_capacity: i32 = 3000, "unRegisterBrokerQueueCapacity";
    Namesrv support_acting_master: bool = false, "supportActingMaster";
    Namesrv enable_all_topic_list: bool = true, "enableAllTopicList";
    Namesrv enable_topic_list: bool = true, "enableTopicList";
    Namesrv notify_min_broker_id_changed: bool = false, "notifyMinBrokerIdChanged";
    Namesrv enable_controller_in_namesrv: bool = false, "enableControllerInNamesrv";
    Namesrv need_wait_for_service: bool = false, "needWaitForService";
    Namesrv wait_seconds_for_service: i32 = 45, "waitSecondsForService";
    Namesrv delete_topic_with_broker_registration: bool = false, "deleteTopicWithBrokerRegistration";
    Namesrv config_black_list: String = "configBlackList;configStorePath;kvConfigPath".into(), "configBlackList";
    // NettyServerConfig
    Netty bind_address: String = "0.0.0.0".into(), "bindAddress";
    Netty listen_port: u16 = 9876, "listenPort";
    Netty server_worker_threads: i32 = 8, "serverWorkerThreads";
    Netty server_callback_executor_threads: i32 = 0, "serverCallbackExecutorThreads";
    Netty server_selector_threads: i32 = 3, "serverSelectorThreads";
    Netty server_oneway_semaphore_value: i32 = 256, "serverOnewaySemaphoreValue";
    Netty server_async_semaphore_value: i32 = 64, "serverAsyncSemaphoreValue";
    Netty server_channel_max_idle_time_seconds: i32 = 120, "serverChannelMaxIdleTimeSeconds";
    Netty server_socket_snd_buf_size: i32 = 0, "serverSocketSndBufSize";
    Netty server_socket_rcv_buf_size: i32 = 0, "serverSocketRcvBufSize";
    Netty write_buffer_high_water_mark: i32 = 0, "writeBufferHighWaterMark";
    Netty write_buffer_low_water_mark: i32 = 0, "writeBufferLowWaterMark";
    Netty server_socket_backlog: i32 = 1024, "serverSocketBacklog";
    Netty server_netty_worker_group_enable: bool = true, "serverNettyWorkerGroupEnable";
    Netty server_pooled_byte_buf_allocator_enable: bool = true, "serverPooledByteBufAllocatorEnable";
    Netty enable_shutdown_gracefully: bool = false, "enableShutdownGracefully";
    Netty shutdown_wait_time_seconds: i32 = 30, "shutdownWaitTimeSeconds";
    Netty use_epoll_native_selector: bool = false, "useEpollNativeSelector";
    // Ours
    Ours reactor_threads: usize = 0, "reactorThreads";
    Ours pin_threads: bool = true, "pinThreads";
    Ours max_frame_length: usize = crate::protocol::DEFAULT_MAX_FRAME, "maxFrameLength";
    Ours writer_queue_capacity: usize = 65536, "writerQueueCapacity";
    Ours max_inflated_body: usize = 64 * 1024 * 1024, "maxInflatedBody";
    Ours route_cache_bytes: usize = 16 * 1024 * 1024, "routeCacheBytes";
    Ours decoder_threshold_bytes: usize = 64 * 1024, "decoderThresholdBytes";
    Ours http_address: String = String::new(), "httpAddress";
    Ours route_snapshot_path: String = String::new(), "routeSnapshotPath";
    Ours route_snapshot_interval_seconds: i64 = 30, "routeSnapshotIntervalSeconds";
    // TLS: Java reads these as JVM system properties (TlsSystemConfig); we take the same names from `-c`. Read at
    // start only. `tls.config.file` (if it exists) overrides the others except the mode, as Java's does.
    Ours tls_server_mode: String = "permissive".into(), "tls.server.mode";
    Ours tls_test_mode_enable: bool = true, "tls.test.mode.enable";
    Ours tls_server_cert_path: String = String::new(), "tls.server.certPath";
    Ours tls_server_key_path: String = String::new(), "tls.server.keyPath";
    Ours tls_server_key_password: String = String::new(), "tls.server.keyPassword";
    Ours tls_server_need_client_auth: String = "none".into(), "tls.server.need.client.auth";
    Ours tls_server_auth_client: bool = false, "tls.server.authClient";
    Ours tls_server_trust_cert_path: String = String::new(), "tls.server.trustCertPath";
    Ours tls_config_file: String = "/etc/rocketmq/tls.properties".into(), "tls.config.file";
    // Limits (docs/decisions/0006). 0 = unlimited where noted.
    Ours max_topics_per_registration: usize = 0, "maxTopicsPerRegistration";
    Ours max_connections: usize = 100_000, "maxConnections";
    Ours max_pending_write_bytes: usize = 16 * 1024 * 1024, "maxPendingWriteBytes";
    Ours slow_reader_close_seconds: i64 = 30, "slowReaderCloseSeconds";
    Ours admin_allow_list: crate::allow_list::AllowList = Default::default(), "adminAllowList";
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot parse config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("invalid {key} in config file {path}: {reason}")]
    Invalid { path: PathBuf, key: &'static str, reason: String },
}

impl Config {
    /// Reads a `-c` file: known keys set, unparsable values and unknown keys reported in the returned warnings
    /// (Java ignores both silently), and `configStorePath` becomes the file's path (Java does the same).
    pub fn from_file(path: &Path) -> Result<(Config, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.into(), source })?;
        let pairs = props::parse(&text).map_err(|reason| ConfigError::Parse { path: path.into(), reason })?;
        // Unlike Java's ignored unparsable values, a bad allow-list stops start-up: ignoring it would silently
        // leave every peer allowed to write.
        for (_, v) in pairs.iter().filter(|(k, _)| k == "adminAllowList") {
            crate::allow_list::AllowList::parse(v).map_err(|reason| ConfigError::Invalid {
                path: path.into(),
                key: "adminAllowList",
                reason,
            })?;
        }
        let mut config = Config::default();
        let warnings = config.apply(&pairs);
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
                    warnings.push(format!("unknown configuration key {k} (kept, has no effect)"));
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
        for (name, owner) in KEYS {
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
        for (name, owner) in KEYS {
            if *owner == KeyOwner::Ours {
                if let Some(v) = self.get(name) {
                    out.insert((*name).to_string(), v);
                }
            }
        }
        out.into_iter().collect()
    }

    /// UPDATE_NAMESRV_CONFIG's black list: the fixed keys plus the `configBlackList` setting.
    pub fn black_list(&self) -> Vec<String> {
        // adminAllowList is ours: if a peer could change it with a write, the list would protect nothing.
        let mut list: Vec<String> =
            ["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "adminAllowList"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        // Not Java's (its 318 ignores tls.* keys), but a remote update must not be able to change the transport
        // security of the next start.
        list.extend(KEYS.iter().filter(|(k, _)| k.starts_with("tls.")).map(|(k, _)| k.to_string()));
        list.extend(self.config_black_list.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from));
        list
    }

    /// `needWaitForService`: routes are refused until `waitSecondsForService` have passed since start.
    pub fn waiting_for_service(&self, ms_since_start: i64) -> bool {
        self.need_wait_for_service && ms_since_start < i64::from(self.wait_seconds_for_service) * 1000
    }

    /// The number of reactor threads to run: the setting, or one per core.
    pub fn reactor_count(&self) -> usize {
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
    fn black_list_has_fixed_and_configured_keys() {
        let c = Config { config_black_list: "listenPort;".into(), ..Config::default() };
        let bl = c.black_list();
        assert!(bl.contains(&"kvConfigPath".to_string()));
        assert!(bl.contains(&"rocketmqHome".to_string()));
        assert!(bl.contains(&"listenPort".to_string()));
        assert!(bl.contains(&"tls.server.mode".to_string()));
        assert!(bl.contains(&"adminAllowList".to_string()), "no request may open the allow-list");
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
        let e = Config::from_file(&bad).unwrap_err().to_string();
        assert!(e.contains("adminAllowList") && e.contains("\"10.0.0.300\""), "{e}");
    }
}
