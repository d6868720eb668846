//! TLS settings, as Java's `TlsSystemConfig` and `TlsHelper` read them: the server mode (`tls.server.mode`) and the
//! rustls server configuration built once at start — a generated self-signed certificate in test mode
//! (`tls.test.mode.enable`, Java's default), else the PEM certificate chain and key from files. The per-connection
//! part (sniffing the first byte, the TLS session) is [`crate::reactor::transport`].

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use tracing::{info, warn};

use crate::config::Config;
use crate::protocol::props;

/// What the server does with a connection, decided by its first byte (Java's `TlsModeHandler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TlsMode {
    /// A TLS handshake is closed; plain remoting is served.
    Disabled,
    /// Both are served (Java's default).
    Permissive,
    /// Plain remoting is closed; only TLS is served.
    Enforcing,
}

impl TlsMode {
    /// Java's `TlsMode.parse`: the exact lower-case names; anything else is permissive.
    pub(crate) fn parse(s: &str) -> TlsMode {
        match s {
            "disabled" => TlsMode::Disabled,
            "enforcing" => TlsMode::Enforcing,
            _ => TlsMode::Permissive,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Permissive => "permissive",
            TlsMode::Enforcing => "enforcing",
        }
    }
}

/// The first byte of a TLS handshake record. A remoting frame cannot start with it: that length (≥ 0x16000000)
/// is far over any frame limit, so the sniff is unambiguous.
pub(crate) const HANDSHAKE_RECORD: u8 = 0x16;

/// The TLS side of the server, shared by every reactor.
#[derive(Clone)]
pub(crate) struct TlsSetup {
    pub mode: TlsMode,
    /// `None` when disabled, or (permissive only) when no configuration could be built: then TLS clients are
    /// closed, as Java closes them when it has no `SslContext`.
    pub server: Option<Arc<ServerConfig>>,
}

impl TlsSetup {
    /// Plain only, TLS handshakes closed.
    pub(crate) fn disabled() -> TlsSetup {
        TlsSetup { mode: TlsMode::Disabled, server: None }
    }

    /// Builds the setup from the configuration (plus `tls.config.file`). A broken certificate setup is fatal in
    /// enforcing mode (the server could serve nobody); in permissive mode it is logged and only TLS is refused,
    /// which is what Java does in both modes.
    pub(crate) fn from_config(config: &Config) -> Result<TlsSetup, TlsError> {
        let mode = TlsMode::parse(&config.tls_server_mode);
        info!("tls.server.mode={}", mode.name());
        if mode == TlsMode::Disabled {
            return Ok(TlsSetup::disabled());
        }
        match server_config(&effective(config)) {
            Ok(server) => Ok(TlsSetup { mode, server: Some(server) }),
            Err(e) if mode == TlsMode::Permissive => {
                warn!(error = %e, "no TLS context; TLS clients will be closed, plain clients are served");
                Ok(TlsSetup { mode, server: None })
            }
            Err(e) => Err(e),
        }
    }
}

/// Why no TLS configuration could be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {reason}")]
    File { what: &'static str, path: String, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The server-side keys after `tls.config.file` is applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct TlsKeys {
    pub test_mode: bool,
    pub cert_path: String,
    pub key_path: String,
    pub key_password: String,
    pub need_client_auth: String,
    pub auth_client: bool,
    pub trust_cert_path: String,
}

/// The configured keys, overridden by those in `tls.config.file` when that file is readable (Java's
/// `TlsHelper.extractTlsConfigFromFile`; a missing file is skipped, and the mode is never read from it).
pub(crate) fn effective(config: &Config) -> TlsKeys {
    let mut keys = TlsKeys {
        test_mode: config.tls_test_mode_enable,
        cert_path: config.tls_server_cert_path.clone(),
        key_path: config.tls_server_key_path.clone(),
        key_password: config.tls_server_key_password.clone(),
        need_client_auth: config.tls_server_need_client_auth.clone(),
        auth_client: config.tls_server_auth_client,
        trust_cert_path: config.tls_server_trust_cert_path.clone(),
    };
    let path = config.tls_config_file.trim();
    let Ok(text) = std::fs::read_to_string(path) else {
        return keys;
    };
    let Ok(pairs) = props::parse(&text) else {
        warn!(path, "tls.config.file is not a properties file; ignored");
        return keys;
    };
    info!(path, "applying tls.config.file");
    for (k, v) in pairs {
        let v = v.trim().to_string();
        match k.as_str() {
            "tls.test.mode.enable" => keys.test_mode = v.eq_ignore_ascii_case("true"),
            "tls.server.certPath" => keys.cert_path = v,
            "tls.server.keyPath" => keys.key_path = v,
            "tls.server.keyPassword" => keys.key_password = v,
            "tls.server.need.client.auth" => keys.need_client_auth = v,
            "tls.server.authClient" => keys.auth_client = v.eq_ignore_ascii_case("true"),
            "tls.server.trustCertPath" => keys.trust_cert_path = v,
            _ => {}
        }
    }
    keys
}

