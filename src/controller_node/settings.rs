//! The controller's settings, read from the same `-c` file as the name server with Java `ControllerConfig`'s key
//! names (key = setter name). They are not name-server keys: GET_NAMESRV_CONFIG lists them as Java lists any other
//! key of the file, and UPDATE_NAMESRV_CONFIG cannot change them (they are read once, at start).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::controller::raft::NodeId;

/// Every `ControllerConfig` key we know (declared in `config`, which must not reach up here to learn them).
pub(crate) use crate::config::CONTROLLER_KEYS as KEYS;

/// `controllerFrameBytes`' default: two frames of the default `maxFrameLength`. Brokers' requests are small; Raft's
/// big messages (a snapshot, a long append) come from two or four peers.
pub(crate) const DEFAULT_FRAME_BYTES: usize = 32 * 1024 * 1024;

/// One controller of the group, as `controllerDLegerPeers` names it (`n0-127.0.0.1:9878`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The DLedger-style id (`n0`): what 1005 reports as `controllerLeaderId`.
    pub name: String,
    /// Its Raft node id: the number the name ends with (`n0` → 0), so every node derives the same ids whatever
    /// order its peer list is in.
    pub id: NodeId,
    /// `ip:port` — where brokers and the other controllers reach it.
    pub addr: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `controllerDLegerGroup`: reported in 1005, and the Raft cluster name.
    pub group: String,
    /// `controllerDLegerPeers`, in the file's order (1005 lists them so).
    pub peers: Vec<Peer>,
    /// `controllerDLegerSelfId`: this node.
    pub self_name: String,
    /// `controllerStorePath`: the Raft log and snapshot.
    pub store_path: PathBuf,
    /// `scanNotActiveBrokerInterval` (shared with the name server's key of the same name).
    pub scan_not_active_broker_interval_ms: u64,
    pub scan_inactive_master_interval_ms: u64,
    pub elect_master_max_retry_count: u32,
    pub enable_elect_unclean_master: bool,
    pub notify_broker_role_changed: bool,
    /// `controllerFrameBytes` (ours): bytes of big frames the controller port reads at once (0 = unlimited).
    pub frame_bytes: usize,
    /// `controllerMaxConnections` (ours): connections the port keeps at once, within its share of the open-files
    /// limit ([`crate::limit::fd_shares`]); more are closed at accept. 0 = the share.
    pub max_connections: usize,
    /// `controllerIdleSeconds` (ours): a connection with no whole frame for this long is closed (0 = never).
    /// Brokers heartbeat every few seconds and Raft peers more often.
    pub idle_secs: u64,
    /// `controllerFrameTimeoutSeconds` (ours): how long a frame may take to arrive once started, longer for a big
    /// one at `CONTROLLER_FRAME_MIN_RATE` ([`crate::limit::frame_deadline_ms`]); then its connection is closed and its
    /// room given back (0 = no deadline).
    pub frame_timeout_secs: u64,
    /// The Java knobs we accept without a meaning here (thread pools, DLedger's file size, metrics exporters), as the
    /// file set them: 1010 shows them as Java would.
    pub inert: BTreeMap<String, String>,
}

/// Java `ControllerConfig` defaults of the keys that have no meaning here, for 1010.
const INERT_DEFAULTS: &[(&str, &str)] = &[
    ("controllerRequestThreadPoolQueueCapacity", "50000"),
    ("controllerThreadPoolNums", "16"),
    ("isProcessReadEvent", "false"),
    ("mappedFileSize", "1073741824"),
    ("metricGrpcExporterIntervalInMills", "60000"),
    ("metricGrpcExporterTimeOutInMills", "3000"),
    ("metricLoggingExporterIntervalInMills", "10000"),
    ("metricsExporterType", "DISABLE"),
    ("metricsGrpcExporterHeader", ""),
    ("metricsGrpcExporterTarget", ""),
    ("metricsInDelta", "false"),
    ("metricsLabel", ""),
    ("metricsPromExporterHost", ""),
    ("metricsPromExporterPort", "5557"),
];

