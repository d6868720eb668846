//! Why the controller refused a request: one variant per refusal in Java's `ReplicasInfoManager`, each with its
//! response code (2000–2016) and, as `Display`, Java's remark text word for word (brokers and mqadmin print it).

use thiserror::Error;

use crate::protocol::code::ControllerResponseCode as Code;

use super::event::BrokerId;

/// Java formats a `null` Long as `null`; the remarks keep that.
struct JavaLong(Option<BrokerId>);

impl std::fmt::Display for JavaLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(id) => write!(f, "{id}"),
            None => f.write_str("null"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub(crate) enum ControllerError {
    // ---- 1001 CONTROLLER_ALTER_SYNC_STATE_SET ----
    #[error("Broker metadata is not existed")]
    AlterUnknownGroup,
    #[error("The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")]
    SyncStateSetUnchanged,
    #[error("Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{requested}}}", JavaLong(*.current))]
    NotMaster { current: Option<BrokerId>, requested: BrokerId },
    #[error(
        "Rejecting alter syncStateSet request because the current master epoch is:{{{current}}}, not {{{requested}}}"
    )]
    FencedMasterEpoch { current: i32, requested: i32 },
    #[error(
        "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{current}}}, not {{{requested}}}"
    )]
    FencedSyncStateSetEpoch { current: i32, requested: i32 },
    #[error("Rejecting alter syncStateSet request because the replicas {{{0}}} don't exist")]
    ReplicaNotRegistered(BrokerId),
    #[error("Rejecting alter syncStateSet request because the replicas {{{0}}} don't alive")]
    ReplicaNotAlive(BrokerId),
    #[error("Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{}}}", JavaLong(*.0))]
    MasterLeftOut(Option<BrokerId>),

    // ---- 1002 CONTROLLER_ELECT_MASTER ----
    #[error("Broker hasn't been registered")]
    ElectUnknownGroup,
    /// Not a failure for the broker: the response still names the master.
    #[error("The old master {master} is still alive, not need to elect new master for broker {broker_name}")]
    MasterStillExist { master: BrokerId, broker_name: String },
    /// A controller-triggered election found nobody; the result still carries an `ElectMaster` event (no master).
    #[error("Old master has down and failed to elect a new broker master")]
    MasterNotAvailable,
    #[error("Failed to elect a new master")]
    ElectMasterFailed,

    // ---- 1003 CONTROLLER_REGISTER_BROKER ----
    #[error("Broker-set: {broker_name} hasn't been registered in controller")]
    RegisterUnknownGroup { broker_name: String },
    #[error("BrokerId: {broker_id} hasn't been registered in broker-set: {broker_name}")]
    RegisterUnknownId { broker_id: BrokerId, broker_name: String },

    // ---- 1004 CONTROLLER_GET_REPLICA_INFO ----
    #[error("Broker metadata is not existed")]
    MetadataNotExist,

    // ---- 1011 CLEAN_BROKER_DATA ----
    #[error("Broker {broker_name} is still alive, clean up failure")]
    CleanGroupWithMaster { broker_name: String },
    #[error("Please set the option <brokerControllerIdsToClean> according to the format, exception: {detail}")]
    CleanIdsUnparsable { detail: String },
    #[error("Broker [{broker_name},  {broker_id}] is still alive, clean up failure")]
    CleanLivingBroker { broker_name: String, broker_id: BrokerId },
    #[error("Broker {broker_name} is not existed,clean broker data failure.")]
    CleanUnknownGroup { broker_name: String },

    // ---- 1013 CONTROLLER_APPLY_BROKER_ID ----
    #[error(
        "Broker-set: {broker_name} hasn't been registered in controller, but broker try to apply brokerId: {broker_id}"
    )]
    FirstIdNotOne { broker_name: String, broker_id: BrokerId },
    #[error("Fail to apply brokerId: {broker_id} in broker-set: {broker_name}")]
    BrokerIdTaken { broker_id: BrokerId, broker_name: String },
}

impl ControllerError {
    /// The RocketMQ response code Java answers with.
    pub(crate) fn code(&self) -> i32 {
        use ControllerError as E;
        match self {
            E::AlterUnknownGroup | E::SyncStateSetUnchanged | E::MasterLeftOut(_) => {
                Code::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
            }
            E::NotMaster { .. } => Code::CONTROLLER_INVALID_MASTER,
            E::FencedMasterEpoch { .. } => Code::CONTROLLER_FENCED_MASTER_EPOCH,
            E::FencedSyncStateSetEpoch { .. } => Code::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            E::ReplicaNotRegistered(_) => Code::CONTROLLER_INVALID_REPLICAS,
            E::ReplicaNotAlive(_) => Code::CONTROLLER_BROKER_NOT_ALIVE,
            E::ElectUnknownGroup | E::RegisterUnknownGroup { .. } | E::RegisterUnknownId { .. } => {
                Code::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
            }
            E::MasterStillExist { .. } => Code::CONTROLLER_MASTER_STILL_EXIST,
            E::MasterNotAvailable => Code::CONTROLLER_MASTER_NOT_AVAILABLE,
            E::ElectMasterFailed => Code::CONTROLLER_ELECT_MASTER_FAILED,
            E::MetadataNotExist => Code::CONTROLLER_BROKER_METADATA_NOT_EXIST,
            E::CleanGroupWithMaster { .. }
            | E::CleanIdsUnparsable { .. }
            | E::CleanLivingBroker { .. }
            | E::CleanUnknownGroup { .. } => Code::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            E::FirstIdNotOne { .. } | E::BrokerIdTaken { .. } => Code::CONTROLLER_BROKER_ID_INVALID,
        }
    }

    /// Java's remark (the text of `Display`).
    pub(crate) fn remark(&self) -> String {
        self.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remarks_keep_javas_braces_and_null() {
        let e = ControllerError::NotMaster { current: None, requested: 2 };
        assert_eq!(e.remark(), "Rejecting alter syncStateSet request because the current leader is:{null}, not {2}");
        assert_eq!(e.code(), 2002);
        let e = ControllerError::CleanLivingBroker { broker_name: "b".into(), broker_id: 3 };
        assert_eq!(e.remark(), "Broker [b,  3] is still alive, clean up failure");
        assert_eq!(ControllerError::MasterLeftOut(Some(1)).remark().rsplit(' ').next(), Some("{1}"));
    }
}
