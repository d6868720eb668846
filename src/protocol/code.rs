//! Request and response codes (Java `RequestCode`, `ResponseCode`, `RemotingSysResponseCode`), `LanguageCode`
//! and `SerializeType`.

/// Request codes the name server serves (and 905, which it sends).
#[allow(non_snake_case)]
pub mod RequestCode {
    pub const PUT_KV_CONFIG: i32 = 100;
    pub const GET_KV_CONFIG: i32 = 101;
    pub const DELETE_KV_CONFIG: i32 = 102;
    pub const REGISTER_BROKER: i32 = 103;
    pub const UNREGISTER_BROKER: i32 = 104;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    pub const WIPE_WRITE_PERM_OF_BROKER: i32 = 205;
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
    pub const DELETE_TOPIC_IN_NAMESRV: i32 = 216;
    pub const REGISTER_TOPIC_IN_NAMESRV: i32 = 217;
    pub const GET_KVLIST_BY_NAMESPACE: i32 = 219;
    pub const GET_TOPICS_BY_CLUSTER: i32 = 224;
    pub const GET_SYSTEM_TOPIC_LIST_FROM_NS: i32 = 304;
    pub const GET_UNIT_TOPIC_LIST: i32 = 311;
    pub const GET_HAS_UNIT_SUB_TOPIC_LIST: i32 = 312;
    pub const GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: i32 = 313;
    pub const UPDATE_NAMESRV_CONFIG: i32 = 318;
    pub const GET_NAMESRV_CONFIG: i32 = 319;
    pub const QUERY_DATA_VERSION: i32 = 322;
    pub const ADD_WRITE_PERM_OF_BROKER: i32 = 327;
    pub const GET_BROKER_MEMBER_GROUP: i32 = 901;
    pub const BROKER_HEARTBEAT: i32 = 904;
    pub const NOTIFY_MIN_BROKER_ID_CHANGE: i32 = 905;
}

/// Every request code the name server serves with its Java name: the one table that metrics, the audit trail and
/// the admin CLI name codes by.
pub(crate) const REQUEST_NAMES: [(i32, &str); 23] = {
    use RequestCode as C;
    [
        (C::PUT_KV_CONFIG, "PUT_KV_CONFIG"),
        (C::GET_KV_CONFIG, "GET_KV_CONFIG"),
        (C::DELETE_KV_CONFIG, "DELETE_KV_CONFIG"),
        (C::REGISTER_BROKER, "REGISTER_BROKER"),
        (C::UNREGISTER_BROKER, "UNREGISTER_BROKER"),
        (C::GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC"),
        (C::GET_BROKER_CLUSTER_INFO, "GET_BROKER_CLUSTER_INFO"),
        (C::WIPE_WRITE_PERM_OF_BROKER, "WIPE_WRITE_PERM_OF_BROKER"),
        (C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"),
        (C::DELETE_TOPIC_IN_NAMESRV, "DELETE_TOPIC_IN_NAMESRV"),
        (C::REGISTER_TOPIC_IN_NAMESRV, "REGISTER_TOPIC_IN_NAMESRV"),
        (C::GET_KVLIST_BY_NAMESPACE, "GET_KVLIST_BY_NAMESPACE"),
        (C::GET_TOPICS_BY_CLUSTER, "GET_TOPICS_BY_CLUSTER"),
        (C::GET_SYSTEM_TOPIC_LIST_FROM_NS, "GET_SYSTEM_TOPIC_LIST_FROM_NS"),
        (C::GET_UNIT_TOPIC_LIST, "GET_UNIT_TOPIC_LIST"),
        (C::GET_HAS_UNIT_SUB_TOPIC_LIST, "GET_HAS_UNIT_SUB_TOPIC_LIST"),
        (C::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST"),
        (C::UPDATE_NAMESRV_CONFIG, "UPDATE_NAMESRV_CONFIG"),
        (C::GET_NAMESRV_CONFIG, "GET_NAMESRV_CONFIG"),
        (C::QUERY_DATA_VERSION, "QUERY_DATA_VERSION"),
        (C::ADD_WRITE_PERM_OF_BROKER, "ADD_WRITE_PERM_OF_BROKER"),
        (C::GET_BROKER_MEMBER_GROUP, "GET_BROKER_MEMBER_GROUP"),
        (C::BROKER_HEARTBEAT, "BROKER_HEARTBEAT"),
    ]
};

/// A request code's Java name (`GET_ROUTEINFO_BY_TOPIC`), or `other` for codes the name server does not serve.
pub fn request_name(code: i32) -> &'static str {
    REQUEST_NAMES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n).unwrap_or("other")
}

/// Every response code the name server produces with its Java name.
pub(crate) const RESPONSE_NAMES: [(i32, &str); 8] = {
    use ResponseCode as R;
    [
        (R::SUCCESS, "SUCCESS"),
        (R::SYSTEM_ERROR, "SYSTEM_ERROR"),
        (R::SYSTEM_BUSY, "SYSTEM_BUSY"),
        (R::REQUEST_CODE_NOT_SUPPORTED, "REQUEST_CODE_NOT_SUPPORTED"),
        (R::NO_PERMISSION, "NO_PERMISSION"),
        (R::TOPIC_NOT_EXIST, "TOPIC_NOT_EXIST"),
        (R::QUERY_NOT_FOUND, "QUERY_NOT_FOUND"),
        (R::GO_AWAY, "GO_AWAY"),
    ]
};

/// A response code's Java name, or `error`.
pub(crate) fn response_name(code: i32) -> &'static str {
    RESPONSE_NAMES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n).unwrap_or("error")
}

