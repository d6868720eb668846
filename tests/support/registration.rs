//! Building broker requests as raw frames: REGISTER_BROKER (JSON body with a correct CRC) and UNREGISTER_BROKER.

use namesrv::model::{DataVersion, TopicConfig};
use namesrv::protocol::{RemotingCommand, RequestCode};
use namesrv::state::routes::RegisterBroker;

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
        let dv = DataVersion { counter, state_version: 0, timestamp: T0 };
        let mut reg = RegisterBroker::new(self.cluster, self.name, self.id, self.addr, topic_configs, dv);
        reg.ha_server_addr = self.addr.replace(":10911", ":10912");
        reg.body.filter_server_list = Some(vec![]);
        let opaque = new_cmd(RequestCode::REGISTER_BROKER).opaque;
        namesrv::test_support::handlers::broker::encode_register_as(&reg, opaque, version)
    }

    /// `register` with the body compressed, as a broker with `compressedRegister=true` sends it.
    pub fn register_zlib(&self, topics: &[&str], counter: i64, version: i32) -> RemotingCommand {
        use namesrv::protocol::body;
        let plain = self.register(topics, counter, version);
        let decoded = body::decode_register_broker_body(&plain.body, false, version, usize::MAX).expect("our body");
        let zlib = body::encode_register_broker_body(&decoded, true, version);
        let crc = namesrv::handlers::broker::crc32_masked(&zlib);
        plain.with_ext("compressed", "true").with_ext("bodyCrc32", crc.to_string()).with_body(zlib)
    }

    pub fn unregister(&self) -> RemotingCommand {
        new_cmd(RequestCode::UNREGISTER_BROKER)
            .with_ext("brokerName", self.name)
            .with_ext("brokerAddr", self.addr)
            .with_ext("clusterName", self.cluster)
            .with_ext("brokerId", self.id.to_string())
    }
}