/// Why the controller settings cannot start a controller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    #[error("{0} must be set when the controller is enabled")]
    Missing(&'static str),
    #[error("controllerType {0} is not supported: this controller runs Raft (openraft) with the DLedger keys")]
    Type(String),
    #[error("invalid controllerDLegerPeers entry {entry:?}: {reason}")]
    Peer { entry: String, reason: String },
    #[error("controllerDLegerSelfId {0} is not one of controllerDLegerPeers")]
    SelfNotAPeer(String),
    #[error("invalid {key}: {value:?}")]
    Value { key: &'static str, value: String },
}

impl Settings {
    /// Reads the controller keys from the file's extra keys (`keys`); `scan_not_active_ms` is the shared key the
    /// name-server table already parsed.
    pub fn from_keys(keys: &BTreeMap<String, String>, scan_not_active_ms: i64) -> Result<Settings, SettingsError> {
        let get = |k: &str| keys.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let controller_type = get("controllerType").unwrap_or("DLedger");
        if controller_type != "DLedger" {
            return Err(SettingsError::Type(controller_type.to_owned()));
        }
        let group = get("controllerDLegerGroup").ok_or(SettingsError::Missing("controllerDLegerGroup"))?;
        let peers = parse_peers(get("controllerDLegerPeers").ok_or(SettingsError::Missing("controllerDLegerPeers"))?)?;
        let self_name = get("controllerDLegerSelfId").ok_or(SettingsError::Missing("controllerDLegerSelfId"))?;
        if !peers.iter().any(|p| p.name == self_name) {
            return Err(SettingsError::SelfNotAPeer(self_name.to_owned()));
        }
        // Java: empty means `~/<controllerType>Controller`.
        let store_path = match get("controllerStorePath") {
            Some(path) => PathBuf::from(path),
            None => PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| ".".into())).join("DLedgerController"),
        };
        Ok(Settings {
            group: group.to_owned(),
            peers,
            self_name: self_name.to_owned(),
            store_path,
            scan_not_active_broker_interval_ms: positive("scanNotActiveBrokerInterval", scan_not_active_ms)?,
            scan_inactive_master_interval_ms: positive(
                "scanInactiveMasterInterval",
                number(get("scanInactiveMasterInterval"), "scanInactiveMasterInterval", 5000)?,
            )?,
            elect_master_max_retry_count: number(get("electMasterMaxRetryCount"), "electMasterMaxRetryCount", 3)?
                .clamp(1, 100) as u32,
            enable_elect_unclean_master: flag(get("enableElectUncleanMaster"), false),
            notify_broker_role_changed: flag(get("notifyBrokerRoleChanged"), true),
            frame_bytes: size(get("controllerFrameBytes"), "controllerFrameBytes", DEFAULT_FRAME_BYTES)?,
            max_connections: size(get("controllerMaxConnections"), "controllerMaxConnections", 1024)?,
            idle_secs: size(get("controllerIdleSeconds"), "controllerIdleSeconds", 120)? as u64,
            frame_timeout_secs: size(get("controllerFrameTimeoutSeconds"), "controllerFrameTimeoutSeconds", 30)? as u64,
            inert: INERT_DEFAULTS
                .iter()
                .map(|(k, default)| {
                    let key = if *k == "isProcessReadEvent" { "processReadEvent" } else { k };
                    (k.to_string(), keys.get(key).or(keys.get(*k)).map_or(*default, |v| v.trim()).to_string())
                })
                .collect(),
        })
    }

    /// This node.
    pub(crate) fn this(&self) -> &Peer {
        self.peers.iter().find(|p| p.name == self.self_name).expect("checked in from_keys")
    }

    pub(crate) fn peer(&self, id: NodeId) -> Option<&Peer> {
        self.peers.iter().find(|p| p.id == id)
    }

    /// 1010's answer, sorted by key: Java `ControllerConfig`'s keys — those we honour with the values we run with,
    /// the others as the file set them or Java's defaults — and the controller's `listenPort`.
    pub(crate) fn properties(&self) -> Vec<(String, String)> {
        let peers: Vec<String> = self.peers.iter().map(|p| format!("{}-{}", p.name, p.addr)).collect();
        let port = self.this().addr.rsplit(':').next().unwrap_or_default().to_string();
        let mut out = vec![
            ("configBlackList".to_string(), "configBlackList;configStorePath".to_string()),
            ("listenPort".into(), port),
            ("controllerType".to_string(), "DLedger".to_string()),
            ("controllerDLegerGroup".into(), self.group.clone()),
            ("controllerDLegerPeers".into(), peers.join(";")),
            ("controllerDLegerSelfId".into(), self.self_name.clone()),
            ("controllerStorePath".into(), self.store_path.display().to_string()),
            ("scanNotActiveBrokerInterval".into(), self.scan_not_active_broker_interval_ms.to_string()),
            ("scanInactiveMasterInterval".into(), self.scan_inactive_master_interval_ms.to_string()),
            ("electMasterMaxRetryCount".into(), self.elect_master_max_retry_count.to_string()),
            ("enableElectUncleanMaster".into(), self.enable_elect_unclean_master.to_string()),
            ("notifyBrokerRoleChanged".into(), self.notify_broker_role_changed.to_string()),
        ];
        // A key whose value grants something (`metricsGrpcExporterHeader`, an `Authorization` header) is never
        // served once set; left empty, as Java's default, it is listed like Java lists it.
        let served = |(k, v): &(&String, &String)| v.is_empty() || !crate::config::is_secret_key(k);
        out.extend(self.inert.iter().filter(served).map(|(k, v)| (k.clone(), v.clone())));
        out.sort();
        out
    }

    /// Whether 1009 must refuse a key: every controller key is read once at start (and the election ones guard
    /// against data loss), so none may change over the network; Java's `configBlackList` keys neither.
    pub(crate) fn refuses_update_of(key: &str) -> bool {
        KEYS.contains(&key) || ["configBlackList", "configStorePath", "scanNotActiveBrokerInterval"].contains(&key)
    }

    /// 1005's `peers`: DLedger's `id:addr;` for each, in the file's order.
    pub(crate) fn peers_text(&self) -> String {
        self.peers.iter().map(|p| format!("{}:{};", p.name, p.addr)).collect()
    }
}

