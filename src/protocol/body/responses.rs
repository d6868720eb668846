//! Response bodies the name server writes (§3.1, §3.2, §3.6, §6): fastjson bytes, bean keys alphabetical, nulls
//! omitted, empty maps and lists written.

use std::collections::BTreeMap;

use super::beans;
use crate::model::{BrokerMemberGroup, ClusterInfo, DataVersion, TopicList, TopicRouteData};
use crate::protocol::json::{Dialect, JsonWriter};

pub(super) fn topic_route(route: &TopicRouteData, dialect: Dialect, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, dialect);
    w.begin_object();
    w.field("brokerDatas");
    w.begin_array();
    for bd in &route.broker_datas {
        beans::write_broker_data(&mut w, bd);
    }
    w.end_array();
    w.field("filterServerTable");
    w.begin_object();
    for (addr, servers) in &route.filter_server_table {
        w.key(addr);
        beans::write_string_array(&mut w, servers);
    }
    w.end_object();
    if let Some(conf) = &route.order_topic_conf {
        w.field("orderTopicConf");
        w.string(conf);
    }
    w.field("queueDatas");
    w.begin_array();
    for q in &route.queue_datas {
        beans::write_queue_data(&mut w, q);
    }
    w.end_array();
    if let Some(map) = &route.topic_queue_mapping_by_broker {
        w.field("topicQueueMappingByBroker");
        w.begin_object();
        for (broker, info) in map {
            w.key(broker);
            beans::write_mapping_info(&mut w, info);
        }
        w.end_object();
    }
    w.end_object();
}

pub(super) fn cluster_info(info: &ClusterInfo, dialect: Dialect, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, dialect);
    w.begin_object();
    w.field("brokerAddrTable");
    w.begin_object();
    for (name, bd) in &info.broker_addr_table {
        w.key(name);
        beans::write_broker_data(&mut w, bd);
    }
    w.end_object();
    w.field("clusterAddrTable");
    w.begin_object();
    for (cluster, names) in &info.cluster_addr_table {
        w.key(cluster);
        beans::write_string_array(&mut w, names);
    }
    w.end_object();
    w.end_object();
}

pub(super) fn topic_list(list: &TopicList, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, Dialect::Default);
    w.begin_object();
    if let Some(addr) = &list.broker_addr {
        w.field("brokerAddr");
        w.string(addr);
    }
    w.field("topicList");
    beans::write_string_array(&mut w, &list.topic_list);
    w.end_object();
}

pub(super) fn data_version(dv: &DataVersion, out: &mut Vec<u8>) {
    beans::write_data_version(&mut JsonWriter::new(out, Dialect::Default), dv, true);
}

pub(super) fn broker_member_group(group: &BrokerMemberGroup, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, Dialect::Default);
    w.begin_object();
    w.field("brokerMemberGroup");
    w.begin_object();
    w.field("brokerAddrs");
    beans::write_broker_addrs(&mut w, &group.broker_addrs);
    if let Some(name) = &group.broker_name {
        w.field("brokerName");
        w.string(name);
    }
    if let Some(cluster) = &group.cluster {
        w.field("cluster");
        w.string(cluster);
    }
    w.end_object();
    w.end_object();
}

fn string_map(w: &mut JsonWriter, map: &BTreeMap<String, String>) {
    w.begin_object();
    for (k, v) in map {
        w.key(k);
        w.string(v);
    }
    w.end_object();
}

pub(super) fn kv_table(table: &BTreeMap<String, String>, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, Dialect::Default);
    w.begin_object();
    w.field("table");
    string_map(&mut w, table);
    w.end_object();
}

pub(super) fn kv_config_file(config: &BTreeMap<String, BTreeMap<String, String>>, out: &mut Vec<u8>) {
    let mut w = JsonWriter::new(out, Dialect::Default);
    w.begin_object();
    w.field("configTable");
    w.begin_object();
    for (namespace, table) in config {
        w.key(namespace);
        string_map(&mut w, table);
    }
    w.end_object();
    w.end_object();
}
