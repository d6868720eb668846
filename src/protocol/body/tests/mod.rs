use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::model::{BrokerData, TopicConfig, TopicQueueMappingInfo};

mod scan;

pub(super) const MB: usize = 1024 * 1024;

fn broker_a(zone: Option<&str>) -> Arc<BrokerData> {
    Arc::new(BrokerData {
        cluster: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_addrs: BTreeMap::from([(0, "192.168.0.1:10911".to_string()), (1, "192.168.0.2:10911".to_string())]),
        zone_name: zone.map(str::to_string),
        enable_acting_master: false,
    })
}

fn queue_a() -> QueueData {
    QueueData { broker_name: "broker-a".into(), read_queue_nums: 4, write_queue_nums: 4, perm: 6, topic_sys_flag: 0 }
}

fn simple_route() -> TopicRouteData {
    TopicRouteData { queue_datas: vec![queue_a()], broker_datas: vec![broker_a(None)], ..Default::default() }
}

fn full_route() -> TopicRouteData {
    let info = TopicQueueMappingInfo {
        topic: Some("T".into()),
        scope: Some("__global__".into()),
        total_queues: 2,
        bname: Some("broker-a".into()),
        epoch: 9_007_199_254_740_993,
        dirty: false,
        curr_id_map: Some(BTreeMap::from([(0, 0), (1, 1)])),
    };
    TopicRouteData {
        queue_datas: vec![queue_a()],
        broker_datas: vec![broker_a(Some("zone-\u{4e2d}/x"))],
        filter_server_table: BTreeMap::from([("192.168.0.1:10911".into(), vec!["f1:1".into()])]),
        order_topic_conf: Some("broker-a:4".into()),
        topic_queue_mapping_by_broker: Some(BTreeMap::from([("broker-a".into(), Arc::new(info))])),
    }
}

fn route_text(route: &TopicRouteData, dialect: Dialect) -> String {
    let mut out = Vec::new();
    encode_topic_route(route, dialect, &mut out);
    String::from_utf8(out).unwrap()
}

const QUEUE_A: &str = r#"{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}"#;

