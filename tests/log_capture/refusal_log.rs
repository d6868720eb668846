//! What a flood of refused requests costs the log and the audit trail (issue #45): the claimed account is cut in
//! the remark and the lines, and a peer refused over and over gets one full line (and one audit line) and then one
//! summary per interval, while `namesrv_limit_hits_total` counts every refusal. In-process, with every INFO line
//! of every target (the audit trail's included) captured by its binary's one subscriber (`crate::captured`).

use crate::support;

use namesrv::acl::signature::ACCESS_KEY;
use namesrv::protocol::{RemotingCommand, RequestCode as C, ResponseCode};
use namesrv::test_support::limit::Limit;
use support::inproc::InProc;
use support::registration::new_cmd;

const ACCOUNTS: &str = "accounts:\n  - accessKey: admin001\n    secretKey: admin-secret\n    admin: true\n";
const FLOOD: usize = 10_000;

fn refused_put(key: &str) -> RemotingCommand {
    new_cmd(C::PUT_KV_CONFIG)
        .with_ext("namespace", "NS")
        .with_ext("key", "k")
        .with_ext("value", "v")
        .with_ext(ACCESS_KEY, key)
}

#[test]
fn ten_thousand_refusals_with_a_long_access_key_write_a_few_lines_and_a_summary() {
    // Every refusal line from the start on is counted: no other test runs meanwhile.
    let _alone = crate::alone();
    let logs = &crate::captured().info;
    let accounts = tempfile::tempdir().unwrap();
    let file = accounts.path().join("plain_acl.yml");
    std::fs::write(&file, ACCOUNTS).unwrap();
    let fx = InProc::start(|c| {
        c.acl_enable = true;
        c.acl_file = file.to_string_lossy().into_owned();
    });
    let mut c = fx.client();
    let start = logs.lock().unwrap().len();

    // A 1 KiB AccessKey of no account: refused, the remark naming only its first 64 characters.
    let key = format!("{}{}", "a".repeat(64), "z".repeat(960));
    let remark = format!("[ACL] no account \"{}…(+960 chars)\"", "a".repeat(64));
    for i in 0..FLOOD {
        let r = c.request(refused_put(&key));
        assert_eq!((r.code, r.remark.as_deref()), (ResponseCode::NO_PERMISSION, Some(remark.as_str())), "#{i}");
    }
    assert_eq!(fx.metrics().limit_hits(Limit::Acl), FLOOD as u64, "every refusal is counted");
    let flood = String::from_utf8_lossy(&logs.lock().unwrap()[start..]).into_owned();
    eprintln!("{} bytes logged for {FLOOD} refusals", flood.len());
    assert!(flood.len() < 64 * 1024, "{} bytes logged for {FLOOD} refusals", flood.len());
    assert!(!flood.contains("zzz"), "the access key is cut in every line:\n{flood}");
    let audit: Vec<&str> = flood.lines().filter(|l| l.contains("audit:")).collect();
    assert_eq!(audit.len(), 1, "one audit line in full:\n{flood}");
    assert!(audit[0].contains(&format!("claimedAccount=\\\"{}…(+960 chars)\\\"", "a".repeat(64))), "{}", audit[0]);
    assert_eq!(flood.lines().filter(|l| l.contains("request refused")).count(), 1, "one log line in full:\n{flood}");

    // The interval ends: the next refusal comes after the summary of the 9,999 before it (the reactor's tick may
    // write the summary first; either way it is written once, in the log and in the audit trail).
    fx.clock.advance_ms(10_000);
    assert_eq!(c.request(refused_put(&key)).code, ResponseCode::NO_PERMISSION);
    let text = String::from_utf8_lossy(&logs.lock().unwrap()[start..]).into_owned();
    let summary = "… and 9999 more refusals of acl from 127.0.0.1 in the last 10s";
    let summaries: Vec<&str> = text.lines().filter(|l| l.contains(summary)).collect();
    assert_eq!(summaries.len(), 2, "one summary in the log, one in the audit trail:\n{text}");
    assert_eq!(summaries.iter().filter(|l| l.contains("audit:")).count(), 1, "{summaries:?}");
    assert_eq!(text.lines().filter(|l| l.contains("request refused")).count(), 2, "the new interval's first:\n{text}");
    assert!(text.len() < 64 * 1024, "{} bytes logged for {} refusals", text.len(), FLOOD + 1);
    assert_eq!(fx.metrics().limit_hits(Limit::Acl), FLOOD as u64 + 1);
}
