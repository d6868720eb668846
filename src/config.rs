//! Configuration with the Java key names (`NamesrvConfig` + `NettyServerConfig`) and our own keys.

/// The effective configuration.
#[derive(Clone, Debug, Default)]
pub struct Config {}
