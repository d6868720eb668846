//! The controller's keys (Java's `ControllerConfig`), which a name-server `-c` file may carry: the controller reads
//! them from `Config::extra` when it starts ([`crate::controller_node::settings`]). Declared here, on the config floor,
//! so that loading a file knows them without reaching up into the controller.

/// Every `ControllerConfig` key we know. Keys we read are in `Settings`; the rest (thread pools, DLedger's file
/// size, Java's metrics exporters) are Java engine knobs with no meaning here, accepted so a Java file loads.
pub(crate) const CONTROLLER_KEYS: &[&str] = &[
    "controllerType",
    "controllerDLegerGroup",
    "controllerDLegerPeers",
    "controllerDLegerSelfId",
    "controllerStorePath",
    "electMasterMaxRetryCount",
    "enableElectUncleanMaster",
    "processReadEvent",
    "isProcessReadEvent",
    "scanInactiveMasterInterval",
    "notifyBrokerRoleChanged",
    "mappedFileSize",
    "controllerThreadPoolNums",
    "controllerRequestThreadPoolQueueCapacity",
    "metricsExporterType",
    "metricsGrpcExporterTarget",
    "metricsGrpcExporterHeader",
    "metricGrpcExporterTimeOutInMills",
    "metricGrpcExporterIntervalInMills",
    "metricLoggingExporterIntervalInMills",
    "metricsPromExporterPort",
    "metricsPromExporterHost",
    "metricsLabel",
    "metricsInDelta",
    // Ours (not in 1010's answer): the budget of big frames being read on the controller port (`controller_node/room.rs`).
    "controllerFrameBytes",
    // Ours: the controller port's connection cap, idle close and frame deadline (`controller_node/server.rs`).
    "controllerMaxConnections",
    "controllerIdleSeconds",
    "controllerFrameTimeoutSeconds",
];
