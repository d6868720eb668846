//! Warm restart (opt-in with `routeSnapshotPath`): the route tables saved as the REGISTER_BROKER frames that would
//! rebuild them — one per live broker, in the wire format, so the file is read back by the same codec and
//! decoder as live traffic. At start the registrations are replayed as *provisional*: routes are served at once
//! (no TOPIC_NOT_EXIST after a restart, apache/rocketmq #5322) until each broker re-registers or its timeout
//! passes, and `/ready` says so meanwhile.

use std::path::Path;

use bytes::BytesMut;

use crate::handlers::broker;
use crate::protocol::frame;
use crate::state::routes::RegisterBroker;

/// The file's bytes: concatenated frames.
pub(crate) fn encode(regs: &[RegisterBroker]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for (i, r) in regs.iter().enumerate() {
        frame::encode(&broker::encode_register(r, i as i32), &mut out);
    }
    out.to_vec()
}

/// Why the warm-restart file could not be replayed; the writer then starts empty.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WarmError {
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    #[error("registration {at} cannot be applied: {source}")]
    Registration { at: usize, source: broker::RegisterError },
    #[error("truncated after {0} registrations")]
    Truncated(usize),
    #[error("{source} after {at} registrations")]
    Frame { at: usize, source: frame::FrameError },
}

/// Reads the registrations back; the first broken frame ends the file (a torn write loses only its tail).
pub(crate) fn decode(bytes: &[u8], max_frame: usize, max_inflated: usize) -> Result<Vec<RegisterBroker>, WarmError> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    loop {
        match frame::decode(&mut buf, max_frame) {
            Ok(Some(cmd)) => {
                let decoded = broker::decode_register(&cmd, max_inflated)
                    .map_err(|source| WarmError::Registration { at: out.len(), source })?;
                if let Some(r) = decoded {
                    out.push(r);
                }
            }
            Ok(None) if buf.is_empty() => return Ok(out),
            Ok(None) => return Err(WarmError::Truncated(out.len())),
            Err(source) => return Err(WarmError::Frame { at: out.len(), source }),
        }
    }
}

/// Loads the file if there is one; `Ok(empty)` when missing.
pub(crate) fn load(path: &Path, max_frame: usize, max_inflated: usize) -> Result<Vec<RegisterBroker>, WarmError> {
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes, max_frame, max_inflated),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(WarmError::Read(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DataVersion, RegisterBrokerBody, TopicConfig};

    #[test]
    fn round_trip_through_frames() {
        let reg = RegisterBroker {
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
        };
        let bytes = encode(&[reg.clone(), reg.clone()]);
        assert_eq!(decode(&bytes, 1 << 24, 1 << 24).unwrap(), vec![reg.clone(), reg]);
        assert!(decode(&bytes[..bytes.len() - 3], 1 << 24, 1 << 24).is_err());
        assert_eq!(decode(&[], 1 << 24, 1 << 24).unwrap(), vec![]);
    }
}
