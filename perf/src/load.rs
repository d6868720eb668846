//! The load engine: mio, many connections, pipelined GET_ROUTEINFO_BY_TOPIC queries (closed loop: `depth` in flight
//! per connection; open loop: a fixed total rate, latency measured from the intended send time so a stalled server
//! is not hidden) and simulated brokers re-registering on their own connections. Bounded by time and request count.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use namesrv::protocol::SerializeType;

use crate::pace::Pacer;
use crate::wire::{encode_into, peek_frame, register_request, route_request, BrokerIdent};

/// Query traffic.
#[derive(Clone, Debug)]
pub struct QueryLoad {
    pub conns: usize,
    /// Most requests in flight per connection.
    pub depth: usize,
    /// Open loop at this total rate (requests/s); `None` = closed loop.
    pub rate: Option<f64>,
    pub topics: Arc<Vec<String>>,
    pub header: SerializeType,
    /// Sign every query as `AclClientRPCHook` does, with (access key, secret key).
    pub sign: Option<(String, String)>,
}

/// Simulated brokers: each re-registers every `interval` (back to back when zero), cycling through its bodies.
#[derive(Clone, Debug, Default)]
pub struct BrokerLoad {
    pub brokers: Vec<(BrokerIdent, Arc<Vec<Bytes>>)>,
    pub interval: Duration,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub addr: SocketAddr,
    pub query: QueryLoad,
    pub brokers: BrokerLoad,
    pub duration: Duration,
    /// Stop after this many query responses (per thread share).
    pub max_requests: u64,
    pub threads: usize,
}

/// What one run measured. Latencies in nanoseconds.
#[derive(Clone, Debug)]
pub struct Stats {
    pub read: Histogram<u64>,
    pub reg: Histogram<u64>,
    pub ok: u64,
    pub not_found: u64,
    pub errors: u64,
    pub regs_ok: u64,
    pub regs_err: u64,
    /// Registrations that were due while the previous one of that broker was still in flight.
    pub regs_missed: u64,
    pub elapsed: Duration,
}

impl Stats {
    fn new() -> Stats {
        let h = || Histogram::new_with_bounds(1_000, 120_000_000_000, 3).expect("histogram bounds");
        Stats {
            read: h(),
            reg: h(),
            ok: 0,
            not_found: 0,
            errors: 0,
            regs_ok: 0,
            regs_err: 0,
            regs_missed: 0,
            elapsed: Duration::ZERO,
        }
    }

    fn merge(&mut self, o: &Stats) {
        self.read.add(&o.read).expect("same bounds");
        self.reg.add(&o.reg).expect("same bounds");
        self.ok += o.ok;
        self.not_found += o.not_found;
        self.errors += o.errors;
        self.regs_ok += o.regs_ok;
        self.regs_err += o.regs_err;
        self.regs_missed += o.regs_missed;
        self.elapsed = self.elapsed.max(o.elapsed);
    }

