//! The differential harness: the real Java name server (5.5.0) and ours started side by side, the same requests sent
//! to both, every reply normalised (`super::normalize`) and compared. Differences fail the run with a readable diff,
//! except the deliberate ones in `ALLOWED` (each documented in `docs/compatibility.md`). Used by the scripted
//! conversation in `tests/interop/differential.rs` and by the replay of recorded peer traffic (`super::replay`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use namesrv::protocol::{RemotingCommand, SerializeType};

use super::client::Client;
use super::java::{JavaNamesrv, JAVA_5X};
use super::normalize::{line_diff, normalize, Normalized};
use super::ours::OurNamesrv;

/// How long to poll for an asynchronous change (Java applies UNREGISTER_BROKER on a background thread).
pub const POLL_FOR: Duration = Duration::from_secs(5);

/// What part of a reply differed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aspect {
    Code,
    Remark,
    Ext,
    Body,
    /// JSON (0) or ROCKETMQ (1) response header.
    HeaderEncoding,
    Version,
    Language,
    Flag,
    /// Bare (`{0:…}`) or quoted (`{"0":…}`) integer keys of `brokerAddrs`.
    KeyStyle,
    /// Raw body bytes (only checked where hash order cannot vary).
    ExactBody,
}

/// A known, deliberate difference. Every entry is also a row of the table in `docs/compatibility.md`.
pub struct Allowed {
    pub aspect: Aspect,
    pub applies: fn(&Step) -> bool,
    pub reason: &'static str,
}

pub const ALLOWED: &[Allowed] = &[
    Allowed {
        aspect: Aspect::HeaderEncoding,
        applies: |s| s.request_encoding == SerializeType::RocketMq,
        reason: "ours answers in the request's header encoding (like Java 4.9.4+); Java 5.x always answers JSON. \
                 Clients decode whatever the header word says, so content is compared, not the encoding.",
    },
    Allowed {
        aspect: Aspect::Body,
        applies: |s| s.name.starts_with("shared connection:"),
        reason: "brokers that registered on one connection: when it closes, Java evicts only the first whose live \
                 entry holds it (a `break` in onChannelDestroy) and leaves the others routed until they expire; \
                 ours evicts every one of them.",
    },
    Allowed {
        aspect: Aspect::Ext,
        applies: |s| s.name.starts_with("displaced address:"),
        reason: "the live entry of an address no group holds any more (another address took its id): Java keeps \
                 it after its connection closes, forever, and answers QUERY_DATA_VERSION from it (changed=false); \
                 ours drops it (changed=true, no body).",
    },
    Allowed {
        aspect: Aspect::Body,
        applies: |s| s.name.starts_with("displaced address:"),
        reason: "see the Ext entry of the same step: Java answers with the DataVersion of the entry it kept.",
    },
    Allowed {
        aspect: Aspect::ExactBody,
        applies: |s| s.name.starts_with("displaced address:"),
        reason: "see the Ext entry of the same step.",
    },
    Allowed {
        aspect: Aspect::Remark,
        applies: |s| s.name.starts_with("register topic, a number entry") || s.name.starts_with("register topic, a string entry"),
        reason: "a 217 body fastjson2 cannot read (a scalar where a QueueData belongs): Java's remark is the \
                 JSONException text with a stack frame; ours names the entry. Same code (SYSTEM_ERROR), nothing applied.",
    },
    Allowed {
        aspect: Aspect::Remark,
        applies: |s| s.name.starts_with("register without brokerId"),
        reason: "Java's remark is the NullPointerException text plus a stack frame; ours states the problem. \
                 Clients only look at the code (SYSTEM_ERROR).",
    },
];

/// One scripted exchange, as the allow-list sees it.
pub struct Step {
    pub name: String,
    pub request_encoding: SerializeType,
}

/// Per-step expectations beyond "ours equals Java".
#[derive(Clone, Copy, Default)]
pub struct Check {
    /// Java's reply code must be this (guards the script itself: a step that does not do what it says is a bug).
    pub java_code: Option<i32>,
    /// Compare raw body bytes too (only where no hash order is involved).
    pub exact_body: bool,
}

pub fn code(c: i32) -> Check {
    Check { java_code: Some(c), exact_body: false }
}

pub fn exact(c: i32) -> Check {
    Check { java_code: Some(c), exact_body: true }
}

