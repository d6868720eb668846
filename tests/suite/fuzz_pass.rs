//! A short, bounded fuzz pass that `cargo test` runs: the properties of `fuzz/checks.rs` (the same ones the cargo-fuzz
//! targets check) over the committed seeds in `fuzz/corpus/<target>/`, structure-aware mutations of those seeds, and
//! arbitrary bytes; plus the properties text round trip. The long runs are `cargo fuzz` (docs/fuzzing.md).

#[path = "../../fuzz/checks.rs"]
mod checks;

use std::io::{Read, Write};
use std::path::PathBuf;

use namesrv::protocol::{props, SerializeType};
use proptest::prelude::*;

/// A fuzz target's name (its folder under `fuzz/corpus`) and its check.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 9] = [
    ("frame", checks::frames),
    ("header_json", |d| checks::header(SerializeType::Json, d)),
    ("header_rocketmq", |d| checks::header(SerializeType::RocketMq, d)),
    ("json_reader", checks::json_reader),
    ("register_body", checks::register_body),
    ("properties", checks::properties),
    ("config_roundtrip", checks::config_roundtrip),
    ("acl_file", checks::acl_file),
    ("acl_signature", checks::acl_signature),
];

/// The committed seeds of a target, in name order (read once per test binary).
fn seeds(target: &str) -> &'static [Vec<u8>] {
    static ALL: std::sync::OnceLock<Vec<Vec<Vec<u8>>>> = std::sync::OnceLock::new();
    let all = ALL.get_or_init(|| TARGETS.iter().map(|(t, _)| read_seeds(t)).collect());
    &all[TARGETS.iter().position(|(t, _)| *t == target).expect("known target")]
}

fn read_seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-")))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no seeds in {}", dir.display());
    paths.iter().map(|p| std::fs::read(p).expect("read seed")).collect()
}

/// Tokens worth inserting: JSON syntax and the lenient forms, numbers at the edges, the words the decoders look for.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"'",
    b"\\",
    b"\\u",
    b"\\uD83D",
    b"\\x4",
    b"null",
    b"true",
    b"$ref",
    b"/*",
    b"//",
    b"\n",
    b"-",
    b"1e",
    b"9223372036854775808",
    b"-2147483649",
    b"0.5",
    b"12L",
    b"\xEF\xBB\xBF",
    b"\xFF",
    b"\xC3",
    b"SINGLE_TAG",
    b"topicName",
    b"dataVersion",
    b"extFields",
    b" ",
    b"=",
    b"\\\n",
    b"#",
    b"- ",
    b"accessKey: ",
    b"secretKey: ",
    b"whiteRemoteAddress: ",
    b"admin: true",
    b"*",
    b"{1,2}",
    b"1-5",
    b"::",
    b"\\n",
    b"\\u00e9",
    b"\\uD83D\\uDE00",
    b"\r",
    b"!",
    b"productEnvName=",
    b"someoneElsesKey=",
];

/// Big-endian words worth writing over a length or count field.
const WORDS: &[u32] =
    &[0, 1, 3, 4, 0x7F, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0x0100_0000, 0x00FF_FFFF];

/// One byte-level edit; positions and lengths are taken modulo the input.
#[derive(Clone, Debug)]
enum Edit {
    FlipBit(usize, u8),
    SetByte(usize, u8),
    InsertToken(usize, usize),
    Delete(usize, usize),
    Duplicate(usize, usize),
    SetWord(usize, usize),
    SpliceTail(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(p, b)| Edit::FlipBit(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::SetByte(p, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, t)| Edit::InsertToken(p, t)),
        (any::<usize>(), 1usize..32).prop_map(|(p, n)| Edit::Delete(p, n)),
        (any::<usize>(), 1usize..32).prop_map(|(p, n)| Edit::Duplicate(p, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, w)| Edit::SetWord(p, w)),
        (any::<usize>(), any::<usize>()).prop_map(|(p, s)| Edit::SpliceTail(p, s)),
    ]
}

fn apply(edits: &[Edit], mut data: Vec<u8>, others: &[Vec<u8>]) -> Vec<u8> {
    for e in edits {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % len };
        let len = data.len();
        match *e {
            Edit::FlipBit(p, b) if len > 0 => data[at(p, len)] ^= 1 << b,
            Edit::SetByte(p, v) if len > 0 => data[at(p, len)] = v,
            Edit::InsertToken(p, t) => {
                let pos = at(p, len + 1);
                data.splice(pos..pos, TOKENS[t % TOKENS.len()].iter().copied());
            }
            Edit::Delete(p, n) if len > 0 => {
                let pos = at(p, len);
                data.drain(pos..(pos + n).min(len));
            }
            Edit::Duplicate(p, n) if len > 0 => {
                let pos = at(p, len);
                let piece = data[pos..(pos + n).min(len)].to_vec();
                data.splice(pos..pos, piece);
            }
            Edit::SetWord(p, w) if len >= 4 => {
                let pos = at(p, len - 3);
                data[pos..pos + 4].copy_from_slice(&WORDS[w % WORDS.len()].to_be_bytes());
            }
            Edit::SpliceTail(p, s) => {
                let other = &others[s % others.len()];
                let from = at(p, other.len() + 1);
                data.truncate(at(p, len + 1));
                data.extend_from_slice(&other[from..]);
            }
            _ => {}
        }
    }
    data
}