#[test]
fn route_examples_of_the_reference() {
    assert_eq!(
        route_text(&simple_route(), Dialect::Default),
        r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    assert_eq!(
        route_text(&simple_route(), Dialect::Standard),
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.1:10911","1":"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    let standard = format!(
        "{}{}{}",
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.1:10911","1":"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false,"zoneName":"zone-中/x"}],"filterServerTable":{"192.168.0.1:10911":["f1:1"]},"orderTopicConf":"broker-a:4","queueDatas":["#,
        QUEUE_A,
        r#"],"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{"0":0,"1":1},"dirty":false,"epoch":"9007199254740993","scope":"__global__","topic":"T","totalQueues":2}}}"#
    );
    assert_eq!(route_text(&full_route(), Dialect::Standard), standard);
    // Default dialect of the same, as printed by fastjson 1.2.83 for the Java beans.
    let default = format!(
        "{}{}{}",
        "{\"brokerDatas\":[{\"brokerAddrs\":{0:\"192.168.0.1:10911\",1:\"192.168.0.2:10911\"},\"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false,\"zoneName\":\"zone-\u{4e2d}/x\"}],\"filterServerTable\":{\"192.168.0.1:10911\":[\"f1:1\"]},\"orderTopicConf\":\"broker-a:4\",\"queueDatas\":[",
        QUEUE_A,
        r#"],"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":9007199254740993,"scope":"__global__","topic":"T","totalQueues":2}}}"#
    );
    assert_eq!(route_text(&full_route(), Dialect::Default), default);
}

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn other_bodies_of_the_reference() {
    let info = ClusterInfo {
        broker_addr_table: BTreeMap::from([("broker-a".into(), broker_a(None))]),
        cluster_addr_table: BTreeMap::from([("DefaultCluster".into(), vec!["broker-a".into()])]),
    };
    assert_eq!(
        text(|o| encode_cluster_info(&info, o)),
        r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
    );
    let mut list = TopicList { topic_list: vec!["TopicTest".into(), "TBW102".into()], broker_addr: None };
    assert_eq!(text(|o| encode_topic_list(&list, o)), r#"{"topicList":["TopicTest","TBW102"]}"#);
    list.broker_addr = Some("1.2.3.4:10911".into());
    list.topic_list.clear();
    assert_eq!(text(|o| encode_topic_list(&list, o)), r#"{"brokerAddr":"1.2.3.4:10911","topicList":[]}"#);
    let table = BTreeMap::from([("TopicTest".to_string(), "broker-a:4;broker-b:4".to_string())]);
    assert_eq!(text(|o| encode_kv_table(&table, o)), r#"{"table":{"TopicTest":"broker-a:4;broker-b:4"}}"#);
    assert_eq!(text(|o| encode_kv_table(&BTreeMap::new(), o)), r#"{"table":{}}"#);
    let group = BrokerMemberGroup {
        cluster: Some("DefaultCluster".into()),
        broker_name: Some("broker-a".into()),
        broker_addrs: broker_a(None).broker_addrs.clone(),
    };
    assert_eq!(
        text(|o| encode_broker_member_group(&group, o)),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
    let dv = DataVersion { counter: 7, state_version: 0, timestamp: 1_700_000_000_000 };
    let dv_text = text(|o| encode_data_version(&dv, o));
    assert_eq!(dv_text, r#"{"counter":7,"stateVersion":0,"timestamp":1700000000000}"#);
    assert_eq!(decode_data_version(dv_text.as_bytes()), Ok(dv));
    assert_eq!(
        decode_data_version(br#"{counter:"7",timestamp:1700000000000}"#),
        Ok(DataVersion { state_version: 0, ..dv })
    );
    assert!(decode_data_version(b"null").is_err());
    assert!(decode_data_version(b"{").is_err());
}

#[test]
fn kv_config_file_round_trip_and_leniency() {
    let config = BTreeMap::from([(
        "ORDER_TOPIC_CONFIG".to_string(),
        BTreeMap::from([("TopicTest".to_string(), "broker-a:4".to_string())]),
    )]);
    let bytes = text(|o| encode_kv_config_file(&config, o));
    assert_eq!(bytes, r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}"#);
    assert_eq!(decode_kv_config_file(bytes.as_bytes()), Ok(config));
    let lenient = decode_kv_config_file(b"{configTable:{ns:{a:'1',b:null,c:2,},empty:{},gone:null},x:1}").unwrap();
    assert_eq!(lenient["ns"], BTreeMap::from([("a".into(), "1".into()), ("c".into(), "2".into())]));
    assert!(lenient["empty"].is_empty());
    assert!(!lenient.contains_key("gone"));
    assert_eq!(decode_kv_config_file(b"  "), Ok(BTreeMap::new()));
    assert_eq!(decode_kv_config_file(b"{}"), Ok(BTreeMap::new()));
    assert!(decode_kv_config_file(b"{configTable:").is_err());
}

#[test]
fn queue_datas_accept_the_old_flag_name() {
    let body = br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":1,"topicSynFlag":3,"writeQueueNums":2},{"perm":6},null,{"brokerName":null},{"brokerName":"c","topicSysFlag":"1"}]}"#;
    let qs = decode_queue_datas(body).unwrap();
    assert_eq!(qs.len(), 5);
    let q0 = qs[0].as_ref().unwrap();
    assert_eq!((q0.topic_sys_flag, q0.read_queue_nums, q0.write_queue_nums), (3, 1, 2));
    // Entries without a broker name are kept in place: Java stops registering at them.
    assert_eq!((&qs[1], &qs[2], &qs[3]), (&None, &None, &None));
    let q4 = qs[4].as_ref().unwrap();
    assert_eq!(&*q4.broker_name, "c");
    assert_eq!(q4.topic_sys_flag, 1);
    assert_eq!(decode_queue_datas(b"{}"), Ok(vec![]));
    assert!(decode_queue_datas(b"[]").is_err());
    // fastjson2 refuses a scalar where a QueueData is expected.
    assert!(decode_queue_datas(br#"{"queueDatas":[1,{"brokerName":"b"}]}"#).is_err());
}

const BROKER_5X: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;

fn sample_body() -> RegisterBrokerBody {
    RegisterBrokerBody {
        data_version: DataVersion { counter: 3, state_version: 0, timestamp: 1_700_000_000_000 },
        topic_configs: vec![TopicConfig {
            topic_name: "TopicTest".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_sys_flag: 0,
        }],
        mapping_infos: vec![],
        filter_server_list: Some(vec![]),
    }
}

#[test]
fn register_body_5x_example_both_ways() {
    assert_eq!(decode_register_broker_body(BROKER_5X.as_bytes(), false, 479, MB), Ok(sample_body()));
    assert_eq!(String::from_utf8(encode_register_broker_body(&sample_body(), false, 479)).unwrap(), BROKER_5X);
}

#[test]
fn register_body_4x_refs_bare_keys_and_defaults() {
    let old = br#"{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":"2","timestamp":5},"topicConfigTable":{"key-ignored":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"A","topicSysFlag":1,"writeQueueNums":8},"B":{"topicName":"B","attributes":{"$ref":"$.topicConfigSerializeWrapper.topicConfigTable.A.attributes"}},"C":{"perm":6},"D":{"$ref":"$.x"}}}}"#;
    let body = decode_register_broker_body(old, false, 409, MB).unwrap();
    assert_eq!(body.data_version, DataVersion { counter: 2, state_version: 0, timestamp: 5 });
    assert_eq!(body.filter_server_list, Some(vec!["f:1".into()]));
    assert_eq!(
        body.topic_configs,
        vec![
            TopicConfig { topic_name: "A".into(), read_queue_nums: 8, write_queue_nums: 8, perm: 6, topic_sys_flag: 1 },
            TopicConfig::with_defaults("B"),
        ]
    );
    let mapping = br#"{topicConfigSerializeWrapper:{topicConfigTable:{},topicQueueMappingInfoMap:{"T":{"bname":"b","currIdMap":{0:0,1:1,},"dirty":false,"epoch":9007199254740993,"topic":"T","totalQueues":2},"U":{"$ref":"$.x"}}}}"#;
    let body = decode_register_broker_body(mapping, false, 479, MB).unwrap();
    // No filterServerList key: Java's initial empty list.
    assert_eq!(body.filter_server_list, Some(vec![]));
    let null = br#"{"filterServerList":null,"topicConfigSerializeWrapper":{"topicConfigTable":{}}}"#;
    assert_eq!(decode_register_broker_body(null, false, 479, MB).unwrap().filter_server_list, None);
    assert_eq!(body.mapping_infos.len(), 2);
    let (topic, info) = &body.mapping_infos[0];
    assert_eq!(topic, "T");
    assert_eq!(info.curr_id_map, Some(BTreeMap::from([(0, 0), (1, 1)])));
    assert_eq!(info.epoch, 9_007_199_254_740_993);
    assert_eq!(info.scope.as_deref(), Some("__global__"));
    assert_eq!(body.mapping_infos[1].1.topic, None);
    assert!(decode_register_broker_body(
        br#"{topicConfigSerializeWrapper:{topicConfigTable:{A:{topicName:"A",perm:"x"}}}}"#,
        false,
        479,
        MB
    )
    .is_err());
}

#[test]
fn register_body_edge_forms() {
    // Java builds a fresh body for an empty one: an empty filter-server list (none before V3_0_11).
    assert_eq!(
        decode_register_broker_body(b"", false, 479, MB),
        Ok(RegisterBrokerBody { filter_server_list: Some(vec![]), ..RegisterBrokerBody::default() })
    );
    assert_eq!(decode_register_broker_body(b"", false, 36, MB), Ok(RegisterBrokerBody::default()));
    let bare = br#"{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"A":{"topicName":"A"}}}"#;
    let body = decode_register_broker_body(bare, false, 36, MB).unwrap();
    assert_eq!(body.topic_configs, vec![TopicConfig::with_defaults("A")]);
    assert_eq!(body.filter_server_list, None);
    let mut sample = sample_body();
    sample.filter_server_list = None;
    assert_eq!(
        decode_register_broker_body(&encode_register_broker_body(&sample, false, 36), false, 36, MB),
        Ok(sample)
    );
    assert!(decode_register_broker_body(b"null", false, 479, MB).is_err());
    assert!(decode_register_broker_body(b"{\"a\":", false, 479, MB).is_err());
    assert!(decode_register_broker_body(b"\x00\x01", true, 479, MB).is_err());
}

#[test]
fn register_body_4_9_json_shape() {
    let text = String::from_utf8(encode_register_broker_body(&sample_body(), false, 409)).unwrap();
    assert_eq!(
        text,
        r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}"#
    );
}

/// Found by the fuzz differential (fuzz/checks.rs, fast path vs lenient decoder): serde's derived structs also read a
/// JSON array as their fields in order, so the fast path took `"dataVersion":[7,0,1]` as counter 7, or a topic
/// written as an array as a topic, where the lenient decoder (like fastjson's bean reader) takes no bean at all.
#[test]
fn fast_path_reads_beans_only_from_objects() {
    for body in [
        r#"{"topicConfigSerializeWrapper":{"dataVersion":[7,0,1]}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":["t",8,8,6,0]}}}"#,
        r#"{"topicConfigSerializeWrapper":[{"counter":7},{"t":{"topicName":"t"}},{}]}"#,
        r#"[null,{"dataVersion":{"counter":7}}]"#,
    ] {
        let lenient = super::register::decode_lenient(body.as_bytes(), 479);
        assert_eq!(decode_register_broker_body(body.as_bytes(), false, 479, MB), lenient, "{body}");
    }
}

/// A body that is not UTF-8 — a stray byte in a field we ignore, or in a topic name — is the lenient decoder's
/// (which reads it lossily, as Java's `new String(bytes, UTF_8)` does): the fast path checks the whole body once.
#[test]
fn a_body_that_is_not_utf8_decodes_as_the_lenient_decoder_reads_it() {
    let clean: &[u8] = br#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"t":{"topicFilterType":"SINGLE_TAG","topicName":"t","perm":4}}}}"#;
    assert!(super::fast::decode(clean).is_some(), "the clean body is the fast path's");
    let after =
        |needle: &[u8]| clean.windows(needle.len()).position(|w| w == needle).expect("in the body") + needle.len();
    let (ignored, name) = (after(b"\"SING"), after(b"Name\":\"t"));
    let stray_in_ignored = [&clean[..ignored], b"\xff", &clean[ignored..]].concat();
    let stray_in_name = [&clean[..name], b"\xfe", &clean[name..]].concat();
    assert!(stray_in_ignored.windows(7).any(|w| w == b"SING\xffLE"));
    assert!(stray_in_name.windows(5).any(|w| w == b"\"t\xfe\","));
    for body in [stray_in_ignored, stray_in_name] {
        assert!(super::fast::decode(&body).is_none());
        let lenient = super::register::decode_lenient(&body, 479).expect("read lossily");
        assert_eq!(lenient.topic_configs[0].perm, 4);
        assert_eq!(decode_register_broker_body(&body, false, 479, MB), Ok(lenient));
    }
}

fn zlib(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(raw).unwrap();
    e.finish().unwrap()
}

fn part(raw: &mut Vec<u8>, bytes: &[u8]) {
    raw.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    raw.extend_from_slice(bytes);
}

#[test]
fn zlib_layouts_by_version() {
    let mut raw = Vec::new();
    part(&mut raw, br#"{"counter":3,"timestamp":1700000000000}"#);
    raw.extend_from_slice(&2i32.to_be_bytes());
    part(&mut raw, b"TopicTest 4 4 6 SINGLE_TAG");
    part(&mut raw, b"Other 8 2 7 MULTI_TAG {\"+message.type\":\"NORMAL\"}");
    part(&mut raw, br#"["f:1"]"#);
    let v49 = decode_register_broker_body(&zlib(&raw), true, 409, MB).unwrap();
    assert_eq!(v49.topic_configs.len(), 2);
    assert_eq!(
        v49.topic_configs[1],
        TopicConfig { topic_name: "Other".into(), read_queue_nums: 8, write_queue_nums: 2, perm: 7, topic_sys_flag: 0 }
    );
    assert_eq!(v49.filter_server_list, Some(vec!["f:1".into()]));

    raw.extend_from_slice(&1i32.to_be_bytes());
    part(&mut raw, br#"{"bname":"b","currIdMap":{0:0},"dirty":false,"epoch":1,"scope":"__global__","topic":"TopicTest","totalQueues":1}"#);
    let v5 = decode_register_broker_body(&zlib(&raw), true, 479, MB).unwrap();
    assert_eq!(v5.mapping_infos.len(), 1);
    assert_eq!(v5.mapping_infos[0].0, "TopicTest");
    // Mislabelled: 5.x brokers say compressed=false for a zlib body.
    assert_eq!(decode_register_broker_body(&zlib(&raw), false, 479, MB), Ok(v5));
    // Below V5_0_0 the mapping section is not read (and trailing bytes are ignored, as in Java).
    assert_eq!(decode_register_broker_body(&zlib(&raw), true, 409, MB), Ok(v49));
}

#[test]
fn zlib_malformations_are_errors() {
    let mut raw = Vec::new();
    part(&mut raw, b"{}");
    raw.extend_from_slice(&i32::MAX.to_be_bytes()); // a lying topic count
    assert!(matches!(decode_register_broker_body(&zlib(&raw), true, 479, MB), Err(BodyError::Compressed(_))));
    let mut raw = Vec::new();
    part(&mut raw, b"{}");
    raw.extend_from_slice(&1i32.to_be_bytes());
    raw.extend_from_slice(&1000i32.to_be_bytes()); // a lying length
    assert!(matches!(decode_register_broker_body(&zlib(&raw), true, 479, MB), Err(BodyError::Compressed(_))));
    for bad in [&b"T 4 4 6"[..], b"T x 4 6 SINGLE_TAG", b"T 4 4 6 NOPE"] {
        let mut raw = Vec::new();
        part(&mut raw, b"{}");
        raw.extend_from_slice(&1i32.to_be_bytes());
        part(&mut raw, bad);
        part(&mut raw, b"[]");
        assert!(decode_register_broker_body(&zlib(&raw), true, 409, MB).is_err());
    }
    let good = zlib(b"abc");
    assert!(decode_register_broker_body(&good[..good.len() / 2], true, 479, MB).is_err());
    assert!(decode_register_broker_body(&[0x78, 0x01, 0xFF], true, 479, MB).is_err());
}

/// Found by review for the fuzzing work: a topic count that fits 4-byte items but not real topic configs reserved
/// count × `TopicConfig` (10x the inflated bytes) before the first part failed. Now the count itself is refused.
#[test]
fn zlib_topic_count_is_checked_against_the_smallest_topic_part() {
    let n = 1 << 18;
    let mut raw = Vec::new();
    part(&mut raw, b"{}");
    raw.extend_from_slice(&(n as i32).to_be_bytes());
    raw.resize(raw.len() + 4 * n, 0);
    let err = decode_register_broker_body(&zlib(&raw), true, 479, 4 * MB).unwrap_err();
    assert!(matches!(&err, BodyError::Compressed(m) if m.starts_with("count 262144 exceeds")), "{err}");
    // The smallest real part still fits its own count.
    let mut raw = Vec::new();
    part(&mut raw, b"{}");
    raw.extend_from_slice(&1i32.to_be_bytes());
    part(&mut raw, b" 0 0 0 MULTI_TAG");
    part(&mut raw, b"[]");
    assert_eq!(decode_register_broker_body(&zlib(&raw), true, 409, MB).unwrap().topic_configs[0].topic_name, "".into());
}

#[test]
fn zlib_bomb_is_refused() {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; MB];
    for _ in 0..100 {
        e.write_all(&zeros).unwrap();
    }
    let bomb = e.finish().unwrap();
    assert!(bomb.len() < 200 * 1024);
    assert_eq!(decode_register_broker_body(&bomb, true, 479, MB), Err(BodyError::TooLarge(MB)));
}

pub(super) fn arb_body() -> impl Strategy<Value = RegisterBrokerBody> {
    let name = "[A-Za-z0-9_%|-]{1,12}";
    let tc = (name, 0..64i32, 0..64i32, 0..8i32, 0..4i32).prop_map(|(n, r, w, p, f)| TopicConfig {
        topic_name: n.into(),
        read_queue_nums: r,
        write_queue_nums: w,
        perm: p,
        topic_sys_flag: f,
    });
    let info = (
        name,
        any::<i64>(),
        any::<bool>(),
        proptest::option::of(proptest::collection::btree_map(any::<i32>(), any::<i32>(), 0..4)),
        0..64i32,
        proptest::option::of(name),
    )
        .prop_map(|(topic, epoch, dirty, curr_id_map, total_queues, bname)| {
            (
                topic.clone(),
                TopicQueueMappingInfo {
                    topic: Some(topic),
                    scope: Some("__global__".into()),
                    total_queues,
                    bname,
                    epoch,
                    dirty,
                    curr_id_map,
                },
            )
        });
    (
        any::<(i64, i64, i64)>(),
        proptest::collection::vec(tc, 0..6),
        proptest::collection::vec(info, 0..3),
        proptest::option::of(proptest::collection::vec("[a-z0-9.:]{1,10}", 0..3)),
    )
        .prop_map(|((c, s, t), topic_configs, mapping_infos, filter_server_list)| RegisterBrokerBody {
            data_version: DataVersion { counter: c, state_version: s, timestamp: t },
            topic_configs,
            mapping_infos,
            filter_server_list,
        })
}

/// The case the property below once shrank to: no filter-server list at all, JSON body, 4.9 layout.
#[test]
fn register_body_without_filter_server_list_round_trips() {
    let body = RegisterBrokerBody {
        data_version: DataVersion { counter: 0, state_version: 0, timestamp: 0 },
        topic_configs: vec![],
        mapping_infos: vec![],
        filter_server_list: None,
    };
    let bytes = encode_register_broker_body(&body, false, 409);
    assert_eq!(decode_register_broker_body(&bytes, false, 409, MB), Ok(body));
}

proptest! {
    #[test]
    fn register_body_round_trips(body in arb_body(), compressed in any::<bool>(), five in any::<bool>()) {
        let version = if five { 479 } else { 409 };
        let mut expected = body.clone();
        if !five {
            expected.data_version.state_version = 0;
            expected.mapping_infos.clear();
        }
        if compressed {
            // The text form carries no topicSysFlag, and the list is always written.
            expected.topic_configs.iter_mut().for_each(|tc| tc.topic_sys_flag = 0);
            expected.filter_server_list.get_or_insert_with(Vec::new);
        }
        let bytes = encode_register_broker_body(&body, compressed, version);
        prop_assert_eq!(decode_register_broker_body(&bytes, compressed, version, MB), Ok(expected));
    }

    /// The serde fast path and the lenient decoder agree on every body the fast path accepts, and it accepts
    /// every mapping-free body a broker writes (so the fast path is really taken).
    #[test]
    fn fast_register_decoder_agrees_with_lenient(body in arb_body(), five in any::<bool>(), pad in any::<bool>()) {
        let version = if five { 479 } else { 409 };
        let mut bytes = encode_register_broker_body(&body, false, version);
        if pad {
            bytes.extend_from_slice(b" \n");
        }
        let fast = super::fast::decode(&bytes).map(|(b, _)| b);
        if body.mapping_infos.is_empty() || !five {
            prop_assert!(fast.is_some(), "fast path refused {}", String::from_utf8_lossy(&bytes));
        }
        if let Some(fast) = fast {
            prop_assert_eq!(Ok(fast), super::register::decode_lenient(&bytes, version));
        }
    }


    #[test]
    fn fast_register_decoder_never_disagrees_on_odd_input(text in "[{}\\[\\]\",:a-zA-Z0-9 ]{0,80}") {
        let wrapped = format!("{{\"topicConfigSerializeWrapper\":{{\"topicConfigTable\":{text}}}}}");
        if let Some((fast, _)) = super::fast::decode(wrapped.as_bytes()) {
            prop_assert_eq!(Ok(fast), super::register::decode_lenient(wrapped.as_bytes(), 479));
        }
        if let Some((scanned, _)) = super::scan::decode(wrapped.as_bytes()) {
            prop_assert_eq!(Ok(scanned), super::register::decode_lenient(wrapped.as_bytes(), 479));
        }
    }

    /// A body's mark recognises the same body at any other DataVersion, with that DataVersion as a full decode
    /// reads it, and recognises no body that decodes to anything else.
    #[test]
    fn a_mark_recognises_exactly_the_same_body(
        body in arb_body(),
        other in arb_body(),
        dv in arb_body().prop_map(|b| b.data_version),
        five in any::<bool>(),
        zlib in any::<bool>(),
    ) {
        let version = if five { 479 } else { 409 };
        let bytes = encode_register_broker_body(&body, zlib, version);
        let (decoded, mark) = decode_register_broker_body_marked(&bytes, zlib, version, MB, &|| {}).unwrap();
        let Some(mark) = mark else {
            // Only JSON bodies the fast path declines (static-topic mappings) go unmarked.
            prop_assert!(!zlib && five && !body.mapping_infos.is_empty());
            return Ok(());
        };
        let same_register_body = |bytes: &[u8], mark: &BodyMark| same_register_body(bytes, zlib, mark, MB, &|| {});
        // A mark of one form never recognises the other form of the same body.
        let other_form = encode_register_broker_body(&body, !zlib, version);
        prop_assert_eq!(super::same_register_body(&other_form, !zlib, &mark, MB, &|| {}), None);
        // Our encoder writes a 5.x `mappingDataVersion` with the DataVersion's timestamp (a real broker's changes only
        // with its mappings): keep the timestamp, so only the DataVersion's bytes differ.
        let dv = DataVersion { timestamp: body.data_version.timestamp, ..dv };
        let again = RegisterBrokerBody { data_version: dv, ..body.clone() };
        let again_bytes = encode_register_broker_body(&again, zlib, version);
        let expected = decode_register_broker_body(&again_bytes, zlib, version, MB).unwrap();
        prop_assert_eq!(same_register_body(&again_bytes, &mark), Some(expected.data_version));

        let other_bytes = encode_register_broker_body(&other, zlib, version);
        if let Some(found) = same_register_body(&other_bytes, &mark) {
            let other_decoded = decode_register_broker_body(&other_bytes, zlib, version, MB).unwrap();
            prop_assert_eq!(other_decoded, RegisterBrokerBody { data_version: found, ..decoded.clone() });
        }
        if let Some(first) = body.topic_configs.first() {
            let mut changed = again.clone();
            changed.topic_configs[0].perm = first.perm ^ 1;
            let changed_bytes = encode_register_broker_body(&changed, zlib, version);
            prop_assert_eq!(same_register_body(&changed_bytes, &mark), None);
        }
    }

    #[test]
    fn register_body_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), compressed in any::<bool>()) {
        let _ = decode_register_broker_body(&bytes, compressed, 479, MB);
        let _ = decode_register_broker_body(&zlib(&bytes), true, 479, MB);
        let _ = decode_kv_config_file(&bytes);
        let _ = decode_queue_datas(&bytes);
    }
}

/// A long decode calls `give_way` between pieces, so the decoder thread can let the reactors run (decision 0025):
/// every 256 topics, JSON or zlib, and after each inflated chunk of at most 16 KiB. What it decodes is unchanged.
#[test]
fn a_long_decode_gives_way_every_256_topics() {
    let body = RegisterBrokerBody {
        topic_configs: (0..1000).map(|i| TopicConfig::with_defaults(format!("topic-{i:04}"))).collect(),
        ..sample_body()
    };
    for zlib in [false, true] {
        let bytes = encode_register_broker_body(&body, zlib, 479);
        let calls = std::cell::Cell::new(0);
        let (decoded, mark) =
            decode_register_broker_body_marked(&bytes, zlib, 479, MB, &|| calls.set(calls.get() + 1)).unwrap();
        assert_eq!(decoded, body, "zlib: {zlib}");
        if zlib {
            // Three for the topics, at least one per 16 KiB for the inflated bytes.
            let mut raw = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&bytes[..]), &mut raw).unwrap();
            let inflated = raw.len();
            assert!(inflated > 2 * 16 * 1024, "a body of several chunks: {inflated} bytes");
            assert!(calls.get() >= 3 + inflated.div_ceil(16 * 1024), "{} calls", calls.get());
            calls.set(0);
            let same = same_register_body(&bytes, true, &mark.unwrap(), MB, &|| calls.set(calls.get() + 1));
            assert_eq!(same, Some(body.data_version));
            assert!(calls.get() >= 2, "the inflate of a recognised body gives way too: {} calls", calls.get());
        } else {
            // The scanner's topics 256, 512 and 768.
            assert_eq!(calls.get(), 3);
        }
    }
}
