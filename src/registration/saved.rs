//! The frames that rebuild a name server's tables: one REGISTER_BROKER per live broker, in the wire format, each
//! with when its broker was last heard from (`LAST_UPDATE_KEY`), and optionally one PUT_KV_CONFIG per KV entry.
//! The warm-restart file (`crate::warm`) holds the registrations; a peer's bootstrap answer (FLEET_ROUTES) holds
//! them and the KV entries. Here, pure and below both, so that the reactor that answers a peer, the thread that
//! reads the answer and the file share one codec.

use bytes::BytesMut;

use super::{decode_register, encode_register, RegisterError};
use crate::protocol::{frame, RemotingCommand, RequestCode};
use crate::state::routes::RegisterBroker;
use crate::state::KvTable;

/// The ext field of a saved frame holding its broker's last-update time (wall-clock ms of the writer's clock). Ours
/// only: no broker sends it, and the register decoder ignores ext fields it does not know.
const LAST_UPDATE_KEY: &str = "namesrvLastUpdateMs";

/// One registration read back, and when its broker was last heard from before the save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Saved {
    pub reg: RegisterBroker,
    /// `None` in a file written before the time was kept.
    pub last_update_ms: Option<i64>,
}

impl Saved {
    /// The last-update time to replay this broker with at `now_ms`, so the expiry scan takes it when it would have
    /// without the restart; `None` when its timeout has passed already (it is not replayed at all). Never later
    /// than `now_ms` (a clock set back). A frame without the time (an older file) replays as of the restart.
    pub(crate) fn replay_at(&self, now_ms: i64) -> Option<i64> {
        let Some(last) = self.last_update_ms else { return Some(now_ms) };
        (last.saturating_add(self.reg.timeout_ms()) > now_ms).then_some(last.min(now_ms))
    }
}

/// The file's bytes: concatenated frames, each registration with its broker's last-update time.
pub(crate) fn encode(regs: &[(RegisterBroker, i64)]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for (i, (r, last_update_ms)) in regs.iter().enumerate() {
        let cmd = encode_register(r, i as i32).with_ext(LAST_UPDATE_KEY, last_update_ms.to_string());
        frame::encode(&cmd, &mut out);
    }
    out.to_vec()
}

/// Why saved frames (a warm-restart file, a peer's answer) could not be read; the writer then starts empty.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WarmError {
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    #[error("registration {at} cannot be applied: {source}")]
    Registration { at: usize, source: RegisterError },
    #[error("truncated after {0} registrations")]
    Truncated(usize),
    #[error("{source} after {at} registrations")]
    Frame { at: usize, source: frame::FrameError },
}

/// What a peer's bootstrap answer holds: its brokers, and its KV entries (namespace, key, value) when asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Table {
    pub brokers: Vec<Saved>,
    pub kv: Vec<(String, String, String)>,
}

/// `encode`, followed by one PUT_KV_CONFIG frame per entry of `kv` (the request a client would send to make it).
pub(crate) fn encode_table(regs: &[(RegisterBroker, i64)], kv: Option<&KvTable>) -> Vec<u8> {
    let mut out = BytesMut::from(&encode(regs)[..]);
    for (ns, entries) in kv.map(KvTable::to_map).unwrap_or_default() {
        for (key, value) in entries {
            let cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG, 0)
                .with_ext("namespace", ns.clone())
                .with_ext("key", key)
                .with_ext("value", value);
            frame::encode(&cmd, &mut out);
        }
    }
    out.to_vec()
}

/// Reads the registrations back; the first broken frame ends the file (a torn write loses only its tail).
pub(crate) fn decode(bytes: &[u8], max_frame: usize, max_inflated: usize) -> Result<Vec<Saved>, WarmError> {
    decode_table(bytes, max_frame, max_inflated).map(|t| t.brokers)
}