    /// Query responses per second.
    pub fn qps(&self) -> f64 {
        (self.ok + self.not_found + self.errors) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// A read-latency quantile in microseconds.
    pub fn read_us(&self, q: f64) -> f64 {
        self.read.value_at_quantile(q) as f64 / 1000.0
    }

    pub fn reg_us(&self, q: f64) -> f64 {
        self.reg.value_at_quantile(q) as f64 / 1000.0
    }

    pub fn summary(&self) -> String {
        let mut s = format!(
            "queries {:.0}/s (ok {}, not found {}, errors {}) p50 {:.0} µs p99 {:.0} µs p999 {:.0} µs max {:.0} µs",
            self.qps(),
            self.ok,
            self.not_found,
            self.errors,
            self.read_us(0.5),
            self.read_us(0.99),
            self.read_us(0.999),
            self.read.max() as f64 / 1000.0
        );
        if self.regs_ok + self.regs_err + self.regs_missed > 0 {
            s += &format!(
                "\n  registrations {:.1}/s (ok {}, errors {}, missed {}) p50 {:.1} ms p99 {:.1} ms p999 {:.1} ms",
                self.regs_ok as f64 / self.elapsed.as_secs_f64().max(1e-9),
                self.regs_ok,
                self.regs_err,
                self.regs_missed,
                self.reg_us(0.5) / 1000.0,
                self.reg_us(0.99) / 1000.0,
                self.reg_us(0.999) / 1000.0
            );
        }
        s
    }
}

/// Runs the queries on `spec.threads` threads (connections dealt round-robin) and the simulated brokers on one
/// more, and merges the results.
pub fn run(spec: &Spec) -> io::Result<Stats> {
    run_keeping(spec).map(|(stats, _)| stats)
}

/// `run`, returning the simulated brokers' connections open: closing the connection a broker last registered on
/// evicts it (Java closes the channel's broker out too), so a caller running phases back to back keeps them until
/// the next phase's brokers have registered again.
///
/// Brokers have a thread of their own because writing a big registration (~1.5 MB for 10k topics) keeps a loop busy
/// for a millisecond or more: a query answered meanwhile would wait in the generator, and that wait would count as
/// the server's latency, growing with the registration rate whatever the server did.
pub fn run_keeping(spec: &Spec) -> io::Result<(Stats, Vec<TcpStream>)> {
    let threads = spec.threads.max(1);
    // Set once every query thread is done, so the broker thread stops with them (`max_requests` may end a run
    // before its duration).
    let stop = Arc::new(AtomicBool::new(false));
    let spawn = |name: String, part: Part| {
        let spec = spec.clone();
        let stop = stop.clone();
        std::thread::Builder::new().name(name).spawn(move || run_part(&spec, part, &stop))
    };
    let queries: Vec<_> = (0..threads)
        .map(|t| spawn(format!("perf-load-{t}"), Part::Queries { part: t, parts: threads }))
        .collect::<io::Result<_>>()?;
    let brokers =
        if spec.brokers.brokers.is_empty() { None } else { Some(spawn("perf-brokers".into(), Part::Brokers)?) };
    let joined = |h: std::thread::JoinHandle<io::Result<(Stats, Vec<TcpStream>)>>| {
        h.join().map_err(|_| io::Error::other("load thread panicked")).and_then(|r| r)
    };
    let parts: Vec<_> = queries.into_iter().map(joined).collect();
    stop.store(true, Ordering::Relaxed);
    let broker_part = brokers.map(joined);
    let mut total = Stats::new();
    let mut kept = Vec::new();
    for part in parts.into_iter().chain(broker_part) {
        let (part, conns) = part?;
        total.merge(&part);
        kept.extend(conns);
    }
    Ok((total, kept))
}

/// Which connections one thread of a run drives.
#[derive(Clone, Copy)]
enum Part {
    /// Query connections `part`, `part + parts`, …
    Queries { part: usize, parts: usize },
    /// Every simulated broker.
    Brokers,
}

enum Role {
    Query { cursor: usize, next_due: Instant, period: Duration, backlog: VecDeque<Instant> },
    Broker { ident: BrokerIdent, bodies: Arc<Vec<Bytes>>, next_due: Instant, sent: usize },
}

struct Conn {
    stream: TcpStream,
    out: Vec<u8>,
    out_pos: usize,
    inb: Vec<u8>,
    inflight: HashMap<i32, Instant>,
    next_opaque: i32,
    writable: bool,
    role: Role,
}

fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_nodelay(true)?;
    s.set_nonblocking(true)?;
    Ok(TcpStream::from_std(s))
}

