//! The admin CLI's connection to one server: the crate's blocking remoting client ([`crate::remoting::Conn`]) with the
//! `--timeout` as its every wait, and its failures said as the CLI says them.

use std::time::Duration;

use crate::protocol::RemotingCommand;
use crate::remoting::{Conn, RemoteError};

use super::CliError;

pub(super) struct Client {
    conn: Conn,
    /// The address as the user wrote it, for messages.
    addr: String,
}

impl Client {
    /// Resolves `addr` (`host:port`) and connects to the first address that accepts within `timeout`.
    pub(super) fn connect(addr: &str, timeout: Duration) -> Result<Client, CliError> {
        let conn = Conn::connect(addr, timeout, timeout).map_err(|e| failed(addr, e))?;
        Ok(Client { conn, addr: addr.to_string() })
    }

    /// Signs every request with `credentials` from now on.
    pub(super) fn signing(mut self, credentials: Option<(String, crate::acl::signature::Key)>) -> Client {
        self.conn = self.conn.signing(credentials);
        self
    }

    pub(super) fn addr(&self) -> &str {
        &self.addr
    }

    /// A request with a fresh opaque (JSON header, language JAVA, version 513).
    pub(super) fn cmd(&mut self, code: i32) -> RemotingCommand {
        self.conn.request(code)
    }

    /// Sends `cmd` and waits for the response with its opaque; other frames are skipped.
    pub(super) fn request(&mut self, cmd: RemotingCommand) -> Result<RemotingCommand, CliError> {
        self.conn.ask(cmd).map_err(|e| failed(&self.addr, e))
    }
}

/// `e`, in the CLI's words: not reached, or reached and the exchange failed.
fn failed(addr: &str, e: RemoteError) -> CliError {
    let addr = addr.to_string();
    let reason = match e {
        e if e.is_unreachable() => return CliError::Unreachable { addr, reason: e.to_string() },
        RemoteError::Send(e) => format!("cannot send the request: {e}"),
        RemoteError::Frame(e) => format!("undecodable response: {e}"),
        RemoteError::Timeout(t) => format!("no response within {} ms", t.as_millis()),
        RemoteError::Closed => "connection closed by the server".to_string(),
        RemoteError::Read(e) => format!("cannot read the response: {e}"),
        // Unreachable, above.
        e => e.to_string(),
    };
    CliError::Io { addr, reason }
}
