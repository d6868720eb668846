//! Frames the controller sends on its own: 1008 to brokers (Java `invokeOneway(addr, request, 3000)`), on a new
//! connection each time — role changes are rare, and a broker that is gone must not hold anything up.

use std::time::Duration;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tracing::{debug, warn};

use crate::protocol::command::RemotingCommand;
use crate::protocol::frame;

const ONEWAY_TIMEOUT: Duration = Duration::from_secs(3);

/// Sends `cmd` to `addr` in the background; failures are logged, as Java logs them.
pub(crate) fn send_oneway(addr: String, cmd: RemotingCommand) {
    tokio::spawn(async move {
        let mut out = BytesMut::new();
        frame::encode(&cmd, &mut out);
        let send = async {
            let mut stream = TcpStream::connect(&addr).await?;
            stream.write_all(&out).await?;
            stream.shutdown().await
        };
        match tokio::time::timeout(ONEWAY_TIMEOUT, send).await {
            Ok(Ok(())) => debug!(target: "controller", %addr, code = cmd.code, "one-way sent"),
            Ok(Err(e)) => warn!(target: "controller", %addr, code = cmd.code, error = %e, "one-way failed"),
            Err(_) => warn!(target: "controller", %addr, code = cmd.code, "one-way timed out"),
        }
    });
}