pub struct Side {
    pub name: &'static str,
    pub addr: SocketAddr,
    pub conns: BTreeMap<String, Client>,
    /// The server's listen port and the directories its paths live in, for GET_NAMESRV_CONFIG normalisation.
    pub port: u16,
    pub roots: Vec<PathBuf>,
    /// The `-c` file, which UPDATE_NAMESRV_CONFIG rewrites.
    pub config_file: PathBuf,
}

impl Side {
    fn new(name: &'static str, addr: SocketAddr, roots: Vec<PathBuf>, config_file: PathBuf) -> Side {
        Side { name, addr, conns: BTreeMap::new(), port: addr.port(), roots, config_file }
    }
}

impl Side {
    /// A failure line if `client` (this side's connection `conn`) received frames that answered no request.
    fn strays(&self, conn: &str, client: &Client) -> Option<String> {
        (!client.strays.is_empty()).then(|| {
            format!(
                "{} sent {} unsolicited frame(s) on connection {conn}: {:?}",
                self.name,
                client.strays.len(),
                client.strays
            )
        })
    }

    pub fn conn(&mut self, name: &str) -> &mut Client {
        let addr = self.addr;
        self.conns.entry(name.to_string()).or_insert_with(|| Client::connect(addr))
    }
}

pub struct Run {
    pub java: Side,
    pub ours: Side,
    pub opaque: i32,
    pub failures: Vec<String>,
    pub allowed: Vec<String>,
    pub steps: usize,
}

impl Run {
    pub fn opaque(&mut self) -> i32 {
        self.opaque += 1;
        self.opaque
    }

    pub fn req(&mut self, code: i32) -> RemotingCommand {
        RemotingCommand::request(code, self.opaque())
    }

    /// Sends `cmd` on connection `conn` of both servers and compares the replies. Returns Java's reply.
    pub fn exchange(&mut self, name: &str, conn: &str, cmd: RemotingCommand, check: Check) -> Normalized {
        let j = normalize(&self.java.conn(conn).request(cmd.clone()));
        let o = normalize(&self.ours.conn(conn).request(cmd.clone()));
        self.compare(name, &cmd, &j, &o, check);
        j
    }

    /// Like `exchange`, for replies whose body is properties text (GET_NAMESRV_CONFIG): the body is parsed, and
    /// values that are this server's port or paths under its directories are replaced by placeholders (the key
    /// sets and all other values are compared as they are).
    pub fn exchange_props(&mut self, name: &str, conn: &str, cmd: RemotingCommand, check: Check) -> Normalized {
        let j = normalize(&self.java.conn(conn).request(cmd.clone()));
        let o = normalize(&self.ours.conn(conn).request(cmd.clone()));
        self.compare_props(name, &cmd, j, o, check)
    }

    /// Like `exchange`, but sends `frame` (the encoded `cmd`, byte for byte as a peer sent it) instead of encoding
    /// `cmd` again. GET_NAMESRV_CONFIG replies are compared as in `exchange_props`.
    pub fn exchange_frame(
        &mut self,
        name: &str,
        conn: &str,
        cmd: &RemotingCommand,
        frame: &[u8],
        check: Check,
    ) -> Normalized {
        let j = normalize(&self.java.conn(conn).request_frame(frame, cmd.opaque));
        let o = normalize(&self.ours.conn(conn).request_frame(frame, cmd.opaque));
        if cmd.code == namesrv::protocol::RequestCode::GET_NAMESRV_CONFIG {
            return self.compare_props(name, cmd, j, o, check);
        }
        self.compare(name, cmd, &j, &o, check);
        j
    }

    /// Sends an encoded one-way request frame to both servers.
    pub fn oneway_frame(&mut self, conn: &str, frame: &[u8]) {
        self.java.conn(conn).send_raw(frame);
        self.ours.conn(conn).send_raw(frame);
    }

    /// Closes connection `conn` on both servers (after checking it received nothing unasked).
    pub fn close(&mut self, conn: &str) {
        for side in [&mut self.java, &mut self.ours] {
            if let Some(client) = side.conns.remove(conn) {
                self.failures.extend(side.strays(conn, &client));
            }
        }
    }

    /// Repeats `cmd` on connection `conn` of each server until `done` holds for its reply, for at most `POLL_FOR`;
    /// compares nothing. For waiting out state that Java changes asynchronously (unregistration, eviction after a
    /// close) before the next compared request.
    pub fn settle(&mut self, conn: &str, cmd: &RemotingCommand, done: impl Fn(&Normalized) -> bool) {
        for side in [&mut self.java, &mut self.ours] {
            super::eventually(POLL_FOR, || {
                let mut c = cmd.clone();
                c.opaque = side.conn(conn).opaque();
                done(&normalize(&side.conn(conn).request(c)))
            });
        }
    }

