//! A connection's identity, named by the reactors that own connections, the tables that remember which connection
//! registered a broker, and the controller's own port. Its own module on the lowest floor, so that the controller
//! names it without importing the route tables.

/// A connection, unique across reactors and over time (`gen` differs when a token is reused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId {
    pub reactor: u16,
    pub token: u32,
    pub gen: u32,
}
