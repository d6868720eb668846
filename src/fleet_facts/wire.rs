//! FLEET_FACTS, the one request our servers answer for a fleet check (decision 0029): the asker sends a digest per
//! aspect in ext fields named after the aspects; the answer gives each aspect's digest and its items only where the
//! digest differs from the asker's. A fleet in agreement exchanges a few hundred bytes per check.
//!
//! Body: `{"brokers":{"digest":"<16 hex>","items":{name:value,…}},"topics":{…},"kv":{…},"config":{…}}`, standard
//! JSON (serde_json), `items` left out where the digests match.

use serde_json::Value;

use super::{Aspect, BodyError, Items};
use crate::state::PreparedFacts;

/// A request code of our own, far from RocketMQ's (its RequestCode tops out at 3543, BATCH_ACK_MESSAGE) and within
/// a `short`, as the ROCKETMQ header encodes codes. A Java name server answers REQUEST_CODE_NOT_SUPPORTED, which
/// sends the asker to the standard codes.
pub const FLEET_FACTS: i32 = 32_047;

/// The next code of ours: a peer's route table for a name server that starts empty (decision 0034), answered with
/// the frames that would rebuild it (`registration::saved`). Java answers REQUEST_CODE_NOT_SUPPORTED, as to FLEET_FACTS.
pub const FLEET_ROUTES: i32 = 32_048;

/// FLEET_ROUTES ext fields: the asker wants the KV entries too (`"true"`); the answer's wall clock, so the asker
/// turns each broker's last-update time into an age on its own clock (two hosts' clocks need not agree).
pub const WANT_KV: &str = "kv";
pub const PEER_NOW: &str = "namesrvNowMs";

pub(crate) fn hex(d: u64) -> String {
    format!("{d:016x}")
}

fn unhex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim(), 16).ok()
}

/// The digest the asker sent for `aspect`, if any.
pub(crate) fn asked_digest(ext: impl Fn(&str) -> Option<String>, aspect: Aspect) -> Option<u64> {
    ext(aspect.name()).as_deref().and_then(unhex)
}

/// The answer to FLEET_FACTS from `facts` (ours, `Facts::prepare`), given the asker's digests: the prepared JSON
/// copied in, nothing walked or serialized again.
pub(crate) fn answer(facts: &PreparedFacts, asked: impl Fn(Aspect) -> Option<u64>) -> Vec<u8> {
    let size: usize = facts.aspects.iter().flatten().map(|(_, items)| items.len() + 64).sum();
    let mut body = Vec::with_capacity(size + 2);
    body.push(b'{');
    for aspect in Aspect::ALL {
        let Some((d, items)) = &facts.aspects[aspect.index()] else { continue };
        if body.len() > 1 {
            body.push(b',');
        }
        // Aspect names and hex digits need no escaping.
        body.extend_from_slice(format!("\"{}\":{{\"digest\":\"{}\"", aspect.name(), hex(*d)).as_bytes());
        if asked(aspect) != Some(*d) {
            body.extend_from_slice(b",\"items\":");
            body.extend_from_slice(items);
        }
        body.push(b'}');
    }
    body.push(b'}');
    body
}

/// What a peer told about one aspect.
#[derive(Debug, PartialEq, Eq)]
pub enum Told {
    /// Nothing (the aspect was left out).
    Nothing,
    /// The same digest as ours: no item differs.
    Same,
    Items(Items),
}

/// Reads a FLEET_FACTS answer; `ours` holds the digests we sent.
pub(crate) fn read_answer(body: &[u8], ours: &[Option<u64>; 4]) -> Result<[Told; 4], BodyError> {
    let bad = |reason: &str| BodyError::Unreadable { what: "fleet facts", reason: reason.to_string() };
    let v: Value = serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| bad("not a JSON object"))?;
    let mut out = [Told::Nothing, Told::Nothing, Told::Nothing, Told::Nothing];
    for aspect in Aspect::ALL {
        let Some(entry) = obj.get(aspect.name()) else { continue };
        let d = entry.get("digest").and_then(Value::as_str).and_then(unhex);
        out[aspect.index()] = match entry.get("items") {
            Some(Value::Object(map)) => {
                Told::Items(map.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
            }
            Some(_) => return Err(bad("items is not an object")),
            None if d.is_some() && d == ours[aspect.index()] => Told::Same,
            None => return Err(bad("no items and a digest that is not ours")),
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet_facts::{digest, Facts};

    fn facts(kv: &[(&str, &str)]) -> Facts {
        let items: Items = kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Facts { aspects: [Some(Items::new()), Some(Items::new()), Some(items), None] }
    }

    #[test]
    fn matching_digests_send_no_items() {
        let ours = facts(&[("ns/k", "v")]);
        let digests = ours.aspects.clone().map(|a| a.as_ref().map(digest));
        let same = answer(&ours.prepare(), |a| digests[a.index()]);
        assert!(!String::from_utf8_lossy(&same).contains("items"), "{}", String::from_utf8_lossy(&same));
        let told = read_answer(&same, &digests).unwrap();
        assert!(told[..3].iter().all(|t| *t == Told::Same));
        assert_eq!(told[Aspect::Config.index()], Told::Nothing);

        let theirs = facts(&[("ns/k", "w")]);
        let told = read_answer(&answer(&theirs.prepare(), |a| digests[a.index()]), &digests).unwrap();
        assert_eq!(told[Aspect::Kv.index()], Told::Items([("ns/k".to_string(), "w".to_string())].into()));
        assert_eq!(told[Aspect::Brokers.index()], Told::Same);
        // Standard JSON, whatever the items hold.
        let odd = facts(&[("ns/\"k\"\n", "\u{1}v\\")]);
        let told = read_answer(&answer(&odd.prepare(), |_| None), &digests).unwrap();
        let odd_items: Items = [("ns/\"k\"\n".to_string(), "\u{1}v\\".to_string())].into();
        assert_eq!(told[Aspect::Kv.index()], Told::Items(odd_items));
    }

    #[test]
    fn garbage_is_an_error() {
        let none = [None; 4];
        assert!(read_answer(b"\xff\x00", &none).is_err());
        assert!(read_answer(b"[]", &none).is_err());
        assert!(read_answer(br#"{"kv":{"digest":"00"}}"#, &none).is_err());
        assert!(read_answer(br#"{"kv":{"items":[1]}}"#, &none).is_err());
    }
}