    /// `settle` on our server only: for a change Java does not make (a deliberate difference), so waiting on Java
    /// would only wait out `POLL_FOR`.
    pub fn settle_ours(&mut self, conn: &str, cmd: &RemotingCommand, done: impl Fn(&Normalized) -> bool) {
        super::eventually(POLL_FOR, || {
            let mut c = cmd.clone();
            c.opaque = self.ours.conn(conn).opaque();
            done(&normalize(&self.ours.conn(conn).request(c)))
        });
    }

    /// Normalises two properties-text replies (see `exchange_props`) and compares them.
    fn compare_props(
        &mut self,
        name: &str,
        cmd: &RemotingCommand,
        mut j: Normalized,
        mut o: Normalized,
        check: Check,
    ) -> Normalized {
        super::normalize::normalize_properties(&mut j, self.java.port, &self.java.roots);
        super::normalize::normalize_properties(&mut o, self.ours.port, &self.ours.roots);
        for (side, n) in [("java", &j), ("ours", &o)] {
            let text = String::from_utf8_lossy(&n.raw_body);
            let keys: Vec<&str> = text.lines().map(|l| l.split('=').next().unwrap_or(l)).collect();
            if !keys.windows(2).all(|w| w[0] < w[1]) {
                self.failures.push(format!("[{name}] {side}: properties are not sorted by key:\n{text}"));
            }
        }
        self.compare(name, cmd, &j, &o, check);
        j
    }

    /// Compares the two `-c` files as properties (normalised like `exchange_props`), as a step named `name`.
    pub fn compare_config_files(&mut self, name: &str) {
        let read = |side: &Side| {
            let bytes = std::fs::read(&side.config_file)
                .unwrap_or_else(|e| panic!("{}: read {}: {e}", side.name, side.config_file.display()));
            let mut n = normalize(&RemotingCommand::request(0, 0).with_body(bytes));
            super::normalize::normalize_properties(&mut n, side.port, &side.roots);
            n
        };
        let (j, o) = (read(&self.java), read(&self.ours));
        self.compare(name, &RemotingCommand::request(0, 0), &j, &o, Check::default());
    }

    /// Sends `cmd` one-way on both servers.
    pub fn oneway(&mut self, conn: &str, cmd: RemotingCommand) {
        self.java.conn(conn).oneway(cmd.clone());
        self.ours.conn(conn).oneway(cmd);
    }

    /// Repeats `cmd` (fresh opaque each time) on each server until `done` holds for its reply or `POLL_FOR` passes,
    /// then compares the last replies.
    pub fn poll(
        &mut self,
        name: &str,
        conn: &str,
        cmd: RemotingCommand,
        done: impl Fn(&Normalized) -> bool,
        check: Check,
    ) {
        let mut last = Vec::new();
        for side in [&mut self.java, &mut self.ours] {
            let mut opaque = 1_000_000;
            let mut reply = None;
            let reached = super::eventually(POLL_FOR, || {
                let mut c = cmd.clone();
                opaque += 1;
                c.opaque = opaque;
                let got = reply.insert(normalize(&side.conn(conn).request(c)));
                done(got)
            });
            let reply = reply.expect("asked at least once");
            if !reached {
                self.failures.push(format!(
                    "[{name}] {}: condition not reached within {POLL_FOR:?}; last reply:\n{}",
                    side.name,
                    reply.render()
                ));
            }
            last.push(reply);
        }
        let o = last.pop().expect("ours");
        let j = last.pop().expect("java");
        self.compare(name, &cmd, &j, &o, check);
    }