fn run_part(spec: &Spec, which: Part, stop: &AtomicBool) -> io::Result<(Stats, Vec<TcpStream>)> {
    let mut poll = Poll::new()?;
    let mut conns: Vec<Conn> = Vec::new();
    let start = Instant::now();
    let q = &spec.query;
    let period = q.rate.map(|r| Duration::from_secs_f64(q.conns as f64 / r.max(1e-6)));
    let (queries, parts) = match which {
        Part::Queries { part, parts } => ((part..q.conns).step_by(parts), parts),
        Part::Brokers => ((0..0).step_by(1), 1),
    };
    for i in queries {
        let offset = period.map_or(Duration::ZERO, |p| p.mul_f64(i as f64 / q.conns as f64));
        let role = Role::Query {
            cursor: i * 7919,
            next_due: start + offset,
            period: period.unwrap_or(Duration::ZERO),
            backlog: VecDeque::new(),
        };
        conns.push(new_conn(spec.addr, role)?);
    }
    let nb = spec.brokers.brokers.len();
    let brokers = if matches!(which, Part::Brokers) { spec.brokers.brokers.as_slice() } else { &[] };
    for (i, (ident, bodies)) in brokers.iter().enumerate() {
        let offset = spec.brokers.interval.mul_f64(i as f64 / nb.max(1) as f64);
        let role = Role::Broker { ident: ident.clone(), bodies: bodies.clone(), next_due: start + offset, sent: 0 };
        conns.push(new_conn(spec.addr, role)?);
    }
    for (i, c) in conns.iter_mut().enumerate() {
        poll.registry().register(&mut c.stream, Token(i), Interest::READABLE)?;
    }

    let mut stats = Stats::new();
    let end = start + spec.duration;
    let max = (spec.max_requests / parts as u64).max(1);
    let mut events = Events::with_capacity(1024);
    let mut chunk = vec![0u8; 256 * 1024];
    // Whatever is due at a set time (open-loop queries, brokers' registrations) is sent when a timer fires. Whether
    // a thread has anything timed depends on its part: a closed-loop query thread has not, and waits on answers.
    let timed = match which {
        Part::Queries { .. } => q.rate.is_some(),
        Part::Brokers => true,
    };
    let pacer = if timed { Some(Pacer::new(poll.registry(), PACER)?) } else { None };
    loop {
        let now = Instant::now();
        if now >= end || stats.ok + stats.not_found + stats.errors >= max || stop.load(Ordering::Relaxed) {
            break;
        }
        for (i, c) in conns.iter_mut().enumerate() {
            pump(c, q, spec.brokers.interval, now, &mut stats);
            flush(c, &poll, Token(i))?;
        }
        let timeout = match &pacer {
            Some(p) => {
                if let Some(at) = conns.iter().filter_map(|c| c.due(spec.brokers.interval)).min() {
                    p.arm(at)?;
                }
                end.saturating_duration_since(now)
            }
            // Closed loop: answers drive the sends.
            None => Duration::from_millis(5).min(end.saturating_duration_since(now)),
        };
        poll.poll(&mut events, Some(timeout))?;
        for ev in events.iter() {
            if ev.token() == PACER {
                pacer.as_ref().expect("registered with it").clear();
                continue;
            }
            let i = ev.token().0;
            let c = &mut conns[i];
            if ev.is_writable() {
                flush(c, &poll, ev.token())?;
            }
            if ev.is_readable() || ev.is_read_closed() {
                read_responses(c, &mut chunk, end, &mut stats)?;
                pump(c, q, spec.brokers.interval, Instant::now(), &mut stats);
                flush(c, &poll, ev.token())?;
            }
        }
    }
    stats.elapsed = start.elapsed().min(spec.duration).max(Duration::from_millis(1));
    if stats.ok + stats.not_found + stats.errors >= max {
        stats.elapsed = start.elapsed();
    }
    let brokers = conns.into_iter().filter(|c| matches!(c.role, Role::Broker { .. })).map(|c| c.stream).collect();
    Ok((stats, brokers))
}

/// The poll token of a part's timer (connections use their index).
const PACER: Token = Token(usize::MAX);

impl Conn {
    /// When `pump` next has something to send on its own, without an answer coming first.
    fn due(&self, interval: Duration) -> Option<Instant> {
        match &self.role {
            Role::Query { next_due, period, .. } => (!period.is_zero()).then_some(*next_due),
            // Back to back (zero interval), the next registration follows the answer.
            Role::Broker { next_due, .. } => (self.inflight.is_empty() || !interval.is_zero()).then_some(*next_due),
        }
    }
}

