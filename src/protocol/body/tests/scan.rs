//! The one-pass scanner for registration bodies (`scan`, the quickest path; decision 0019) against the serde fast
//! path and the lenient decoder, whose body and mark it must give wherever it answers: what it takes, what it leaves
//! to them, and bodies from real brokers.

use proptest::prelude::*;

use super::super::scan::Topics;
use super::super::*;
use super::{arb_body, MB};

/// What the scanner leaves to the other decoders: each body is one edit away from one it reads.
#[test]
fn the_scanner_refuses_all_but_the_narrow_shape() {
    let base = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":17},"topicConfigTable":{"t":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"t","topicSysFlag":0,"writeQueueNums":4}}}}"#;
    assert!(super::super::scan::decode(base.as_bytes()).is_some(), "the base body is the scanner's");
    for (from, to) in [
        (r#""perm":6"#, r#""perm":06"#),
        (r#""perm":6"#, r#""perm":6.0"#),
        (r#""perm":6"#, r#""perm":6e0"#),
        (r#""perm":6"#, r#""perm":"6""#),
        (r#""perm":6"#, r#""perm":null"#),
        (r#""perm":6"#, r#""perm":2147483648"#),
        (r#""perm":6"#, r#""perm":6,"perm":2"#),
        (r#""counter":3"#, r#""counter":3,"counter":4"#),
        (r#""topicName":"t""#, r#""topicName":"\u0074""#),
        (r#""topicName":"t""#, "\"topicName\":\"t\u{1}\""),
        (r#""attributes":{}"#, r#""attributes":{"a":"b"}"#),
        (r#""order":false"#, r#""order":0"#),
        (r#""order":false"#, r#""order":false,"x":1"#),
        (r#""filterServerList":[]"#, r#""filterServerList":[1]"#),
        (r#""filterServerList":[]"#, r#""filterServerList":[],"filterServerList":null"#),
        (r#""dataVersion":{"#, r#""topicQueueMappingInfoMap":{"t":{}},"dataVersion":{"#),
        (r#"{"counter""#, r#"["counter""#),
    ] {
        let body = base.replacen(from, to, 1);
        assert_ne!(body, base);
        assert!(super::super::scan::decode(body.as_bytes()).is_none(), "{body}");
        let lenient = super::super::register::decode_lenient(body.as_bytes(), 479);
        assert_eq!(decode_register_broker_body(body.as_bytes(), false, 479, MB), lenient, "{body}");
    }
}

/// Why the serde path is kept between the scanner and the lenient decoder (`register.rs`): a body the scanner
/// leaves — here one topic with attributes, an unknown key, an escaped name — is still taken by serde with its mark,
/// so the broker's next unchanged body is recognised; the lenient decoder reads it the same, but gives no mark.
#[test]
fn bodies_the_scanner_leaves_keep_their_mark_through_serde() {
    let base = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":17},"topicConfigTable":{"t":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"t","topicSysFlag":0,"writeQueueNums":4}}}}"#;
    for (from, to) in [
        (r#""attributes":{}"#, r#""attributes":{"+message.type":"FIFO"}"#),
        (r#""order":false"#, r#""order":false,"x":1"#),
        (r#""topicName":"t""#, r#""topicName":"\u0074""#),
    ] {
        let body = base.replacen(from, to, 1);
        assert!(super::super::scan::decode(body.as_bytes()).is_none(), "{body}");
        let (decoded, mark) = decode_register_broker_body_marked(body.as_bytes(), false, 479, MB, &|| {}).unwrap();
        assert!(mark.is_some(), "no mark for {body}");
        assert_eq!(decoded, super::super::register::decode_lenient(body.as_bytes(), 479).unwrap(), "{body}");
        let next = body.replacen(r#""counter":3"#, r#""counter":4"#, 1);
        let dv = same_register_body(next.as_bytes(), false, mark.as_ref().unwrap(), MB, &|| {});
        assert_eq!(dv.map(|dv| dv.counter), Some(4), "the next unchanged body is not recognised: {next}");
    }
}

/// Bodies captured from real brokers (Java 5.5.0 and 4.9.7, fuzz/capture): the scanner reads them, as the other
/// decoders do — so it is the path real registrations take.
#[test]
fn the_scanner_reads_bodies_captured_from_java_brokers() {
    let five = include_bytes!("../../../../fuzz/corpus/register_body/seed-captured-244d21cae809");
    let four = include_bytes!("../../../../fuzz/corpus/register_body/seed-captured-c6e3d272cde2");
    for (seed, version) in [(&five[..], 513), (&four[..], 409)] {
        // A fuzz seed's first byte picks the decoder's options; the body follows.
        let body = &seed[1..];
        let (scanned, mark) = super::super::scan::decode(body).expect("a real broker's body is the scanner's");
        assert!(mark.is_some());
        assert!(!scanned.topic_configs.is_empty());
        assert_eq!(super::super::fast::decode(body), Some((scanned.clone(), mark)));
        assert_eq!(Ok(scanned.clone()), super::super::register::decode_lenient(body, version));
        // Every topic is in the exact layout the quick reading takes, and reads as the general reading has it.
        let as_written =
            super::super::scan::decode_with(body, Topics::AsWrittenOnly, &|| {}).expect("fastjson's own layout");
        assert_eq!(as_written, (scanned, mark));
        assert_eq!(super::super::scan::decode_with(body, Topics::General, &|| {}), Some(as_written));
    }
}

proptest! {
    /// The scanner reads every mapping-free body a broker writes, 5.x and 4.9 shape, with the serde path's result
    /// and mark, and the lenient decoder's body.
    #[test]
    fn scanner_takes_what_brokers_write_as_the_other_decoders_read_it(
        body in arb_body(),
        five in any::<bool>(),
        pad in any::<bool>(),
    ) {
        let version = if five { 479 } else { 409 };
        let mut bytes = encode_register_broker_body(&body, false, version);
        if pad {
            bytes.extend_from_slice(b" \n");
        }
        let scanned = super::super::scan::decode(&bytes);
        if five && !body.mapping_infos.is_empty() {
            prop_assert!(scanned.is_none(), "a static-topic mapping is not the scanner's");
        } else {
            let scanned = scanned.expect("the scanner reads what a broker writes");
            // Each topic in fastjson's layout, read the quick way as the general way reads it.
            prop_assert_eq!(super::super::scan::decode_with(&bytes, Topics::AsWrittenOnly, &|| {}), Some(scanned.clone()));
            prop_assert_eq!(super::super::scan::decode_with(&bytes, Topics::General, &|| {}), Some(scanned.clone()));
            prop_assert_eq!(Some(scanned.clone()), super::super::fast::decode(&bytes));
            prop_assert_eq!(Ok(scanned.0), super::super::register::decode_lenient(&bytes, version));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    /// One byte of a broker's body changed, inserted or removed — a JSON-significant byte most of the time: the
    /// scanner either refuses the result or reads it as the serde path and the lenient decoder do.
    #[test]
    fn scanner_never_disagrees_on_an_edited_body(
        body in arb_body(),
        five in any::<bool>(),
        at in any::<proptest::sample::Index>(),
        edit in 0..3u8,
        byte in proptest::sample::select(b"{}[]\",:0123456789-.eE \\nultrfasx\x01".to_vec()),
    ) {
        let version = if five { 479 } else { 409 };
        let mut bytes = encode_register_broker_body(&body, false, version);
        let i = at.index(bytes.len());
        match edit {
            0 => bytes[i] = byte,
            1 => bytes.insert(i, byte),
            _ => {
                bytes.remove(i);
            }
        }
        if let Some(scanned) = super::super::scan::decode(&bytes) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // serde reads `-0` as a float and refuses it where an integer is due; the others read 0.
            if let Some(fast) = super::super::fast::decode(&bytes) {
                prop_assert_eq!(&scanned, &fast, "{}", text);
            }
            prop_assert_eq!(Ok(scanned.0), super::super::register::decode_lenient(&bytes, version), "{}", text);
        }
    }
}