fn parse_peers(text: &str) -> Result<Vec<Peer>, SettingsError> {
    let mut peers: Vec<Peer> = Vec::new();
    let (mut names, mut ids) = (BTreeSet::new(), BTreeSet::new());
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| SettingsError::Peer { entry: entry.to_owned(), reason: reason.to_owned() };
        let (name, addr) = entry.split_once('-').ok_or_else(|| bad("expected <id>-<ip>:<port>"))?;
        addr.parse::<SocketAddr>().map_err(|_| bad("the address must be <ip>:<port>"))?;
        let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let id: NodeId =
            name[name.len() - digits..].parse().map_err(|_| bad("the id must end with a number (n0, n1, …)"))?;
        if !names.insert(name.to_owned()) || !ids.insert(id) {
            return Err(bad("two peers with the same id or number"));
        }
        peers.push(Peer { name: name.to_owned(), id, addr: addr.to_owned() });
    }
    if peers.is_empty() {
        return Err(SettingsError::Missing("controllerDLegerPeers"));
    }
    Ok(peers)
}

fn number(value: Option<&str>, key: &'static str, default: i64) -> Result<i64, SettingsError> {
    value.map_or(Ok(default), |v| v.parse().map_err(|_| SettingsError::Value { key, value: v.to_owned() }))
}

fn size(value: Option<&str>, key: &'static str, default: usize) -> Result<usize, SettingsError> {
    value.map_or(Ok(default), |v| v.parse().map_err(|_| SettingsError::Value { key, value: v.to_owned() }))
}

fn positive(key: &'static str, ms: i64) -> Result<u64, SettingsError> {
    u64::try_from(ms).ok().filter(|ms| *ms > 0).ok_or(SettingsError::Value { key, value: ms.to_string() })
}

