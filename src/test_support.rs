//! For the project's own tests (`tests/`) and nothing else: not an API, no stability promised, hidden from the docs.
//!
//! The integration tests need a few items that are not part of the library's surface (the manual clock, the server
//! started with a clock of the test's choosing, the controller's codes, the route tables' inputs and outputs, …).
//! They reach them here, by the path they have in the crate under `test_support::`, instead of the whole crate being
//! public (docs/decisions/0031-public-surface.md). Each line re-exports exactly what some test names; add to it when a
//! test needs more, and keep the item itself `pub` but its module private.

pub mod acl {
    pub mod signature {
        pub use crate::acl::signature::{verify, ACCESS_KEY, SIGNATURE};
    }
}

pub mod allow_list {
    pub use crate::allow_list::AllowList;
}

pub mod clock {
    pub use crate::clock::ManualClock;
}

pub mod fleet {
    pub mod facts {
        pub use crate::fleet_facts::{Facts, Items};
    }
    pub mod peer {
        pub use crate::fleet::peer::check;
    }
    pub mod wire {
        pub use crate::fleet_facts::wire::{FLEET_FACTS, FLEET_ROUTES, PEER_NOW, WANT_KV};
    }
}

pub mod handlers {
    pub mod broker {
        pub use crate::registration::encode_register_as;
    }
}

pub mod limit {
    pub use crate::limit::Limit;
}

pub mod metrics {
    pub use crate::metrics::REFUSAL_REASONS;
}

pub mod model {
    pub use crate::model::{BrokerData, ClusterInfo, DataVersion, QueueData, TopicRouteData};
}

pub mod persist {
    pub use crate::persist::load_kv;
}

pub mod protocol {
    pub mod code {
        pub use crate::protocol::code::{request_name, ControllerRequestCode, ControllerResponseCode};
    }
    pub mod command {
        pub use crate::protocol::command::FLAG_ONEWAY;
    }
}

pub mod server {
    pub use crate::server::{start, start_with_clock, ServerHandle, EXIT_THREAD_PANICKED};
}

pub mod state {
    pub mod routes {
        pub use crate::state::routes::{
            Expired, MinBrokerIdNotice, RegisterBroker, RegisterOutcome, RegisterResult, RouteSettings, RouteStamp,
            RouteTables, UnregisterBroker,
        };
    }
}
