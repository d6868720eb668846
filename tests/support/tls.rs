//! A blocking TLS remoting client (rustls) for `tests/suite/tls.rs`: one request at a time over a TLS session, either
//! trusting any certificate (what Java clients do in `tls.test.mode.enable`) or verifying against one given
//! certificate; and a generated certificate/key pair written as PEM files.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use namesrv::protocol::{frame, RemotingCommand, DEFAULT_MAX_FRAME};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme, StreamOwned};

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// Accepts any server certificate, still checking the handshake signatures (Java's `InsecureTrustManagerFactory`).
#[derive(Debug)]
struct TrustAnything(Arc<CryptoProvider>);

impl ServerCertVerifier for TrustAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client configuration that trusts any server certificate.
pub fn trust_anything() -> Arc<ClientConfig> {
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(TrustAnything(provider())))
        .with_no_client_auth();
    Arc::new(config)
}

/// A client configuration that trusts exactly `cert`, and presents `client`'s certificate when given.
pub fn trust_only(cert: CertificateDer<'static>, client: Option<&PemIdentity>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(cert).expect("add root");
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots);
    let config = match client {
        Some(id) => {
            let key = PrivateKeyDer::from_pem_file(&id.key_path).expect("read key.pem");
            builder.with_client_auth_cert(vec![id.cert.clone()], key).expect("client certificate")
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// A self-signed certificate for `localhost` and its PKCS#8 key, as `cert.pem` and `key.pem` in `dir`.
pub struct PemIdentity {
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    pub cert: CertificateDer<'static>,
}

pub fn write_identity(dir: &Path) -> PemIdentity {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("generate certificate");
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    std::fs::write(&cert_path, generated.cert.pem()).expect("write cert.pem");
    std::fs::write(&key_path, generated.signing_key.serialize_pem()).expect("write key.pem");
    PemIdentity { cert_path, key_path, cert: generated.cert.der().clone() }
}

/// One TLS connection speaking remoting frames.
pub struct TlsClient {
    stream: StreamOwned<ClientConnection, TcpStream>,
    buf: BytesMut,
}

impl TlsClient {
    /// Connects and completes the handshake. `Err` with the reason when the server refuses it.
    pub fn connect(addr: SocketAddr, config: Arc<ClientConfig>) -> Result<TlsClient, String> {
        let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(|e| format!("connect: {e}"))?;
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        tcp.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
        let name = ServerName::try_from("localhost").expect("server name");
        let conn = ClientConnection::new(config, name).map_err(|e| format!("TLS client: {e}"))?;
        let mut stream = StreamOwned::new(conn, tcp);
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).map_err(|e| format!("handshake: {e}"))?;
        }
        Ok(TlsClient { stream, buf: BytesMut::new() })
    }

    /// Sends raw bytes (an HTTP request) and reads everything until the server closes.
    pub fn exchange_raw(&mut self, request: &[u8]) -> Result<String, String> {
        self.stream.write_all(request).map_err(|e| format!("write: {e}"))?;
        self.stream.flush().map_err(|e| format!("flush: {e}"))?;
        let mut text = Vec::new();
        match self.stream.read_to_end(&mut text) {
            Ok(_) => Ok(String::from_utf8_lossy(&text).into_owned()),
            // A peer that closes without close_notify still said everything it had to say.
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(String::from_utf8_lossy(&text).into_owned()),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Sends `cmd` and returns the next frame (tests send one request at a time).
    pub fn request(&mut self, cmd: &RemotingCommand) -> Result<RemotingCommand, String> {
        let mut out = BytesMut::new();
        frame::encode(cmd, &mut out);
        self.stream.write_all(&out).map_err(|e| format!("write: {e}"))?;
        self.stream.flush().map_err(|e| format!("flush: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(reply) = frame::decode(&mut self.buf, DEFAULT_MAX_FRAME).map_err(|e| e.to_string())? {
                return Ok(reply);
            }
            if Instant::now() > deadline {
                return Err("timed out waiting for a reply".into());
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("connection closed".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}
