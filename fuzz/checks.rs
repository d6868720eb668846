//! The properties checked on every input, shared by the cargo-fuzz targets (`fuzz/fuzz_targets/*.rs`) and the
//! bounded pass that `cargo test` runs (`tests/fuzz_pass.rs`), so both harnesses test exactly the same thing. Each
//! function takes raw bytes, must never panic on its own, and asserts its properties: a failed assertion is a
//! finding. See docs/fuzzing.md.

// Each fuzz target uses only one of these checks.
#![allow(dead_code)]

use bytes::BytesMut;
use namesrv::model::RegisterBrokerBody;
use namesrv::protocol::body::{decode_register_broker_body, encode_register_broker_body};
use namesrv::protocol::frame::{self, DEFAULT_MAX_FRAME};
use namesrv::protocol::json::{self, Value};
use namesrv::protocol::{props, LanguageCode, RemotingCommand, SerializeType};

/// The server's default `maxInflatedBody` (64 MiB): what a hostile zlib body can make a reactor inflate.
pub const MAX_INFLATED: usize = 64 * 1024 * 1024;

/// `MQVersion` ordinals of V3_0_11 and V5_0_0, where the RegisterBrokerBody layout changes.
const V3_0_11: i32 = 37;
const V5_0_0: i32 = 413;

/// A buffer of frames as a reactor sees it: decode frame after frame until more bytes are needed or one is broken.
/// Properties: no panic; "need more" consumes nothing; every decoded command survives encode → decode.
pub fn frames(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    loop {
        let before = buf.len();
        match frame::decode(&mut buf, DEFAULT_MAX_FRAME) {
            Ok(Some(cmd)) => {
                assert!(buf.len() < before, "a decoded frame consumed nothing");
                command_round_trips(&cmd);
            }
            Ok(None) => {
                assert_eq!(buf.len(), before, "an incomplete frame consumed bytes");
                return;
            }
            Err(_) => return,
        }
    }
}

/// One frame whose header is `header` in the given encoding and whose body is empty: reaches the header decoders
/// without the fuzzer having to discover the length prefix and header word.
pub fn header(serialize_type: SerializeType, header: &[u8]) {
    let mut data = Vec::with_capacity(header.len() + 8);
    // Both lengths fit: fuzz inputs are far below 16 MiB, and frames() rejects longer ones anyway.
    data.extend_from_slice(&(header.len() as u32 + 4).to_be_bytes());
    data.extend_from_slice(&(((serialize_type as u32) << 24) | (header.len() as u32 & 0x00FF_FFFF)).to_be_bytes());
    data.extend_from_slice(header);
    frames(&data);
    if serialize_type == SerializeType::Json {
        json_header_fast_agrees_with_lenient(header);
    }
}

/// The serde fast path for JSON headers and the lenient decoder read a header the same way; a BOM in front sends the
/// same header down the lenient path alone (as for registration bodies, `fast_agrees_with_lenient`).
fn json_header_fast_agrees_with_lenient(header: &[u8]) {
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    if header.starts_with(&BOM) {
        return; // a second BOM is not skipped
    }
    let one = |h: &[u8]| {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(h.len() as u32 + 4).to_be_bytes());
        buf.extend_from_slice(&(h.len() as u32 & 0x00FF_FFFF).to_be_bytes());
        buf.extend_from_slice(h);
        frame::decode(&mut buf, usize::MAX).ok().flatten()
    };
    let plain = one(header);
    let lenient = one(&[&BOM[..], header].concat());
    if plain.is_some() || lenient.is_some() {
        assert_eq!(plain, lenient, "the JSON header fast path and the lenient decoder disagree");
    }
}

/// decode(encode(cmd)) = cmd, except what a binary header cannot carry (Java's `RocketMQSerializable` alike): an
/// unknown language (written as JAVA), and ext fields that are present but empty (a block of only null keys or
/// values decodes to an empty map, and an empty map is written as length 0, which decodes to none).
fn command_round_trips(cmd: &RemotingCommand) {
    let mut out = BytesMut::new();
    frame::encode(cmd, &mut out);
    let again = frame::decode(&mut out, usize::MAX)
        .unwrap_or_else(|e| panic!("re-encoded {cmd:?} does not decode: {e}"))
        .unwrap_or_else(|| panic!("re-encoded {cmd:?} is incomplete"));
    assert!(out.is_empty(), "re-encoded frame left {} bytes", out.len());
    let mut want = cmd.clone();
    if want.serialize_type == SerializeType::RocketMq {
        want.language = Some(want.language.unwrap_or(LanguageCode::Java));
        want.ext_fields = want.ext_fields.filter(|e| !e.is_empty());
    }
    assert_eq!(again, want, "encode → decode changed the command");
}