/// The rustls server configuration for these keys.
pub(crate) fn server_config(keys: &TlsKeys) -> Result<Arc<ServerConfig>, TlsError> {
    let (chain, key) = if keys.test_mode {
        info!("TLS test mode: serving a generated self-signed certificate for localhost");
        self_signed()?
    } else {
        load_identity(keys)?
    };
    let provider = Arc::new(ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let config = match client_auth(keys, provider)? {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    }
    .with_single_cert(chain, key)?;
    Ok(Arc::new(config))
}

/// `tls.server.need.client.auth` (none / optional / require; anything else is none, as Java's
/// `parseClientAuthMode`), checked against `tls.server.trustCertPath` when `tls.server.authClient` is true, and
/// otherwise — like Java's insecure trust manager — any client certificate is taken. Test mode asks for none
/// (Java asks for an optional one, which clients without a certificate do not send either).
fn client_auth(keys: &TlsKeys, provider: Arc<CryptoProvider>) -> Result<Option<Arc<dyn ClientCertVerifier>>, TlsError> {
    let mandatory = match keys.need_client_auth.trim().to_ascii_uppercase().as_str() {
        "REQUIRE" => true,
        "OPTIONAL" => false,
        _ => return Ok(None),
    };
    if keys.test_mode {
        return Ok(None);
    }
    if !keys.auth_client {
        return Ok(Some(Arc::new(AnyClientCert { provider, mandatory })));
    }
    if keys.trust_cert_path.is_empty() {
        return Err(TlsError::Invalid("tls.server.authClient=true needs tls.server.trustCertPath".into()));
    }
    let path = &keys.trust_cert_path;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(Path::new(path)).map_err(|e| pem_error("trusted certificate", path, e))? {
        roots.add(cert.map_err(|e| pem_error("trusted certificate", path, e))?)?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if mandatory { builder } else { builder.allow_unauthenticated() };
    builder.build().map(Some).map_err(|e| TlsError::Invalid(format!("tls.server.trustCertPath {path}: {e}")))
}

fn pem_error(what: &'static str, path: &str, e: rustls_pki_types::pem::Error) -> TlsError {
    TlsError::File { what, path: path.to_string(), reason: e.to_string() }
}

/// Java's `InsecureTrustManagerFactory` on the server side (`tls.server.authClient=false`): a client certificate is
/// asked for (and required with `require`) but not checked against anything; the handshake signature still is.
#[derive(Debug)]
struct AnyClientCert {
    provider: Arc<CryptoProvider>,
    mandatory: bool,
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// A fresh self-signed certificate (ECDSA P-256) for `localhost`, like Netty's `SelfSignedCertificate` in Java's
/// test mode. Clients in test mode trust any certificate.
pub(crate) fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let generate = || -> Result<_, rcgen::Error> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()])?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
        let key = rcgen::KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok((cert, key))
    };
    let (cert, key) =
        generate().map_err(|e| TlsError::Invalid(format!("cannot generate a self-signed certificate: {e}")))?;
    let key = PrivatePkcs8KeyDer::from(key.serialize_der());
    Ok((vec![cert.der().clone()], key.into()))
}

