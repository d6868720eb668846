//! A stand-in for a 5.x broker with `authenticationEnabled=true`, as far as a name server sees it: it answers
//! AUTH_LIST_USER (3005) with its users when the request is signed by the inner credential it was given, and
//! NO_PERMISSION otherwise, as the 5.5.0 broker does (`../shared/reference/acl2.md`, seen on a real broker). Its
//! users can be changed while it runs, and it can be stopped and started on the same port.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::{frame, RemotingCommand, DEFAULT_MAX_FRAME};
use namesrv::test_support::acl::signature;

pub struct AuthBroker {
    pub addr: SocketAddr,
    /// The JSON list it answers with.
    pub users: Arc<Mutex<String>>,
    /// AUTH_LIST_USER requests it answered, by outcome.
    pub listed: Arc<AtomicUsize>,
    pub refused: Arc<AtomicUsize>,
    /// The last request it received, as it came (to replay it).
    pub last: Arc<Mutex<Option<RemotingCommand>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A user as the broker lists it.
pub fn user(name: &str, password: &str, kind: &str, status: &str) -> String {
    format!(r#"{{"password":"{password}","userStatus":"{status}","userType":"{kind}","username":"{name}"}}"#)
}

impl AuthBroker {
    /// Listens on a free port; `inner` is the (access key, secret key) it accepts AUTH_LIST_USER from.
    pub fn start(inner: (&str, &str), users: &[String]) -> AuthBroker {
        Self::start_on("127.0.0.1", inner, users)
    }

    /// `start`, listening on another loopback address (`127.0.0.2`: a broker that is not where its registration
    /// came from).
    pub fn start_on(ip: &str, inner: (&str, &str), users: &[String]) -> AuthBroker {
        let listener = TcpListener::bind((ip, 0)).expect("bind");
        let addr = listener.local_addr().unwrap();
        let users = Arc::new(Mutex::new(format!("[{}]", users.join(","))));
        let (listed, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let stop = Arc::new(AtomicBool::new(false));
        let last = Arc::new(Mutex::new(None));
        let thread = {
            let (users, listed, refused, stop) = (users.clone(), listed.clone(), refused.clone(), stop.clone());
            let last = last.clone();
            let (ak, sk) = (inner.0.to_string(), inner.1.to_string());
            listener.set_nonblocking(true).unwrap();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    match listener.accept() {
                        Ok((mut s, _)) => {
                            s.set_nonblocking(false).unwrap();
                            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                            let Some(req) = read_request(&mut s) else { continue };
                            let ok = req.code == 3005 && signed_by(&req, &ak, &sk);
                            *last.lock().unwrap() = Some(req.clone());
                            let answer = if ok {
                                listed.fetch_add(1, Ordering::Relaxed);
                                let body = users.lock().unwrap().clone().into_bytes();
                                RemotingCommand::response_to(&req, 0, None).with_body(body)
                            } else {
                                refused.fetch_add(1, Ordering::Relaxed);
                                RemotingCommand::response_to(&req, 16, Some("check signature failed.".into()))
                            };
                            let mut out = BytesMut::new();
                            frame::encode(&answer, &mut out);
                            let _ = s.write_all(&out);
                        }
                        // Polled: the stand-in has one client, the name server's refresh, once a second at most.
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        AuthBroker { addr, users, listed, refused, last, stop, thread: Some(thread) }
    }

    pub fn set_users(&self, users: &[String]) {
        *self.users.lock().unwrap() = format!("[{}]", users.join(","));
    }

    /// Stops answering: the port is closed.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for AuthBroker {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_request(s: &mut std::net::TcpStream) -> Option<RemotingCommand> {
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Ok(Some(cmd)) = frame::decode(&mut buf, DEFAULT_MAX_FRAME) {
            return Some(cmd);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn signed_by(req: &RemotingCommand, ak: &str, sk: &str) -> bool {
    let Some(ext) = req.ext_fields.as_ref() else { return false };
    ext.get(signature::ACCESS_KEY) == Some(ak)
        && ext.get(signature::SIGNATURE).is_some_and(|sig| signature::verify(ext, &req.body, sk.as_bytes(), sig))
}
