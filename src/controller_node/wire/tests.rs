use super::*;
use crate::controller::error::ControllerError;

fn req(code: i32, ext: &[(&str, &str)]) -> RemotingCommand {
    ext.iter().fold(RemotingCommand::request(code, 7), |cmd, (k, v)| cmd.with_ext(k, *v))
}

#[test]
fn headers_decode_with_javas_field_names() {
    let r = req(
        C::CONTROLLER_ELECT_MASTER,
        &[("clusterName", "c"), ("brokerName", "b"), ("brokerId", "-1"), ("designateElect", "true")],
    );
    assert_eq!(
        decode(&r),
        Ok(Request::ElectMaster(ElectMaster {
            cluster_name: "c".into(),
            broker_name: "b".into(),
            broker_id: -1,
            designate_elect: true
        }))
    );
    let alter =
        req(C::CONTROLLER_ALTER_SYNC_STATE_SET, &[("brokerName", "b"), ("masterBrokerId", "1"), ("masterEpoch", "3")])
            .with_body(&b"{\"syncStateSet\":[2,1],\"syncStateSetEpoch\":4}"[..]);
    let Ok(Request::AlterSyncStateSet(a)) = decode(&alter) else { panic!("decodes") };
    assert_eq!(a.new_sync_state_set, SyncStateSet { sync_state_set: BTreeSet::from([1, 2]), sync_state_set_epoch: 4 });
    assert_eq!(decode(&req(C::CONTROLLER_GET_SYNC_STATE_DATA, &[])), Ok(Request::GetSyncStateData(vec![])));
    let names = req(C::CONTROLLER_GET_SYNC_STATE_DATA, &[]).with_body(&b"[\"a\",\"b\"]"[..]);
    assert_eq!(decode(&names), Ok(Request::GetSyncStateData(vec!["a".into(), "b".into()])));
}

#[test]
fn bad_headers_are_refused_with_the_field_named() {
    assert_eq!(decode(&req(C::CONTROLLER_GET_REPLICA_INFO, &[])), Err(WireError::Missing("brokerName")));
    let r = req(C::CONTROLLER_ELECT_MASTER, &[("clusterName", "c"), ("brokerName", "b"), ("brokerId", "x")]);
    assert_eq!(decode(&r), Err(WireError::NotANumber("brokerId")));
    let hb = req(C::BROKER_HEARTBEAT, &[("clusterName", "c"), ("brokerName", "b"), ("brokerAddr", "a")]);
    assert_eq!(decode(&hb), Err(WireError::HeartbeatWithoutId));
    assert_eq!(WireError::HeartbeatWithoutId.reply(&hb).code, 2005);
    let alter =
        req(C::CONTROLLER_ALTER_SYNC_STATE_SET, &[("brokerName", "b"), ("masterBrokerId", "1"), ("masterEpoch", "1")]);
    assert!(matches!(decode(&alter), Err(WireError::Body(_))), "no body");
    assert!(matches!(decode(&alter.with_body(&b"{\"syncStateSet\":\"x\"}"[..])), Err(WireError::Body(_))));
    assert_eq!(decode(&req(1007, &[])), Err(WireError::Unsupported(1007)));
}

#[test]
fn a_refusal_keeps_the_header_fields_java_sends() {
    let r = req(C::CONTROLLER_ALTER_SYNC_STATE_SET, &[]);
    let refused: ControllerResult<AlterSyncStateSetResponse> =
        ControllerResult::refused(AlterSyncStateSetResponse::default(), ControllerError::SyncStateSetUnchanged);
    let out = alter_sync_state_set(&r, &refused);
    assert_eq!((out.code, out.ext("newSyncStateSetEpoch")), (2013, Some("0")));
    assert!(out.body.is_empty());
    assert!(out.remark.is_some());
}

#[test]
fn bodies_are_fastjson2_default_bytes() {
    let set = SyncStateSet { sync_state_set: BTreeSet::from([3, 1]), sync_state_set_epoch: 2 };
    assert_eq!(&sync_state_set_body(&set)[..], br#"{"syncStateSet":[1,3],"syncStateSetEpoch":2}"#);
    let data = BrokerReplicasInfo {
        replicas_info_table: [(
            "b".to_string(),
            GroupReplicas {
                master_broker_id: Some(1),
                master_address: Some("h:1".into()),
                master_epoch: 2,
                sync_state_set_epoch: 3,
                in_sync_replicas: vec![ReplicaIdentity {
                    broker_name: "b".into(),
                    broker_id: 1,
                    broker_address: "h:1".into(),
                    alive: true,
                }],
                not_in_sync_replicas: vec![],
            },
        )]
        .into(),
    };
    let out = sync_state_data(&req(C::CONTROLLER_GET_SYNC_STATE_DATA, &[]), &ControllerResult::ok(data, vec![]));
    assert_eq!(
        std::str::from_utf8(&out.body).unwrap(),
        r#"{"replicasInfoTable":{"b":{"inSyncReplicas":[{"alive":true,"brokerAddress":"h:1","brokerId":1,"brokerName":"b"}],"masterAddress":"h:1","masterBrokerId":1,"masterEpoch":2,"notInSyncReplicas":[],"syncStateSetEpoch":3}}}"#
    );
    let note = role_changed(2, Some("h:2"), 5, &set);
    assert!(note.is_oneway());
    assert_eq!(
        (note.ext("masterBrokerId"), note.ext("masterEpoch"), note.ext("syncStateSetEpoch")),
        (Some("2"), Some("5"), Some("2"))
    );
}