/// Structure-aware: edit what is inside the container and rebuild the container, so the edits reach the inner
/// decoder instead of being refused at the outer layer. Frames: edit the header, keep the header word's type and
/// recompute both lengths. Zlib registration bodies: edit the inflated parts and deflate again.
fn mutate(target: &str, seed: &[u8], edits: &[Edit], others: &[Vec<u8>], inner: bool) -> Vec<u8> {
    if !inner {
        return apply(edits, seed.to_vec(), others);
    }
    match target {
        "frame" if seed.len() >= 8 => {
            let header_len = (u32::from_be_bytes([seed[4], seed[5], seed[6], seed[7]]) & 0x00FF_FFFF) as usize;
            let split = (8 + header_len).min(seed.len());
            let header = apply(edits, seed[8..split].to_vec(), others);
            let mut out = Vec::with_capacity(seed.len() + 64);
            out.extend_from_slice(&((4 + header.len() + seed.len() - split) as u32).to_be_bytes());
            out.extend_from_slice(&((u32::from(seed[4]) << 24) | (header.len() as u32 & 0x00FF_FFFF)).to_be_bytes());
            out.extend_from_slice(&header);
            out.extend_from_slice(&seed[split..]);
            out
        }
        "register_body" if seed.get(1) == Some(&0x78) => {
            let mut raw = Vec::new();
            if flate2::read::ZlibDecoder::new(&seed[1..]).read_to_end(&mut raw).is_err() {
                return apply(edits, seed.to_vec(), others);
            }
            let raw = apply(edits, raw, others);
            let mut enc = flate2::write::ZlibEncoder::new(vec![seed[0]], flate2::Compression::fast());
            enc.write_all(&raw).expect("in-memory write");
            enc.finish().expect("in-memory write")
        }
        _ => apply(edits, seed.to_vec(), others),
    }
}

/// Every seed is a real instance of what its target decodes (so mutations start from the interesting part of the
/// input space), and passes its check unchanged.
#[test]
fn seeds_decode_and_pass_their_checks() {
    let _turn = crate::heavy();
    use bytes::BytesMut;
    use namesrv::protocol::{body, frame, json, DEFAULT_MAX_FRAME};
    for (target, check) in TARGETS {
        for (i, seed) in seeds(target).iter().enumerate() {
            let ok = match target {
                "frame" => matches!(frame::decode(&mut BytesMut::from(&seed[..]), DEFAULT_MAX_FRAME), Ok(Some(_))),
                "header_json" | "header_rocketmq" => {
                    let t = if target == "header_json" { 0u32 } else { 1 };
                    let mut f = BytesMut::new();
                    f.extend_from_slice(&(seed.len() as u32 + 4).to_be_bytes());
                    f.extend_from_slice(&((t << 24) | seed.len() as u32).to_be_bytes());
                    f.extend_from_slice(seed);
                    matches!(frame::decode(&mut f, DEFAULT_MAX_FRAME), Ok(Some(_)))
                }
                "json_reader" => json::parse(seed).is_ok(),
                "register_body" => body::decode_register_broker_body(
                    &seed[1..],
                    seed[0] & 1 == 1,
                    checks::register_version(seed[0]),
                    checks::MAX_INFLATED,
                )
                .is_ok_and(|b| !b.topic_configs.is_empty()),
                "properties" | "config_roundtrip" => {
                    props::parse(&String::from_utf8_lossy(seed)).is_ok_and(|p| !p.is_empty())
                }
                "acl_file" => namesrv::acl::file::parse(&String::from_utf8_lossy(seed)).is_ok(),
                "acl_signature" => {
                    matches!(frame::decode(&mut BytesMut::from(&seed[..]), DEFAULT_MAX_FRAME), Ok(Some(_)))
                }
                _ => unreachable!(),
            };
            assert!(ok, "{target} seed #{i} does not decode");
            check(seed);
        }
    }
}

/// Parameters of the mutation pass: which target, which seed, the edits, whether to edit inside the container.
fn mutation_case() -> impl Strategy<Value = (usize, usize, Vec<Edit>, bool)> {
    (0..TARGETS.len(), any::<usize>(), proptest::collection::vec(edit(), 1..6), any::<bool>())
}

proptest! {
    // Bounded for `cargo test` (a few seconds in debug); the long runs are `cargo fuzz`.
    #![proptest_config(ProptestConfig { cases: 20000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_seeds_hold_the_properties((t, s, edits, inner) in mutation_case()) {
        let (target, check) = TARGETS[t];
        let all = seeds(target);
        let input = mutate(target, &all[s % all.len()], &edits, all, inner);
        check(&input);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_hold_the_properties(t in 0..TARGETS.len(), data in proptest::collection::vec(any::<u8>(), 0..512)) {
        (TARGETS[t].1)(&data);
    }

    /// `MixAll.properties2String` → `Properties.load` is the identity for what a configuration holds (keys without
    /// separators or escapes, values without leading blanks or backslashes, BMP text).
    #[test]
    fn properties_text_round_trips(
        pairs in proptest::collection::vec(("[A-Za-z0-9._\u{e9}-]{1,12}", "[A-Za-z0-9._/:;,=# \u{4e2d}\u{e9}-]{0,20}"), 0..8)
    ) {
        let pairs: Vec<(String, String)> =
            pairs.into_iter().map(|(k, v)| (k, v.trim_start().to_string())).collect();
        prop_assert_eq!(props::parse(&props::write(&pairs)).ok(), Some(pairs));
    }
}