fn new_conn(addr: SocketAddr, role: Role) -> io::Result<Conn> {
    Ok(Conn {
        stream: connect(addr)?,
        out: Vec::with_capacity(64 * 1024),
        out_pos: 0,
        inb: Vec::with_capacity(256 * 1024),
        inflight: HashMap::new(),
        next_opaque: 0,
        writable: false,
        role,
    })
}

/// Queues whatever is due on `c`.
fn pump(c: &mut Conn, q: &QueryLoad, interval: Duration, now: Instant, stats: &mut Stats) {
    match &mut c.role {
        Role::Query { cursor, next_due, period, backlog } => {
            if q.rate.is_some() {
                while *next_due <= now {
                    backlog.push_back(*next_due);
                    *next_due += *period;
                }
            }
            while c.inflight.len() < q.depth {
                let t0 = if q.rate.is_some() {
                    match backlog.pop_front() {
                        Some(t) => t,
                        None => break,
                    }
                } else {
                    now
                };
                *cursor = cursor.wrapping_add(1);
                let topic = &q.topics[*cursor % q.topics.len()];
                c.next_opaque = c.next_opaque.wrapping_add(1);
                let mut req = route_request(topic, c.next_opaque, q.header);
                if let Some((ak, sk)) = &q.sign {
                    req = crate::wire::signed(req, ak, sk);
                }
                encode_into(&req, &mut c.out);
                c.inflight.insert(c.next_opaque, t0);
            }
        }
        Role::Broker { ident, bodies, next_due, sent } => {
            if *next_due > now {
                return;
            }
            if !c.inflight.is_empty() {
                if !interval.is_zero() {
                    stats.regs_missed += 1;
                    *next_due += interval;
                }
                return;
            }
            let body = bodies[*sent % bodies.len()].clone();
            *sent += 1;
            c.next_opaque = c.next_opaque.wrapping_add(1);
            encode_into(&register_request(ident, body, c.next_opaque, q.header), &mut c.out);
            c.inflight.insert(c.next_opaque, now);
            *next_due = if interval.is_zero() { now } else { *next_due + interval };
        }
    }
}

fn flush(c: &mut Conn, poll: &Poll, token: Token) -> io::Result<()> {
    while c.out_pos < c.out.len() {
        match c.stream.write(&c.out[c.out_pos..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "server closed the connection")),
            Ok(n) => c.out_pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if c.out_pos == c.out.len() {
        c.out.clear();
        c.out_pos = 0;
    }
    let want = c.out_pos < c.out.len();
    if want != c.writable {
        let interest = if want { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        poll.registry().reregister(&mut c.stream, token, interest)?;
        c.writable = want;
    }
    Ok(())
}

fn read_responses(c: &mut Conn, chunk: &mut [u8], end: Instant, stats: &mut Stats) -> io::Result<()> {
    loop {
        match c.stream.read(chunk) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection")),
            Ok(n) => c.inb.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let now = Instant::now();
    let mut at = 0;
    while let Some(f) = peek_frame(&c.inb[at..]).map_err(io::Error::other)? {
        at += f.len;
        let Some(t0) = c.inflight.remove(&f.opaque) else {
            continue;
        };
        if now > end {
            continue;
        }
        let ns = now.saturating_duration_since(t0).as_nanos().clamp(1_000, 120_000_000_000) as u64;
        match c.role {
            Role::Query { .. } => {
                let _ = stats.read.record(ns);
                match f.code {
                    0 => stats.ok += 1,
                    17 => stats.not_found += 1,
                    _ => stats.errors += 1,
                }
            }
            Role::Broker { .. } => {
                let _ = stats.reg.record(ns);
                if f.code == 0 {
                    stats.regs_ok += 1
                } else {
                    stats.regs_err += 1
                }
            }
        }
    }
    c.inb.drain(..at);
    Ok(())
}
