//! The mark on the requests this name server signs itself (AUTH_LIST_USER to brokers, the fleet check to peer name
//! servers), so that whoever receives one cannot replay it to us.
//!
//! `AclClientRPCHook`'s signature covers the ext fields and the body, not the request code. A request we sign with
//! `innerClientAuthenticationCredentials` (a Super user here) and no field of its own would be one constant
//! signature that its receiver could send back to us under any code — UPDATE_NAMESRV_CONFIG, PUT_KV_CONFIG — and be
//! taken for the inner Super user. So every request we sign carries `MARK`: the code it was signed for, the time
//! and a nonce, all covered by the signature. Inbound, a request carrying `MARK` is refused unless it is a read
//! whose code is the one the mark names: a peer name server's fleet check (FLEET_FACTS and the standard reads) still
//! gets through; a broker's copy of our AUTH_LIST_USER, replayed as anything that changes state or under another
//! code, does not. Pure: the nonce comes from std's randomly keyed hasher, no I/O.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::protocol::RemotingCommand;

/// The ext field of the mark. Our own name: no RocketMQ client, broker or proxy sends it.
pub const MARK: &str = "namesrvOutboundMark";

/// Stamps `cmd` with a fresh mark for its code; sign it afterwards ([`crate::remoting::Conn::ask`] does).
pub fn stamp(cmd: RemotingCommand, now_ms: i64) -> RemotingCommand {
    let code = cmd.code;
    cmd.with_ext(MARK, format!("{code}.{now_ms}.{:016x}{:016x}", nonce(), nonce()))
}

/// Why an inbound request carrying the mark is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Replayed {
    /// A write: we never send one signed with the mark, so it can only be a replay.
    #[error("request {code} carries the mark of a request this name server signed; writes never do")]
    Write { code: i32 },
    /// The mark names another code than the request's.
    #[error("request {code} carries the mark of a request this name server signed for another code")]
    OtherCode { code: i32 },
}

/// `Ok` for a request without the mark, or a read with a mark for its own code; `write` as `Acl::check` has it.
pub fn admit(req: &RemotingCommand, write: bool) -> Result<(), Replayed> {
    let Some(ext) = req.ext_fields.as_ref() else { return Ok(()) };
    // Every occurrence counts (a repeated key is signed once, the last one, but any copy is a claim to be ours).
    let mut marks = ext.0.iter().filter(|(k, _)| k == MARK).peekable();
    if marks.peek().is_none() {
        return Ok(());
    }
    if write {
        return Err(Replayed::Write { code: req.code });
    }
    for (_, v) in marks {
        let signed_for = v.split('.').next().and_then(|c| c.parse::<i32>().ok());
        if signed_for != Some(req.code) {
            return Err(Replayed::OtherCode { code: req.code });
        }
    }
    Ok(())
}

/// 64 bits that differ between calls and between processes: std's `RandomState` is keyed from the OS at the first
/// use on a thread; a counter makes two calls on one thread differ. Unique, not secret: the signature, not the
/// nonce, is what a replayer lacks.
fn nonce() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Relaxed));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_admits_only_the_read_it_was_made_for() {
        let marked = stamp(RemotingCommand::request(3005, 1), 1_700_000_000_000);
        let mark = marked.ext_fields.as_ref().unwrap().get(MARK).unwrap().to_string();
        assert!(mark.starts_with("3005.1700000000000."), "{mark}");
        assert_eq!(admit(&marked, false), Ok(()));
        let as_code = |code: i32| RemotingCommand { code, ..marked.clone() };
        assert_eq!(admit(&as_code(106), false), Err(Replayed::OtherCode { code: 106 }));
        assert_eq!(admit(&as_code(318), true), Err(Replayed::Write { code: 318 }));
        assert_eq!(admit(&as_code(3005), true), Err(Replayed::Write { code: 3005 }));
        let junk = RemotingCommand::request(106, 1).with_ext(MARK, "x");
        assert_eq!(admit(&junk, false), Err(Replayed::OtherCode { code: 106 }));
        assert_eq!(admit(&RemotingCommand::request(106, 1).with_ext("topic", "t"), true), Ok(()));
    }

    #[test]
    fn every_mark_is_new() {
        let a = stamp(RemotingCommand::request(3005, 1), 5);
        let b = stamp(RemotingCommand::request(3005, 1), 5);
        assert_ne!(a.ext_fields.unwrap().get(MARK), b.ext_fields.unwrap().get(MARK));
    }
}
