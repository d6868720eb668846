//! The broker live table (Java `brokerLiveTable`): writer-private, keyed by (clusterName, brokerAddr). Heartbeats
//! and unchanged re-registrations touch only this table, so they never publish a snapshot.