/// Reads registrations and KV entries back. A KV frame without a namespace, key or value is skipped (a value-less
/// put is refused by the writer's own rule, so it cannot have been served).
pub(crate) fn decode_table(bytes: &[u8], max_frame: usize, max_inflated: usize) -> Result<Table, WarmError> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Table::default();
    loop {
        match frame::decode(&mut buf, max_frame) {
            Ok(Some(cmd)) if cmd.code == RequestCode::PUT_KV_CONFIG => {
                if let (Some(ns), Some(key), Some(value)) = (cmd.ext("namespace"), cmd.ext("key"), cmd.ext("value")) {
                    out.kv.push((ns.to_string(), key.to_string(), value.to_string()));
                }
            }
            Ok(Some(cmd)) => {
                let decoded = decode_register(&cmd, max_inflated)
                    .map_err(|source| WarmError::Registration { at: out.brokers.len(), source })?;
                if let Some(reg) = decoded {
                    out.brokers.push(Saved { reg, last_update_ms: cmd.ext_i64(LAST_UPDATE_KEY) });
                }
            }
            Ok(None) if buf.is_empty() => return Ok(out),
            Ok(None) => return Err(WarmError::Truncated(out.brokers.len())),
            Err(source) => return Err(WarmError::Frame { at: out.brokers.len(), source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DataVersion, RegisterBrokerBody, TopicConfig};

    fn reg() -> RegisterBroker {
        RegisterBroker {
            cluster_name: "C".into(),
            broker_addr: "10.0.0.1:10911".into(),
            broker_name: "b".into(),
            broker_id: 0,
            ha_server_addr: "10.0.0.1:10912".into(),
            zone_name: Some("z".into()),
            heartbeat_timeout_ms: Some(30_000),
            enable_acting_master: Some(true),
            body: RegisterBrokerBody {
                data_version: DataVersion { counter: 9, state_version: 2, timestamp: 7 },
                topic_configs: vec![TopicConfig::with_defaults("T"), TopicConfig::with_defaults("U")],
                mapping_infos: vec![],
                filter_server_list: Some(vec![]),
            },
            conn: None,
        }
    }

    #[test]
    fn round_trip_through_frames() {
        let (reg, mut other) = (reg(), reg());
        other.broker_addr = "10.0.0.2:10911".into();
        let bytes = encode(&[(reg.clone(), 1_700_000_000_123), (other.clone(), -5)]);
        let saved = decode(&bytes, 1 << 24, 1 << 24).unwrap();
        assert_eq!(
            saved,
            vec![
                Saved { reg: reg.clone(), last_update_ms: Some(1_700_000_000_123) },
                Saved { reg: other, last_update_ms: Some(-5) },
            ]
        );
        assert!(decode(&bytes[..bytes.len() - 3], 1 << 24, 1 << 24).is_err());
        assert_eq!(decode(&[], 1 << 24, 1 << 24).unwrap(), vec![]);
    }

    /// A file written before the last-update time was kept: its frames are plain registrations, read as before.
    #[test]
    fn a_frame_without_the_last_update_time_still_loads() {
        let mut bytes = BytesMut::new();
        frame::encode(&encode_register(&reg(), 0), &mut bytes);
        assert_eq!(decode(&bytes, 1 << 24, 1 << 24).unwrap(), vec![Saved { reg: reg(), last_update_ms: None }]);
    }

    /// Replayed with its saved time while within its timeout (30 s here; 120 s without one), not at all after.
    #[test]
    fn a_saved_broker_replays_with_its_own_last_update_time() {
        let at = |last, timeout| {
            let mut reg = reg();
            reg.heartbeat_timeout_ms = timeout;
            Saved { reg, last_update_ms: last }
        };
        assert_eq!(at(Some(1_000), Some(30_000)).replay_at(16_000), Some(1_000));
        assert_eq!(at(Some(1_000), Some(30_000)).replay_at(30_999), Some(1_000));
        assert_eq!(at(Some(1_000), Some(30_000)).replay_at(31_000), None, "at its deadline: gone");
        assert_eq!(at(Some(1_000), Some(30_000)).replay_at(31_001), None);
        assert_eq!(at(Some(1_000), None).replay_at(120_999), Some(1_000));
        assert_eq!(at(Some(1_000), None).replay_at(121_000), None);
        assert_eq!(at(Some(50_000), Some(30_000)).replay_at(40_000), Some(40_000), "a clock set back: now");
        assert_eq!(at(None, Some(30_000)).replay_at(99_000), Some(99_000), "an older file: as of the restart");
        assert_eq!(at(Some(i64::MAX - 1), Some(i64::MAX)).replay_at(5), Some(5));
    }

    /// A bootstrap answer: the registrations, then the KV entries as the PUT_KV_CONFIG frames that would make them.
    #[test]
    fn a_table_round_trips_brokers_and_kv() {
        let mut kv = KvTable::default();
        kv.put("ORDER_TOPIC_CONFIG", "T", Some("b:4"));
        kv.put("ns", "k", Some("v"));
        let bytes = encode_table(&[(reg(), 42)], Some(&kv));
        let table = decode_table(&bytes, 1 << 24, 1 << 24).unwrap();
        assert_eq!(table.brokers, vec![Saved { reg: reg(), last_update_ms: Some(42) }]);
        let kv: Vec<(&str, &str, &str)> =
            table.kv.iter().map(|(n, k, v)| (n.as_str(), k.as_str(), v.as_str())).collect();
        assert_eq!(kv, [("ORDER_TOPIC_CONFIG", "T", "b:4"), ("ns", "k", "v")]);
        assert_eq!(decode(&encode_table(&[(reg(), 42)], None), 1 << 24, 1 << 24).unwrap().len(), 1);
    }
}
