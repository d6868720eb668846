//! The test's own network: one Linux bridge in the root namespace and, per host (a controller node, a broker, the
//! name server), a network namespace joined to the bridge by a veth pair, with its own address. The test process
//! stays in the root namespace and reaches every host through the bridge's address.
//!
//! Everything is named with `PREFIX`, so leftovers of an earlier run that was killed (no `Drop`) are recognised and
//! deleted before a new run builds its network. That also means one run at a time per machine: the peer suites are
//! serialised anyway (`support::interop::serial`).
//!
//! Faults are made on the host side of a host's veth: `ip link set … down` cuts the host from everyone (the other
//! hosts and the test process alike) without touching its processes; `up` heals it. Partial cuts are nftables
//! rules inside a host's namespace (`cut_from`): packets to and from the named addresses are dropped, everyone
//! else still reaches the host.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// Every namespace and link of ours starts with this.
pub const PREFIX: &str = "jepsen-";
/// The bridge (in the root namespace).
const BRIDGE: &str = "jepsen-br";
/// 10.231.0.0/24: the bridge is .1, hosts get the addresses the caller picks.
const SUBNET: [u8; 3] = [10, 231, 0];

/// Why building the network failed: the command and what it said. Callers only report it.
#[derive(Debug)]
pub struct NetError(pub String);

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs `ip ARGS`, an error with its stderr unless it exits 0.
fn ip(args: &[&str]) -> Result<(), NetError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| NetError(format!("cannot run ip {args:?}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError(format!("ip {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
    }
}

/// The standard output of `ip ARGS` (empty if it fails).
fn ip_out(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Deletes every namespace and link named with `PREFIX` (an earlier run's, or ours on drop). Deleting a namespace
/// deletes the veth end inside it, and with it the pair. Processes of a killed run are gone already: each was
/// watched by a watchdog that SIGKILLs it when its test process dies.
pub fn remove_leftovers() {
    for line in ip_out(&["netns", "list"]).lines() {
        // "jepsen-c0 (id: 3)"
        if let Some(name) = line.split_whitespace().next().filter(|n| n.starts_with(PREFIX)) {
            let _ = ip(&["netns", "del", name]);
        }
    }
    for line in ip_out(&["-o", "link", "show"]).lines() {
        // "12: jepsen-c0@if11: <BROADCAST,…"
        let Some(name) = line.split(": ").nth(1).map(|n| n.split('@').next().unwrap_or(n)) else { continue };
        if name.starts_with(PREFIX) {
            let _ = ip(&["link", "del", name]);
        }
    }
}

/// One host of the network.
#[derive(Clone, Debug)]
pub struct Host {
    /// The namespace's name, and the host-side veth's (≤ 15 bytes: an interface name).
    pub ns: String,
    pub addr: Ipv4Addr,
}

impl Host {
    /// `cmd` to be run inside this host's namespace (`ip netns exec` execs it: the child's pid is the program's, so
    /// signals sent to it reach the program itself).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns, program]);
        cmd
    }
}

/// The bridge and the hosts, deleted on drop.
pub struct Net {
    pub hosts: Vec<Host>,
    /// Held while the network exists: a second run on the machine would delete this one's namespaces as leftovers
    /// and start its processes in them.
    _lock: RunLock,
}

/// The process id of the run that owns the network, in a file; a file naming a process that is gone (a killed
/// run) is taken over.
const LOCK: &str = "/tmp/jepsen-net.pid";

struct RunLock;

impl RunLock {
    fn take() -> Result<RunLock, NetError> {
        let me = std::process::id().to_string();
        if let Ok(owner) = std::fs::read_to_string(LOCK) {
            let owner = owner.trim();
            if owner != me && std::path::Path::new(&format!("/proc/{owner}")).exists() {
                return Err(NetError(format!("another fault test (pid {owner}) is running on this machine ({LOCK})")));
            }
        }
        std::fs::write(LOCK, &me).map_err(|e| NetError(format!("{LOCK}: {e}")))?;
        Ok(RunLock)
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(LOCK);
    }
}

impl Net {
    /// Deletes leftovers, then makes the bridge and one namespace per `(short name, last address byte)`.
    pub fn create(hosts: &[(&str, u8)]) -> Result<Net, NetError> {
        let lock = RunLock::take()?;
        remove_leftovers();
        // From here on, a failure leaves a half-built network: `net` deletes it on the way out.
        let mut net = Net { hosts: Vec::new(), _lock: lock };
        ip(&["link", "add", BRIDGE, "type", "bridge"])?;
        let bridge_addr = format!("{}/24", Ipv4Addr::new(SUBNET[0], SUBNET[1], SUBNET[2], 1));
        ip(&["addr", "add", &bridge_addr, "dev", BRIDGE])?;
        ip(&["link", "set", BRIDGE, "up"])?;
        for (name, last) in hosts {
            let ns = format!("{PREFIX}{name}");
            assert!(ns.len() <= 15, "{ns} is too long for an interface name");
            let addr = Ipv4Addr::new(SUBNET[0], SUBNET[1], SUBNET[2], *last);
            ip(&["netns", "add", &ns])?;
            net.hosts.push(Host { ns: ns.clone(), addr });
            ip(&["link", "add", &ns, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["link", "set", &ns, "master", BRIDGE])?;
            ip(&["link", "set", &ns, "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    pub fn host(&self, name: &str) -> &Host {
        let ns = format!("{PREFIX}{name}");
        self.hosts.iter().find(|h| h.ns == ns).unwrap_or_else(|| panic!("no host {name}"))
    }

    /// Cuts `host` from the bridge: no packet in or out, for every peer (full isolation).
    pub fn cut(&self, host: &Host) -> Result<(), NetError> {
        ip(&["link", "set", &host.ns, "down"])
    }

    /// Joins `host` to the bridge again.
    pub fn heal(&self, host: &Host) -> Result<(), NetError> {
        // A new bridge has STP off, so the port forwards as soon as it is up.
        ip(&["link", "set", &host.ns, "up"])
    }
}

/// The nftables table of a partial cut, inside a host's namespace (deleted with the namespace too).
const NFT_TABLE: &str = "jepsen";

impl Net {
    /// Drops every packet between `host` and `peers` (both ways, established connections included: they hang,
    /// as across a real partition, rather than being reset).
    pub fn cut_from(&self, host: &Host, peers: &[Ipv4Addr]) -> Result<(), NetError> {
        let set: Vec<String> = peers.iter().map(Ipv4Addr::to_string).collect();
        let set = set.join(", ");
        let rules = format!(
            "table inet {NFT_TABLE} {{\n\
             chain in {{ type filter hook input priority 0; policy accept; ip saddr {{ {set} }} drop; }}\n\
             chain out {{ type filter hook output priority 0; policy accept; ip daddr {{ {set} }} drop; }}\n}}\n"
        );
        nft(host, &["-f", "-"], Some(&rules))
    }

    /// Removes the partial cut of `host`.
    pub fn heal_cut(&self, host: &Host) -> Result<(), NetError> {
        nft(host, &["delete", "table", "inet", NFT_TABLE], None)
    }
}

/// Runs `nft ARGS` in `host`'s namespace, with `input` on its standard input.
fn nft(host: &Host, args: &[&str], input: Option<&str>) -> Result<(), NetError> {
    use std::io::Write;
    let mut child = host
        .command("nft")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NetError(format!("cannot run nft (apt-get install nftables): {e}")))?;
    if let Some(text) = input {
        child.stdin.take().expect("piped").write_all(text.as_bytes()).map_err(|e| NetError(format!("nft: {e}")))?;
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().map_err(|e| NetError(format!("nft: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NetError(format!("nft {args:?} in {} failed: {}", host.ns, String::from_utf8_lossy(&out.stderr).trim())))
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        remove_leftovers();
    }
}
