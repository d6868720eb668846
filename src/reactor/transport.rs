//! What carries a connection's bytes: plain TCP, TLS (rustls), or — for a new inbound connection — not decided
//! yet. As in Java (`TlsModeHandler`), the first byte decides: 0x16 (a TLS handshake record) is TLS, anything else
//! plain remoting; `tls.server.mode` then closes what it does not allow.
//!
//! The plain path stays what it was (an enum check, no extra copy). For TLS, ciphertext is read from the socket
//! into the rustls session and the plaintext moved to the connection's input buffer in bounded chunks, under the
//! same admission as plain bytes (`admission::may_read`): while a frame waits for room, neither the plaintext rustls holds
//! (at most its 16 KiB limit and a record) nor the socket is read, so TCP holds the sender back (decision 0032).
//! Replies are written as plaintext into the session and its records flushed to the socket. Pending TLS records
//! count as pending output, so WRITABLE interest stays registered until they are gone.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use mio::net::TcpStream;
use rustls::ServerConnection;
use tracing::warn;

use super::admission::{may_read, Admission, ReadLimits, ReadOutcome};
use crate::tls::{TlsMode, TlsSetup, HANDSHAKE_RECORD};

/// Why a sniffing connection is closed after its first bytes; the reactor logs it with the peer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SniffError {
    #[error("plain connection while tls.server.mode=enforcing")]
    PlainWhileEnforcing,
    #[error("TLS handshake while tls.server.mode=disabled")]
    TlsWhileDisabled,
    #[error("TLS handshake but no TLS context could be built")]
    NoTlsContext,
    #[error("TLS session: {0}")]
    Session(#[source] rustls::Error),
    #[error("TLS read: {0}")]
    Read(#[source] io::Error),
    #[error("TLS: {0}")]
    Tls(#[source] rustls::Error),
}

pub(crate) enum Transport {
    /// Plain remoting frames: outbound connections, and inbound ones whose first byte was not a TLS handshake.
    Plain,
    /// An inbound connection before its first byte.
    Sniff(Arc<TlsSetup>),
    /// A TLS session (boxed: it is large, and most connections are plain).
    Tls(Box<ServerConnection>),
}

impl Transport {
    /// TLS records are waiting to be written (handshake messages, encrypted replies, alerts).
    pub(crate) fn wants_write(&self) -> bool {
        matches!(self, Transport::Tls(tls) if tls.wants_write())
    }

    /// Called after a plain read: on the first bytes of a sniffing connection, decides what it is. Bytes of a TLS
    /// handshake move out of `input` into a new session; plaintext, if any, stays there until `TlsRead::fill`
    /// moves it under admission.
    /// `Err` = close the connection, with the reason.
    pub(crate) fn sniffed(&mut self, input: &mut BytesMut) -> Result<(), SniffError> {
        let Transport::Sniff(setup) = self else {
            return Ok(());
        };
        let Some(&first) = input.first() else {
            return Ok(());
        };
        if first != HANDSHAKE_RECORD {
            if setup.mode == TlsMode::Enforcing {
                return Err(SniffError::PlainWhileEnforcing);
            }
            *self = Transport::Plain;
            return Ok(());
        }
        let server = match (setup.mode, &setup.server) {
            (TlsMode::Disabled, _) => return Err(SniffError::TlsWhileDisabled),
            (_, None) => return Err(SniffError::NoTlsContext),
            (_, Some(server)) => server.clone(),
        };
        let mut tls = Box::new(ServerConnection::new(server).map_err(SniffError::Session)?);
        let ciphertext = std::mem::take(input);
        let mut rest = &ciphertext[..];
        while !rest.is_empty() {
            // Reading from a slice cannot block; each call takes at most one buffer's worth. A client sends no
            // data before the handshake is done, so rustls's plaintext limit refusing more is a broken peer.
            tls.read_tls(&mut rest).map_err(SniffError::Read)?;
            tls.process_new_packets().map_err(SniffError::Tls)?;
        }
        *self = Transport::Tls(tls);
        Ok(())
    }
}

/// A TLS connection's read side, for one `Conn::fill`.
pub(crate) struct TlsRead<'a> {
    pub tls: &'a mut ServerConnection,
    pub stream: &'a mut TcpStream,
    pub peer: SocketAddr,
}

impl TlsRead<'_> {
    /// Moves the plaintext rustls holds into `input` one `scratch` at a time, asking `may_read` before each, and
    /// reads more ciphertext only once rustls holds none: until WouldBlock or `limits.max_bytes` of ciphertext.
    pub(crate) fn fill(
        &mut self,
        input: &mut BytesMut,
        admission: &mut Admission,
        scratch: &mut [u8],
        limits: &ReadLimits,
    ) -> (ReadOutcome, usize) {
        let mut total = 0;
        loop {
            loop {
                if let Some(stop) = may_read(input, admission, limits) {
                    return (stop, total);
                }
                match self.tls.reader().read(scratch) {
                    Ok(0) => return (ReadOutcome::Closed, total), // close_notify: like a plain EOF
                    Ok(n) => input.extend_from_slice(&scratch[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => return (ReadOutcome::Closed, total), // TCP closed without close_notify
                }
            }
            if total >= limits.max_bytes {
                return (ReadOutcome::Open, total);
            }
            match self.tls.read_tls(self.stream) {
                // What came before it was decrypted and moved already (or waits for room, and cannot complete).
                Ok(0) => return (ReadOutcome::Closed, total),
                Ok(n) => total += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (ReadOutcome::Open, total),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return (ReadOutcome::Closed, total),
            }
            if let Err(e) = self.tls.process_new_packets() {
                warn!(peer = %self.peer, error = %e, "TLS error, closing the connection");
                // Best effort: the alert rustls queued tells the peer why.
                let _ = self.tls.write_tls(self.stream);
                return (ReadOutcome::Closed, total);
            }
        }
    }
}

/// Encrypts pending `output` and writes TLS records until done or WouldBlock. `Err` = the connection is broken.
pub(crate) fn flush_tls(
    tls: &mut ServerConnection,
    stream: &mut TcpStream,
    output: &mut BytesMut,
) -> io::Result<usize> {
    let mut total = 0;
    loop {
        if !output.is_empty() {
            // Takes what fits in rustls's send buffer (64 KiB by default); the rest waits in `output`.
            let n = tls.writer().write(output)?;
            output.advance(n);
        }
        if !tls.wants_write() {
            break;
        }
        match tls.write_tls(stream) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => total += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniff(mode: TlsMode, first: u8) -> (Transport, Result<(), SniffError>) {
        let mut t = Transport::Sniff(Arc::new(TlsSetup { mode, server: None }));
        let r = t.sniffed(&mut BytesMut::from(&[first, 0, 0, 0][..]));
        (t, r)
    }

    #[test]
    fn sniffing_refusals_say_which_rule() {
        assert!(matches!(sniff(TlsMode::Enforcing, 0), (_, Err(SniffError::PlainWhileEnforcing))));
        assert!(matches!(sniff(TlsMode::Permissive, 0), (Transport::Plain, Ok(()))));
        assert!(matches!(sniff(TlsMode::Disabled, HANDSHAKE_RECORD), (_, Err(SniffError::TlsWhileDisabled))));
        let (_, e) = sniff(TlsMode::Permissive, HANDSHAKE_RECORD);
        assert_eq!(e.unwrap_err().to_string(), "TLS handshake but no TLS context could be built");
    }
}