/// The tolerant JSON reader: no panic; it reads its own output back to the same value; and wherever serde_json
/// accepts the input, it reads the same document (serde_json keeps the last of duplicate keys, as `Value::get`).
pub fn json_reader(data: &[u8]) {
    let ours = json::parse(data);
    if let Ok(v) = &ours {
        let text = v.to_json_text();
        assert_eq!(json::parse(text.as_bytes()).as_ref(), Ok(v), "re-reading {text:?}");
    }
    if let Ok(theirs) = serde_json::from_slice::<serde_json::Value>(data) {
        let ours = ours.unwrap_or_else(|e| panic!("serde_json reads it as {theirs}, we fail: {e}"));
        assert_eq!(to_serde(&ours), theirs);
    }
}

fn to_serde(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Null => J::Null,
        Value::Bool(b) => J::Bool(*b),
        // Only reached when serde_json accepted the whole document, so it accepts each number's text too.
        Value::Number(t) => serde_json::from_str(t).unwrap_or_else(|e| panic!("number {t:?}: {e}")),
        Value::String(s) => J::String(s.clone()),
        Value::Array(items) => J::Array(items.iter().map(to_serde).collect()),
        Value::Object(members) => J::Object(members.iter().map(|(k, v)| (k.clone(), to_serde(v))).collect()),
    }
}

/// The request `version` a selector byte stands for: one on each side of both layout changes.
pub fn register_version(selector: u8) -> i32 {
    match (selector >> 1) % 3 {
        0 => V3_0_11 - 1,
        1 => 407, // V4_9_7, what the captured 4.9.7 broker sends
        _ => 513, // V5_5_0
    }
}

/// REGISTER_BROKER bodies. The first byte picks `compressed` (bit 0) and the request version
/// (`register_version`); the rest is the body. Properties: no panic, and a decoded body re-encoded the way a
/// broker of that version sends it decodes to the same body (modulo what that layout cannot carry).
pub fn register_body(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let compressed = selector & 1 == 1;
    let version = register_version(selector);
    fast_agrees_with_lenient(body, version);
    let Ok(decoded) = decode_register_broker_body(body, compressed, version, MAX_INFLATED) else {
        return;
    };
    // Which decoder ran: the same sniffing as decode_register_broker_body.
    let zlib = matches!(body.first(), Some(&0x78)) || (compressed && body.first() != Some(&b'{'));
    let want = carried(decoded, zlib, version);
    let bytes = encode_register_broker_body(&want, zlib, version);
    let again = decode_register_broker_body(&bytes, zlib, version, MAX_INFLATED)
        .unwrap_or_else(|e| panic!("re-encoded {want:?} does not decode: {e}"));
    assert_eq!(again, want, "encode → decode changed the body");
}

/// The fast paths (strict JSON, tried first: the scanner for the usual shape, then serde) and the lenient decoder
/// must read a JSON body the same way. A UTF-8 byte-order mark in front makes both fast paths refuse the body, and
/// the lenient reader skips it, so the same JSON with a BOM is decoded by the lenient path alone.
fn fast_agrees_with_lenient(body: &[u8], version: i32) {
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    if body.is_empty() || body[0] == 0x78 || body.starts_with(&BOM) {
        return; // empty is not JSON, 0x78 is sniffed as zlib, a second BOM is not skipped
    }
    let plain = decode_register_broker_body(body, false, version, MAX_INFLATED);
    let lenient = decode_register_broker_body(&[&BOM[..], body].concat(), false, version, MAX_INFLATED);
    if plain.is_ok() || lenient.is_ok() {
        assert_eq!(plain.ok(), lenient.ok(), "the fast path and the lenient decoder disagree");
    }
}

/// What survives an encode in the given layout.
fn carried(mut b: RegisterBrokerBody, zlib: bool, version: i32) -> RegisterBrokerBody {
    if version < V5_0_0 {
        // 4.x DataVersion has no stateVersion; 4.x bodies have no mapping section.
        b.data_version.state_version = 0;
        b.mapping_infos.clear();
    }
    if zlib {
        // `TopicConfig.encode()` text has no topicSysFlag; the filter list is always written, `[]` for none.
        b.topic_configs.iter_mut().for_each(|tc| tc.topic_sys_flag = 0);
        b.filter_server_list.get_or_insert_with(Vec::new);
    } else if version < V3_0_11 {
        // A bare TopicConfigSerializeWrapper: no filter list.
        b.filter_server_list = None;
    }
    b
}

/// Properties text (the `-c` file, UPDATE_NAMESRV_CONFIG bodies): no panic on any UTF-8 (the handler turns a
/// body into text lossily first, so that is what reaches the parser).
pub fn properties(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = props::parse(&text);
}

