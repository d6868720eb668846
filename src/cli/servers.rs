//! Which name servers a command talks to when `-n` or `NAMESRV_ADDR` names several (`a:9876;b:9876`, the usual
//! production setting). Name servers share nothing, so the two kinds of command need different things:
//!
//! - a read goes to the first server that answers, in the order given: one that cannot be reached or does not
//!   answer in time is skipped (said on stderr), and which server answered is said when it was not the first. An
//!   answer, even an error, ends the search: it is what that name server knows.
//! - a write goes to every server, whatever the others answered, and each server's outcome is printed, so that a
//!   write one server missed is never hidden behind another's success; the exit code is not 0 if any failed.
//!
//! mqadmin differs in both (its client, `NettyRemotingClient`, starts at a random server and does not try another
//! within one request; `MQClientAPIImpl` stops a write at the first server it cannot reach, and prints one line
//! per server only for the write permission); see docs/operations.md.

use serde_json::Value;

use crate::protocol::RemotingCommand;

use super::client::Client;
use super::{call, CliError, Ctx, Output};

/// A line on stderr while a command runs; stdout stays the command's result.
pub(super) fn note(msg: &str) {
    eprintln!("mqnamesrv admin: {msg}");
}

impl CliError {
    /// The server did not answer (cannot connect, timeout, closed connection, undecodable frame), so another may.
    fn is_unanswered(&self) -> bool {
        matches!(self, CliError::Unreachable { .. } | CliError::Io { .. })
    }
}