/// `Boolean.parseBoolean`.
fn flag(value: Option<&str>, default: bool) -> bool {
    value.map_or(default, |v| v.eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn three() -> BTreeMap<String, String> {
        keys(&[
            ("controllerDLegerGroup", "group1"),
            ("controllerDLegerPeers", "n0-127.0.0.1:9878;n1-127.0.0.1:9868; n2-127.0.0.1:9858;"),
            ("controllerDLegerSelfId", "n1"),
            ("controllerStorePath", "/var/ctl"),
        ])
    }

    #[test]
    fn java_keys_give_the_group_and_this_node() {
        let s = Settings::from_keys(&three(), 5000).unwrap();
        assert_eq!(s.group, "group1");
        assert_eq!(s.peers.iter().map(|p| p.id).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(s.this().addr, "127.0.0.1:9868");
        assert_eq!(s.store_path, PathBuf::from("/var/ctl"));
        assert_eq!(s.peers_text(), "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;");
        assert_eq!((s.elect_master_max_retry_count, s.scan_inactive_master_interval_ms), (3, 5000));
        assert!(s.notify_broker_role_changed && !s.enable_elect_unclean_master);
        assert_eq!(s.frame_bytes, DEFAULT_FRAME_BYTES);
    }

    #[test]
    fn controller_frame_bytes_is_read_and_a_bad_value_stops_start_up() {
        let mut file = three();
        file.insert("controllerFrameBytes".into(), "1048576".into());
        assert_eq!(Settings::from_keys(&file, 5000).unwrap().frame_bytes, 1_048_576);
        file.insert("controllerFrameBytes".into(), "-1".into());
        assert!(matches!(
            Settings::from_keys(&file, 5000),
            Err(SettingsError::Value { key: "controllerFrameBytes", .. })
        ));
        assert!(Settings::refuses_update_of("controllerFrameBytes"), "read once, at start");
    }

    #[test]
    fn get_config_lists_javas_keys_with_what_the_file_set() {
        let mut file = three();
        file.insert("mappedFileSize".into(), "10485760".into());
        file.insert("processReadEvent".into(), "true".into());
        let props: BTreeMap<String, String> =
            Settings::from_keys(&file, 5000).unwrap().properties().into_iter().collect();
        assert_eq!(props["mappedFileSize"], "10485760");
        assert_eq!(props["isProcessReadEvent"], "true");
        assert_eq!(props["controllerThreadPoolNums"], "16", "Java's default");
        assert_eq!(props["listenPort"], "9868", "this node's port");
        assert_eq!(props["controllerDLegerPeers"], "n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858");
        assert_eq!(props.len(), 26, "ControllerConfig's keys but jraftConfig, rocketmqHome and configStorePath");
    }

    #[test]
    fn a_secret_the_file_set_is_not_served() {
        let mut file = three();
        file.insert("metricsGrpcExporterHeader".into(), "Authorization: Bearer s3cret".into());
        let props = Settings::from_keys(&file, 5000).unwrap().properties();
        assert!(props.iter().all(|(k, v)| k != "metricsGrpcExporterHeader" && !v.contains("s3cret")), "{props:?}");
        let props = Settings::from_keys(&three(), 5000).unwrap().properties();
        assert!(props.iter().any(|(k, v)| k == "metricsGrpcExporterHeader" && v.is_empty()), "Java's empty default");
    }

    #[test]
    fn a_bad_group_definition_stops_start_up() {
        let with = |k: &str, v: &str| {
            let mut m = three();
            m.insert(k.into(), v.into());
            Settings::from_keys(&m, 5000)
        };
        assert_eq!(with("controllerDLegerSelfId", "n7"), Err(SettingsError::SelfNotAPeer("n7".into())));
        assert!(matches!(with("controllerDLegerPeers", "n0-localhost"), Err(SettingsError::Peer { .. })));
        assert!(matches!(with("controllerDLegerPeers", "a-127.0.0.1:1"), Err(SettingsError::Peer { .. })));
        assert!(matches!(
            with("controllerDLegerPeers", "n1-127.0.0.1:1;c1-127.0.0.1:2"),
            Err(SettingsError::Peer { .. })
        ));
        assert_eq!(with("controllerType", "jRaft"), Err(SettingsError::Type("jRaft".into())));
        assert!(matches!(with("scanInactiveMasterInterval", "soon"), Err(SettingsError::Value { .. })));
        assert_eq!(Settings::from_keys(&keys(&[]), 5000), Err(SettingsError::Missing("controllerDLegerGroup")));
        assert!(matches!(Settings::from_keys(&three(), 0), Err(SettingsError::Value { .. })));
    }
}
