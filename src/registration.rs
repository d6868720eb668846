//! The REGISTER_BROKER request ↔ `RegisterBroker`: the CRC, the body and the fields Java reads, both ways. Pure (no
//! I/O, no clock). The handlers decode with it on a reactor or the decoder thread; the warm-restart file is written
//! and read back with it (`crate::warm`). Its own module, below both, so that neither imports the other.

pub(crate) mod saved;

use crate::model::{RegisterBrokerBody, SameBody};
use crate::protocol::{body, RemotingCommand};
use crate::state::routes::{RegisterBroker, RouteView};
use crate::write_command::RegisterBody;

/// Why a REGISTER_BROKER is answered SYSTEM_ERROR; the text is the remark.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RegisterError {
    /// Java's remark.
    #[error("crc32 not match")]
    CrcMismatch,
    #[error(transparent)]
    Body(#[from] body::BodyError),
    /// Java unboxes a null brokerId and answers with the NullPointerException text; ours says what is wrong.
    #[error("brokerId is missing or not a number")]
    NoBrokerId,
}

/// Decodes a REGISTER_BROKER request (also used to replay the warm-restart file). `Err` = SYSTEM_ERROR with its
/// text as the remark; `Ok(None)` = a request Java answers SUCCESS without changing anything; the result has no
/// connection.
pub(crate) fn decode_register(
    req: &RemotingCommand,
    max_inflated: usize,
) -> Result<Option<RegisterBroker>, RegisterError> {
    decode_register_against(req, max_inflated, None, &|| {}).map(|r| r.map(|(reg, _)| reg))
}

/// `decode_register`, recognising the body as the broker's last one (at a new DataVersion) when `routes` holds
/// its mark: then the body is not decoded (`RegisterBody::Same`; `crate::state::routes::register_same`). `give_way` as
/// for `body::decode_register_broker_body_marked`.
pub(crate) fn decode_register_against(
    req: &RemotingCommand,
    max_inflated: usize,
    routes: Option<&RouteView>,
    give_way: &dyn Fn(),
) -> Result<Option<(RegisterBroker, RegisterBody)>, RegisterError> {
    let expected_crc = req.ext_i32("bodyCrc32").unwrap_or(0);
    if expected_crc != 0 && crc32_masked(&req.body) != expected_crc {
        return Err(RegisterError::CrcMismatch);
    }
    let compressed = req.ext_bool("compressed");
    let (cluster, addr, name) = (req.ext("clusterName"), req.ext("brokerAddr"), req.ext("brokerName"));
    let known = match (routes, cluster, addr) {
        (Some(routes), Some(cluster), Some(addr)) => {
            routes.body_mark(cluster, addr).filter(|m| m.version == req.version)
        }
        _ => None,
    };
    let same = known
        .and_then(|m| Some((m, body::same_register_body(&req.body, compressed, &m.mark, max_inflated, give_way)?)));
    let (decoded, kind) = match same {
        Some((m, data_version)) => {
            let same = SameBody {
                mark: m.mark,
                raw: req.body.clone(),
                compressed,
                version: req.version,
                topics: m.topic_count,
            };
            (RegisterBrokerBody { data_version, ..Default::default() }, RegisterBody::Same(Box::new(same)))
        }
        None => {
            let (decoded, mark) =
                body::decode_register_broker_body_marked(&req.body, compressed, req.version, max_inflated, give_way)?;
            (decoded, RegisterBody::Decoded { mark, version: req.version })
        }
    };
    let broker_id = req.ext_i64("brokerId").ok_or(RegisterError::NoBrokerId)?;
    let (Some(cluster), Some(addr), Some(name)) = (cluster, addr, name) else {
        return Ok(None);
    };
    let reg = RegisterBroker {
        cluster_name: cluster.to_string(),
        broker_addr: addr.to_string(),
        broker_name: name.to_string(),
        broker_id,
        ha_server_addr: req.ext("haServerAddr").unwrap_or_default().to_string(),
        zone_name: req.ext("__ZONE_NAME").map(str::to_string),
        heartbeat_timeout_ms: req.ext_i64("heartbeatTimeoutMillis"),
        enable_acting_master: req.ext_opt_bool("enableActingMaster"),
        body: decoded,
        conn: None,
    };
    Ok(Some((reg, kind)))
}

/// The REGISTER_BROKER request a broker would send for `reg` (JSON body with its CRC); the inverse of
/// `decode_register`.
pub(crate) fn encode_register(reg: &RegisterBroker, opaque: i32) -> RemotingCommand {
    encode_register_as(reg, opaque, crate::protocol::command::SERVER_VERSION)
}

/// `encode_register` as a broker of release `version` sends it (the body layout and the request version follow
/// it: 4.9 and 5.x bodies differ).
#[doc(hidden)]
pub fn encode_register_as(reg: &RegisterBroker, opaque: i32, version: i32) -> RemotingCommand {
    let bytes = body::encode_register_broker_body(&reg.body, false, version);
    let mut cmd = RemotingCommand::request(crate::protocol::RequestCode::REGISTER_BROKER, opaque)
        .with_ext("brokerName", reg.broker_name.clone())
        .with_ext("brokerAddr", reg.broker_addr.clone())
        .with_ext("clusterName", reg.cluster_name.clone())
        .with_ext("haServerAddr", reg.ha_server_addr.clone())
        .with_ext("brokerId", reg.broker_id.to_string())
        .with_ext("compressed", "false")
        .with_ext("bodyCrc32", crc32_masked(&bytes).to_string());
    if let Some(t) = reg.heartbeat_timeout_ms {
        cmd = cmd.with_ext("heartbeatTimeoutMillis", t.to_string());
    }
    if let Some(e) = reg.enable_acting_master {
        cmd = cmd.with_ext("enableActingMaster", e.to_string());
    }
    if let Some(z) = &reg.zone_name {
        cmd = cmd.with_ext("__ZONE_NAME", z.clone());
    }
    cmd.version = version;
    cmd.with_body(bytes)
}

/// `UtilAll.crc32`: CRC-32 (IEEE) masked to 31 bits.
pub fn crc32_masked(bytes: &[u8]) -> i32 {
    (crc32fast::hash(bytes) & 0x7FFF_FFFF) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_is_masked_to_31_bits() {
        // crc32("123456789") = 0xCBF43926; masked = 0x4BF43926.
        assert_eq!(crc32_masked(b"123456789"), 0x4BF4_3926);
    }
}