/// UPDATE_NAMESRV_CONFIG's round trip through the config file: the body as the handler reads it (lossy UTF-8),
/// against a configuration whose `-c` file had extra keys with hard names. Properties: no panic; if the update is
/// accepted (`Config::screen_update`), its pairs written as `props::store` writes them read back as the same pairs,
/// and the configuration it makes, written as the file is (`Config::file_text`), reads back as the entries it wrote,
/// with the same keys as before the update.
pub fn config_roundtrip(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(pairs) = props::parse(&text) else {
        return;
    };
    let mut base = namesrv::config::Config::default();
    for key in ["someoneElsesKey", "x y=z:#!", "x\u{e9}\u{1F600}"] {
        base.extra.insert(key.to_string(), "v".to_string());
    }
    if base.screen_update(&pairs).is_err() {
        return;
    }
    assert_eq!(props::parse(&props::store(&pairs)).ok().as_ref(), Some(&pairs), "store then parse: {text:?}");
    let after = base.with_update(pairs).config;
    let written = props::parse(&after.file_text()).expect("a stored file parses");
    assert_eq!(written, after.persisted_entries(), "the file reads back as written: {text:?}");
    let keys = |entries: Vec<(String, String)>| entries.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(written), keys(base.persisted_entries()), "an update adds or removes no key: {text:?}");
}

/// The account file (`plain_acl.yml`, as UTF-8 text). Properties: no panic; a file that loads has patterns that
/// print and parse back to themselves and match addresses without panicking; an error never repeats a secret key
/// that the file gave (the text after `secretKey:` on any line).
pub fn acl_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match namesrv::acl::file::parse(&text) {
        Ok(acl) => {
            let patterns = acl.global_white.iter().chain(acl.accounts.values().filter_map(|a| a.white.as_ref()));
            for p in patterns {
                address_pattern_round_trips(p);
            }
        }
        Err(e) => {
            // The whole message as the log shows it (the Display of AclParseError includes its sources).
            let e = e.to_string();
            // A secret is the value of a line that *is* a `secretKey:` entry (text elsewhere that merely contains
            // the word is not a secret). Other lines' text (access keys, patterns) is named in errors on purpose;
            // a secret that also stands in one of them is not leaked by that.
            let secret_of = |line: &str| {
                let t = line.trim_start().trim_start_matches("- ").trim_start();
                t.strip_prefix("secretKey:").map(|v| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
            };
            let others: Vec<&str> = text.lines().filter(|l| secret_of(l).is_none()).collect();
            for secret in text.lines().filter_map(secret_of) {
                let named = others.iter().any(|l| l.contains(&secret));
                assert!(secret.len() < 7 || named || !e.contains(&secret), "error shows a secret: {e}");
            }
        }
    }
    // Every line is also tried as an address pattern on its own.
    for line in text.lines().take(64) {
        if let Ok(p) = namesrv::acl::address::AddressPattern::parse(line) {
            address_pattern_round_trips(&p);
        }
    }
}

fn address_pattern_round_trips(p: &namesrv::acl::address::AddressPattern) {
    use namesrv::acl::address::AddressPattern;
    let again = AddressPattern::parse(&p.to_string()).unwrap_or_else(|e| panic!("{p} does not parse back: {e}"));
    assert_eq!(&again, p);
    for peer in ["127.0.0.1", "10.10.103.7", "255.255.255.255", "::1", "::ffff:10.0.0.1", "1050::5:600:300c:326b"] {
        let _ = p.matches(peer.parse().expect("valid address"));
    }
}

/// A signed request as the server checks it: the input is a buffer of frames. Properties: the check never panics
/// on any decoded request; the request signed (as `AclClientRPCHook` signs) by a known account passes for reads;
/// any change to its body or to one of its ext values after signing fails it.
pub fn acl_signature(data: &[u8]) {
    use namesrv::acl::{file, signature, Caller};
    let acl = file::parse("accounts:\n  - {accessKey: fuzzer01, secretKey: fuzzsecret, admin: false}\n")
        .expect("the fixed account file loads");
    let peer: std::net::IpAddr = "203.0.113.9".parse().expect("valid address");
    let mut buf = BytesMut::from(data);
    while let Ok(Some(cmd)) = frame::decode(&mut buf, DEFAULT_MAX_FRAME) {
        let _ = acl.check(peer, &cmd, true);
        let mut signed = cmd.clone();
        if let Some(ext) = signed.ext_fields.as_mut() {
            ext.0.retain(|(k, _)| k != signature::ACCESS_KEY && k != signature::SIGNATURE);
        }
        signed = signed.with_ext(signature::ACCESS_KEY, "fuzzer01");
        let sig = signature::sign(signed.ext_fields.as_ref().expect("has AccessKey"), &signed.body, b"fuzzsecret");
        signed = signed.with_ext(signature::SIGNATURE, sig);
        assert_eq!(acl.check(peer, &signed, false), Ok(Caller::Account("fuzzer01")));
        let mut tampered = signed.clone();
        let mut body = tampered.body.to_vec();
        body.push(b'x');
        tampered.body = body.into();
        assert!(acl.check(peer, &tampered, false).is_err(), "an extended body still passes");
        if let Some(ext) = signed.ext_fields.as_mut() {
            // The last occurrence of a key is the one signed (Java's HashMap keeps the last).
            let last = ext.0.iter_mut().rev().find(|(k, _)| k != signature::SIGNATURE && k != signature::ACCESS_KEY);
            if let Some((_, v)) = last {
                v.push('x');
                assert!(acl.check(peer, &signed, false).is_err(), "a changed ext value still passes");
            }
        }
    }
}