/// Response codes the name server produces.
#[allow(non_snake_case)]
pub mod ResponseCode {
    pub const SUCCESS: i32 = 0;
    pub const SYSTEM_ERROR: i32 = 1;
    pub const SYSTEM_BUSY: i32 = 2;
    pub const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
    pub const NO_PERMISSION: i32 = 16;
    pub const TOPIC_NOT_EXIST: i32 = 17;
    pub const QUERY_NOT_FOUND: i32 = 22;
    pub const GO_AWAY: i32 = 1500;
}

/// Controller (RIP-44) request codes. Java keeps them in `RequestCode`; they live apart here because they are served
/// on the controller's own port, never on 9876, so they stay out of `REQUEST_NAMES` (the name server's metrics).
#[allow(non_snake_case)]
pub mod ControllerRequestCode {
    pub const CONTROLLER_ALTER_SYNC_STATE_SET: i32 = 1001;
    pub const CONTROLLER_ELECT_MASTER: i32 = 1002;
    pub const CONTROLLER_REGISTER_BROKER: i32 = 1003;
    pub const CONTROLLER_GET_REPLICA_INFO: i32 = 1004;
    pub const CONTROLLER_GET_METADATA_INFO: i32 = 1005;
    pub const CONTROLLER_GET_SYNC_STATE_DATA: i32 = 1006;
    pub const GET_BROKER_EPOCH_CACHE: i32 = 1007;
    /// Sent by the controller, one-way, to the members of a group whose master changed.
    pub const NOTIFY_BROKER_ROLE_CHANGED: i32 = 1008;
    pub const UPDATE_CONTROLLER_CONFIG: i32 = 1009;
    pub const GET_CONTROLLER_CONFIG: i32 = 1010;
    pub const CLEAN_BROKER_DATA: i32 = 1011;
    pub const CONTROLLER_GET_NEXT_BROKER_ID: i32 = 1012;
    pub const CONTROLLER_APPLY_BROKER_ID: i32 = 1013;
    /// The same code as the name server's `RequestCode::BROKER_HEARTBEAT`; on the controller port it carries the
    /// controller heartbeat header (epoch, offsets, election priority).
    pub const BROKER_HEARTBEAT: i32 = 904;
}

/// Controller (RIP-44) response codes, Java `ResponseCode` 2000–2016.
#[allow(non_snake_case)]
pub mod ControllerResponseCode {
    pub const CONTROLLER_FENCED_MASTER_EPOCH: i32 = 2000;
    pub const CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH: i32 = 2001;
    pub const CONTROLLER_INVALID_MASTER: i32 = 2002;
    pub const CONTROLLER_INVALID_REPLICAS: i32 = 2003;
    pub const CONTROLLER_MASTER_NOT_AVAILABLE: i32 = 2004;
    pub const CONTROLLER_INVALID_REQUEST: i32 = 2005;
    pub const CONTROLLER_BROKER_NOT_ALIVE: i32 = 2006;
    pub const CONTROLLER_NOT_LEADER: i32 = 2007;
    pub const CONTROLLER_BROKER_METADATA_NOT_EXIST: i32 = 2008;
    pub const CONTROLLER_INVALID_CLEAN_BROKER_METADATA: i32 = 2009;
    pub const CONTROLLER_BROKER_NEED_TO_BE_REGISTERED: i32 = 2010;
    pub const CONTROLLER_MASTER_STILL_EXIST: i32 = 2011;
    pub const CONTROLLER_ELECT_MASTER_FAILED: i32 = 2012;
    pub const CONTROLLER_ALTER_SYNC_STATE_SET_FAILED: i32 = 2013;
    pub const CONTROLLER_BROKER_ID_INVALID: i32 = 2014;
    pub const CONTROLLER_JRAFT_INTERNAL_ERROR: i32 = 2015;
    pub const CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS: i32 = 2016;
}

/// Header serialization type, the top byte of the header word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json = 0,
    RocketMq = 1,
}

impl SerializeType {
    pub(crate) fn from_byte(b: u8) -> Option<SerializeType> {
        match b {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }
}

/// `LanguageCode`: the name is used in JSON headers, the byte in ROCKETMQ headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LanguageCode {
    Java = 0,
    Cpp = 1,
    Dotnet = 2,
    Python = 3,
    Delphi = 4,
    Erlang = 5,
    Ruby = 6,
    Other = 7,
    Http = 8,
    Go = 9,
    Php = 10,
    Oms = 11,
    Rust = 12,
    NodeJs = 13,
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    pub fn name(self) -> &'static str {
        LANGUAGES[self as usize].1
    }

    pub(crate) fn byte(self) -> u8 {
        self as u8
    }

    /// Unknown bytes decode to `None`, like Java.
    pub(crate) fn from_byte(b: u8) -> Option<LanguageCode> {
        LANGUAGES.get(b as usize).map(|(l, _)| *l)
    }

    /// Unknown names decode to `None`, like fastjson's enum reader.
    pub(crate) fn from_name(name: &str) -> Option<LanguageCode> {
        LANGUAGES.iter().find(|(_, n)| *n == name).map(|(l, _)| *l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_names_and_bytes_round_trip() {
        for (l, n) in LANGUAGES {
            assert_eq!(LanguageCode::from_name(n), Some(l));
            assert_eq!(LanguageCode::from_byte(l.byte()), Some(l));
        }
        assert_eq!(LanguageCode::from_byte(14), None);
        assert_eq!(LanguageCode::from_name("COBOL"), None);
    }
}