/// The certificate chain and private key from `tls.server.certPath` / `tls.server.keyPath` (PEM; PKCS#8, PKCS#1
/// RSA or SEC1 EC keys). Encrypted keys are not supported.
fn load_identity(keys: &TlsKeys) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    if keys.cert_path.is_empty() || keys.key_path.is_empty() {
        return Err(TlsError::Invalid(
            "tls.test.mode.enable=false needs tls.server.certPath and tls.server.keyPath".into(),
        ));
    }
    if !keys.key_password.is_empty() {
        return Err(TlsError::Invalid(
            "tls.server.keyPassword: encrypted private keys are not supported; give an unencrypted PKCS#8 key".into(),
        ));
    }
    let file_err = |what, path: &String, e| pem_error(what, path, e);
    let (cert_path, key_path) = (&keys.cert_path, &keys.key_path);
    let chain = CertificateDer::pem_file_iter(Path::new(cert_path))
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| file_err("certificate", cert_path, e))?;
    if chain.is_empty() {
        return Err(TlsError::File {
            what: "certificate",
            path: cert_path.clone(),
            reason: "no CERTIFICATE in it".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(Path::new(key_path)).map_err(|e| file_err("key", key_path, e))?;
    Ok((chain, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_parses_like_java() {
        assert_eq!(TlsMode::parse("disabled"), TlsMode::Disabled);
        assert_eq!(TlsMode::parse("enforcing"), TlsMode::Enforcing);
        assert_eq!(TlsMode::parse("permissive"), TlsMode::Permissive);
        // Java compares exactly; anything else is permissive.
        assert_eq!(TlsMode::parse("ENFORCING"), TlsMode::Permissive);
        assert_eq!(TlsMode::parse(""), TlsMode::Permissive);
        assert_eq!(TlsMode::parse(&Config::default().tls_server_mode), TlsMode::Permissive);
    }

    #[test]
    fn config_file_overrides_keys_but_not_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tls.properties");
        std::fs::write(
            &file,
            "tls.server.mode=disabled\ntls.test.mode.enable=false\ntls.server.certPath=/c.pem\ntls.server.keyPath = /k.pem\n",
        )
        .unwrap();
        let config = Config {
            tls_config_file: file.to_string_lossy().into_owned(),
            tls_server_key_path: "/other.pem".into(),
            ..Config::default()
        };
        let keys = effective(&config);
        assert!(!keys.test_mode);
        assert_eq!(keys.cert_path, "/c.pem");
        assert_eq!(keys.key_path, "/k.pem");
        assert_eq!(keys.need_client_auth, "none");
        let missing = Config { tls_config_file: dir.path().join("none").to_string_lossy().into(), ..config };
        assert_eq!(effective(&missing).key_path, "/other.pem");
    }

    #[test]
    fn broken_identity_is_fatal_only_when_enforcing() {
        let base = Config {
            tls_test_mode_enable: false,
            tls_server_cert_path: "/nonexistent/cert.pem".into(),
            tls_server_key_path: "/nonexistent/key.pem".into(),
            tls_config_file: String::new(),
            ..Config::default()
        };
        let enforcing = Config { tls_server_mode: "enforcing".into(), ..base.clone() };
        let err = TlsSetup::from_config(&enforcing).err().expect("enforcing without a certificate must fail");
        assert!(err.to_string().contains("/nonexistent/cert.pem"), "{err}");
        let permissive = TlsSetup::from_config(&base).expect("permissive starts anyway");
        assert_eq!(permissive.mode, TlsMode::Permissive);
        assert!(permissive.server.is_none());
    }

    #[test]
    fn test_mode_and_pem_files_both_build() {
        let dir = tempfile::tempdir().unwrap();
        assert!(server_config(&TlsKeys { test_mode: true, ..TlsKeys::default() }).is_ok());
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
        let keys = TlsKeys {
            cert_path: cert.to_string_lossy().into(),
            key_path: key.to_string_lossy().into(),
            ..TlsKeys::default()
        };
        assert!(server_config(&keys).is_ok());
        let encrypted = TlsKeys { key_password: "secret".into(), ..keys.clone() };
        assert!(server_config(&encrypted).is_err());
        for need in ["require", "optional", "REQUIRE", "bogus"] {
            let any = TlsKeys { need_client_auth: need.into(), ..keys.clone() };
            assert!(server_config(&any).is_ok(), "{need} with authClient=false");
        }
        let no_trust = TlsKeys { need_client_auth: "require".into(), auth_client: true, ..keys.clone() };
        assert!(server_config(&no_trust).is_err(), "authClient=true without trustCertPath");
        let trusted = TlsKeys { trust_cert_path: keys.cert_path.clone(), ..no_trust };
        assert!(server_config(&trusted).is_ok());
    }
}