impl Ctx {
    /// Runs a read on the first server that answers, in `-n` order.
    pub(super) fn read<T>(&self, mut read: impl FnMut(&mut Client) -> Result<T, CliError>) -> Result<T, CliError> {
        let mut last = None;
        for (i, addr) in self.addrs.iter().enumerate() {
            if let Some(e) = last.take() {
                note(&format!("{e}; trying {addr}"));
            }
            match self.connect(addr).and_then(|mut client| read(&mut client)) {
                Ok(v) => {
                    if i > 0 {
                        note(&format!("answered by {addr}"));
                    }
                    return Ok(v);
                }
                Err(e) if e.is_unanswered() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        // `Ctx::new` always names a server; the error is for the impossible empty list.
        Err(last.unwrap_or_else(|| CliError::Usage("no name server address".into())))
    }

    /// Sends the same write to every server (`build` makes the request on each connection); `accept` reads a
    /// SUCCESS answer. A server that fails does not stop the others.
    pub(super) fn write_all<T>(
        &self,
        build: impl Fn(&mut Client) -> RemotingCommand,
        accept: impl Fn(&Client, RemotingCommand) -> Result<T, CliError>,
    ) -> Writes<T> {
        let outcomes = self
            .addrs
            .iter()
            .map(|addr| {
                let outcome = self.connect(addr).and_then(|mut client| {
                    let cmd = build(&mut client);
                    let resp = call(&mut client, cmd)?;
                    accept(&client, resp)
                });
                (addr.clone(), outcome)
            })
            .collect();
        Writes { outcomes }
    }
}

/// One write's outcome on each server, in `-n` order.
pub(super) struct Writes<T> {
    pub outcomes: Vec<(String, Result<T, CliError>)>,
}

impl<T> Writes<T> {
    /// With a single server that failed, its error, printed like any command's error (one line, its exit code);
    /// a per-server report says nothing more there.
    pub(super) fn sole_error(mut self) -> Result<Self, CliError> {
        if self.outcomes.len() == 1 && self.outcomes[0].1.is_err() {
            if let Some((_, Err(e))) = self.outcomes.pop() {
                return Err(e);
            }
        }
        Ok(self)
    }

    /// The servers that applied the write, with what they answered.
    pub(super) fn applied(&self) -> impl Iterator<Item = (&str, &T)> {
        self.outcomes.iter().filter_map(|(a, o)| o.as_ref().ok().map(|v| (a.as_str(), v)))
    }

    /// `[{"namesrv": …, "error": …}]` for the servers that did not apply it.
    pub(super) fn failed_json(&self) -> Value {
        let failed: Vec<Value> = self
            .outcomes
            .iter()
            .filter_map(|(a, o)| o.as_ref().err().map(|e| serde_json::json!({ "namesrv": a, "error": e.reason() })))
            .collect();
        failed.into()
    }

    /// `a:9876  ok` or `b:9876  failed: cannot connect: …`, one line per server, the addresses padded alike.
    pub(super) fn lines(&self) -> String {
        let width = self.outcomes.iter().map(|(a, _)| a.len()).max().unwrap_or(0);
        self.outcomes
            .iter()
            .map(|(addr, o)| match o {
                Ok(_) => format!("{addr:<width$}  ok\n"),
                Err(e) => format!("{addr:<width$}  failed: {}\n", e.reason()),
            })
            .collect()
    }

    /// `text` (or `json`) with the exit code: 0 if every server applied the write, else the worst failure's (2 if
    /// one could not be reached, else 1), and a line on stderr naming the servers that missed it.
    pub(super) fn finish(&self, ctx: &Ctx, text: String, json: Value) -> Output {
        let failed: Vec<(&str, &CliError)> =
            self.outcomes.iter().filter_map(|(a, o)| o.as_ref().err().map(|e| (a.as_str(), e))).collect();
        let code = failed.iter().map(|(_, e)| e.exit_code()).max().unwrap_or(0);
        let names: Vec<&str> = failed.iter().map(|(a, _)| *a).collect();
        match failed.len() {
            0 => {}
            n if n == self.outcomes.len() => {
                note(&format!("the write failed on every name server ({})", names.join(", ")))
            }
            n => note(&format!(
                "the write failed on {n} of {} name servers ({}); the others applied it",
                self.outcomes.len(),
                names.join(", ")
            )),
        }
        let text = if ctx.json { super::json_text(&json) } else { text };
        Output { text, code }
    }

    /// The usual report: `headline`, then one line per server; in JSON, `json` plus `servers` (those that applied
    /// it) and `failed`.
    pub(super) fn report(&self, ctx: &Ctx, headline: &str, mut json: Value) -> Output {
        let applied: Vec<&str> = self.applied().map(|(a, _)| a).collect();
        json["servers"] = applied.into();
        json["failed"] = self.failed_json();
        self.finish(ctx, format!("{headline}\n{}", self.lines()), json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(addrs: &[&str]) -> Ctx {
        Ctx {
            addrs: addrs.iter().map(|a| a.to_string()).collect(),
            json: false,
            timeout: std::time::Duration::from_millis(300),
            credentials: None,
        }
    }

    fn down(addr: &str) -> CliError {
        CliError::Unreachable { addr: addr.into(), reason: "Connection refused".into() }
    }

    #[test]
    fn every_server_gets_a_line_and_a_failure_sets_the_exit_code() {
        let w = Writes {
            outcomes: vec![
                ("a:9876".to_string(), Ok(())),
                ("bb:9876".to_string(), Err(down("bb:9876"))),
                ("c:1".to_string(), Err(CliError::Server { addr: "c:1".into(), code: 16, remark: None })),
            ],
        };
        assert_eq!(
            w.lines(),
            "a:9876   ok\nbb:9876  failed: cannot connect: Connection refused\nc:1      failed: answered NO_PERMISSION (16)\n"
        );
        let out = w.report(&ctx(&["a:9876", "bb:9876", "c:1"]), "Put N k = v", serde_json::json!({}));
        assert_eq!(out.code, 2, "unreachable is the worst");
        assert!(out.text.starts_with("Put N k = v\na:9876   ok\n"), "{}", out.text);
        let as_json = Ctx { json: true, ..ctx(&["a:9876", "bb:9876", "c:1"]) };
        let v: Value = serde_json::from_str(&w.report(&as_json, "", serde_json::json!({ "k": 1 })).text).unwrap();
        assert_eq!(v["k"], 1);
        assert_eq!(v["servers"], serde_json::json!(["a:9876"]));
        assert_eq!(
            v["failed"][0],
            serde_json::json!({ "namesrv": "bb:9876", "error": "cannot connect: Connection refused" })
        );
        let all_ok = Writes { outcomes: vec![("a:1".to_string(), Ok(()))] };
        assert_eq!(all_ok.report(&ctx(&["a:1"]), "H", serde_json::json!({})).code, 0);
    }

    #[test]
    fn one_server_that_failed_is_a_plain_error() {
        let w: Writes<()> = Writes { outcomes: vec![("a:1".to_string(), Err(down("a:1")))] };
        assert!(matches!(w.sole_error(), Err(CliError::Unreachable { .. })));
        let two: Writes<()> =
            Writes { outcomes: vec![("a:1".to_string(), Err(down("a:1"))), ("b:1".to_string(), Ok(()))] };
        assert_eq!(two.sole_error().map(|w| w.applied().count()).ok(), Some(1));
    }

    #[test]
    fn a_read_moves_past_servers_that_do_not_answer_but_not_past_an_answer() {
        // Two free ports nobody listens on, then one that accepts: the read reaches the third.
        let dead = [free_port(), free_port()];
        let live = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let live_addr = live.local_addr().unwrap().to_string();
        let c = ctx(&[&dead[0], &dead[1], &live_addr]);
        let mut tried = Vec::new();
        let got = c.read(|client| {
            tried.push(client.addr().to_string());
            Ok(client.addr().to_string())
        });
        assert_eq!(got.ok().as_deref(), Some(live_addr.as_str()));
        assert_eq!(tried.len(), 1, "the dead ones never connected");
        assert_eq!(tried[0], live_addr);
        // An error answered by a server ends the search.
        let c = ctx(&[&live_addr, &live_addr]);
        let mut calls = 0;
        let got: Result<(), _> = c.read(|client| {
            calls += 1;
            Err(CliError::Server { addr: client.addr().into(), code: 1, remark: None })
        });
        assert!(matches!(got, Err(CliError::Server { .. })));
        assert_eq!(calls, 1);
        // Every server down: the last one's error.
        let got: Result<(), _> = ctx(&[&dead[0], &dead[1]]).read(|_| Ok(()));
        assert!(matches!(got, Err(CliError::Unreachable { addr, .. }) if addr == dead[1]));
    }

    /// A port that was free a moment ago (bound, then released).
    fn free_port() -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    }
}
