//! Building broker requests as raw frames: REGISTER_BROKER (JSON body with a correct CRC) and UNREGISTER_BROKER.

use namesrv::model::{DataVersion, RegisterBrokerBody, TopicConfig};
use namesrv::protocol::{body, RemotingCommand, RequestCode};

/// The DataVersion timestamp test brokers send (and the ManualClock start).
pub const T0: i64 = 1_700_000_000_000;

/// A request with a fresh opaque (unique across the test binary).
pub fn new_cmd(code: i32) -> RemotingCommand {
    static NEXT: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);
    RemotingCommand::request(code, NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// A broker's identity for building REGISTER_BROKER requests.
pub struct Broker<'a> {
    pub cluster: &'a str,
    pub name: &'a str,
    pub addr: &'a str,
    pub id: i64,
}

impl Broker<'_> {
    /// REGISTER_BROKER of `topics` with 4/4 queues, perm 6, sys flag 0.
    pub fn register(&self, topics: &[&str], counter: i64, version: i32) -> RemotingCommand {
        let configs = topics
            .iter()
            .map(|t| TopicConfig { read_queue_nums: 4, write_queue_nums: 4, ..TopicConfig::with_defaults(*t) })
            .collect();
        self.register_configs(configs, counter, version)
    }

    /// REGISTER_BROKER of these topic configs, as a 5.x broker of `version` sends it (JSON body, right CRC).
    pub fn register_configs(&self, topic_configs: Vec<TopicConfig>, counter: i64, version: i32) -> RemotingCommand {
        let body = RegisterBrokerBody {
            data_version: DataVersion { counter, state_version: 0, timestamp: T0 },
            topic_configs,
            mapping_infos: vec![],
            filter_server_list: Some(vec![]),
        };
        let bytes = body::encode_register_broker_body(&body, false, version);
        let mut cmd = new_cmd(RequestCode::REGISTER_BROKER)
            .with_ext("brokerName", self.name)
            .with_ext("brokerAddr", self.addr)
            .with_ext("clusterName", self.cluster)
            .with_ext("haServerAddr", self.addr.replace(":10911", ":10912"))
            .with_ext("brokerId", self.id.to_string())
            .with_ext("enableActingMaster", "false")
            .with_ext("compressed", "false")
            .with_ext("bodyCrc32", namesrv::handlers::broker::crc32_masked(&bytes).to_string())
            .with_body(bytes);
        cmd.version = version;
        cmd
    }

    pub fn unregister(&self) -> RemotingCommand {
        new_cmd(RequestCode::UNREGISTER_BROKER)
            .with_ext("brokerName", self.name)
            .with_ext("brokerAddr", self.addr)
            .with_ext("clusterName", self.cluster)
            .with_ext("brokerId", self.id.to_string())
    }
}