    pub fn compare(&mut self, name: &str, cmd: &RemotingCommand, j: &Normalized, o: &Normalized, check: Check) {
        self.steps += 1;
        let step = Step { name: name.to_string(), request_encoding: cmd.serialize_type };
        if let Some(c) = check.java_code {
            if j.code != c {
                self.failures
                    .push(format!("[{name}] the script expected Java to answer {c}, it answered:\n{}", j.render()));
            }
        }
        let mut differing = Vec::new();
        let mut note = |aspect: Aspect, jv: String, ov: String| differing.push((aspect, jv, ov));
        if j.code != o.code {
            note(Aspect::Code, j.code.to_string(), o.code.to_string());
        }
        if j.remark != o.remark {
            note(Aspect::Remark, format!("{:?}", j.remark), format!("{:?}", o.remark));
        }
        if j.ext != o.ext {
            note(Aspect::Ext, format!("{:?}", j.ext), format!("{:?}", o.ext));
        }
        if j.body != o.body {
            note(Aspect::Body, String::new(), String::new());
        }
        if j.header_encoding != o.header_encoding {
            note(Aspect::HeaderEncoding, format!("{:?}", j.header_encoding), format!("{:?}", o.header_encoding));
        }
        if j.version != o.version {
            note(Aspect::Version, j.version.to_string(), o.version.to_string());
        }
        if j.language != o.language {
            note(Aspect::Language, format!("{:?}", j.language), format!("{:?}", o.language));
        }
        if j.flag != o.flag {
            note(Aspect::Flag, j.flag.to_string(), o.flag.to_string());
        }
        if j.key_style != o.key_style {
            note(Aspect::KeyStyle, format!("{:?}", j.key_style), format!("{:?}", o.key_style));
        }
        if check.exact_body && j.raw_body != o.raw_body {
            note(
                Aspect::ExactBody,
                String::from_utf8_lossy(&j.raw_body).into_owned(),
                String::from_utf8_lossy(&o.raw_body).into_owned(),
            );
        }
        let mut unexplained = Vec::new();
        for (aspect, jv, ov) in differing {
            match ALLOWED.iter().find(|a| a.aspect == aspect && (a.applies)(&step)) {
                Some(a) => {
                    self.allowed.push(format!("[{name}] {aspect:?}: java {jv} / ours {ov} (allowed: {})", a.reason))
                }
                None if aspect == Aspect::Body => unexplained
                    .push(format!("{aspect:?} differs (- java, + ours):\n{}", line_diff(&j.render(), &o.render()))),
                None => {
                    unexplained.push(format!("{aspect:?}: java {jv}\n{:>w$}ours {ov}", "", w = aspect_width(aspect)))
                }
            }
        }
        if !unexplained.is_empty() {
            self.failures.push(format!(
                "[{name}] request code {} ({} header, version {}):\n  {}\n--- java ---\n{}--- ours ---\n{}",
                cmd.code,
                cmd.serialize_type.name(),
                cmd.version,
                unexplained.join("\n  "),
                j.render(),
                o.render()
            ));
        }
    }
}

fn aspect_width(a: Aspect) -> usize {
    format!("{a:?}: ").len() + 2
}

/// Starts both servers (with `both_extra` properties in both `-c` files and `our_extra` in ours), runs `script`
/// against them and fails on any difference that is not allow-listed.
pub fn run_script(what: &str, both_extra: &[(&str, &str)], our_extra: &[(&str, &str)], script: impl FnOnce(&mut Run)) {
    let t0 = Instant::now();
    let owned = |l: &[(&str, &str)]| -> Vec<(String, String)> {
        l.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let java_extra = owned(both_extra);
    let mut our_extra = owned(our_extra);
    our_extra.extend(owned(both_extra));
    let java = std::thread::spawn(move || {
        let extra: Vec<(&str, &str)> = java_extra.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        JavaNamesrv::start_with(JAVA_5X, &extra)
    });
    let extra: Vec<(&str, &str)> = our_extra.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let ours = OurNamesrv::start_with(&extra);
    let java = java.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
    let mut our_roots = vec![ours.dir().to_path_buf()];
    our_roots.extend(our_extra.iter().filter(|(k, _)| k == "rocketmqHome").map(|(_, v)| PathBuf::from(v)));
    let mut run = Run {
        java: Side::new(
            "java",
            java.addr(),
            vec![java.dir().to_path_buf()],
            java.dir().join("conf/namesrv.properties"),
        ),
        ours: Side::new("ours", ours.addr(), our_roots, ours.dir().join("namesrv.properties")),
        opaque: 0,
        failures: Vec::new(),
        allowed: Vec::new(),
        steps: 0,
    };

    script(&mut run);

    // Nothing may have arrived that answered no request (one-way requests get no reply).
    for side in [&run.java, &run.ours] {
        for (conn, client) in &side.conns {
            run.failures.extend(side.strays(conn, client));
        }
    }

    eprintln!(
        "differential {what}: {} steps in {:?}, {} allowed difference(s)",
        run.steps,
        t0.elapsed(),
        run.allowed.len()
    );
    for a in &run.allowed {
        eprintln!("  {a}");
    }
    if !run.failures.is_empty() {
        panic!(
            "{what}: {} difference(s) between Java {} and ours:\n\n{}\n\n{}\n{}",
            run.failures.len(),
            java.version(),
            run.failures.join("\n\n"),
            java.log(),
            ours.log()
        );
    }
}
