use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::config::{KeyOwner, KEYS};

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn ours(start_only: &[&str], control: &[&str]) -> Refused {
    let owned = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
    Refused::Ours { start_only: owned(start_only), control: owned(control) }
}

#[test]
fn only_runtime_keys_may_be_updated() {
    let c = Config {
        config_black_list: "configBlackList;configStorePath;kvConfigPath;productEnvName".into(),
        ..Config::default()
    };
    let ask = |keys: &[&str]| c.refused_updates(keys.iter().copied());
    // Java's own black list, and what an operator adds to it.
    assert_eq!(
        ask(&["kvConfigPath", "configStorePath", "configBlackList"]),
        ["configBlackList", "configStorePath", "kvConfigPath"]
    );
    assert_eq!(ask(&["productEnvName"]), ["productEnvName"]);
    // Files, listeners, limits, TLS, ACL and the allow-list: refused, whatever configBlackList says.
    for key in [
        "rocketmqHome",
        "routeSnapshotPath",
        "auditLogPath",
        "logDir",
        "logFormat",
        "aclFile",
        "tls.server.certPath",
        "listenPort",
        "bindAddress",
        "httpAddress",
        "adminAllowList",
        "aclEnable",
        "tls.server.mode",
        "maxInflatedBody",
        "maxTopicsPerRegistration",
        "maxConnections",
        "maxFrameLength",
        "serverChannelMaxIdleTimeSeconds",
        "scanNotActiveBrokerInterval",
        "enableControllerInNamesrv",
        "reactorThreads",
    ] {
        assert_eq!(ask(&[key]), [key], "{key} must not be runtime-updatable");
    }
    // Behaviour switches, and keys nobody knows (Java ignores them): not refused.
    assert!(ask(&["orderMessageEnable", "enableTopicList", "supportActingMaster", "noSuchKey"]).is_empty());
    // Every key has a policy, and every runtime key is one of Java's.
    for (name, owner, update) in KEYS {
        assert!(*update == Update::Start || *owner != KeyOwner::Ours, "{name}: our keys are start-only");
    }
}

/// Java refuses its black list (the fixed names and the `configBlackList` setting split as `String.split` splits)
/// with this exact remark, whatever else the update holds.
#[test]
fn javas_black_list_gets_javas_exact_remark() {
    let c = Config::default();
    for key in ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome"] {
        let r = c.screen_update(&pairs(&[("orderMessageEnable", "true"), (key, "/x"), ("listenPort", "1")]));
        assert_eq!(r, Err(Refused::JavaBlackList), "{key}");
        assert_eq!(r.unwrap_err().remark(), "Can not update config in black list.");
    }
    // With a control character elsewhere too: still Java's answer.
    let r = c.screen_update(&pairs(&[("productEnvName", "a\nb"), ("kvConfigPath", "/x")]));
    assert_eq!(r, Err(Refused::JavaBlackList));
    // The setting adds to it, entries as Java splits them (not trimmed).
    let with = |list: &str| Config { config_black_list: list.into(), ..Config::default() };
    let c = with("configBlackList;productEnvName");
    assert_eq!(c.screen_update(&pairs(&[("productEnvName", "x")])), Err(Refused::JavaBlackList));
    let c = with("configBlackList; productEnvName");
    assert_eq!(c.screen_update(&pairs(&[("productEnvName", "x")])), Err(ours(&["productEnvName"], &[])));
    // `"".split(";")` is `[""]`; inner empty entries stay, trailing ones go.
    assert_eq!(with("").screen_update(&pairs(&[("", "x")])), Err(Refused::JavaBlackList));
    assert_eq!(with("a;;b;;").screen_update(&pairs(&[("", "x")])), Err(Refused::JavaBlackList));
    assert_eq!(with("a;b;;").screen_update(&pairs(&[("", "x")])), Ok(()));
}

#[test]
fn start_only_keys_get_javas_sentence_and_the_keys() {
    let c = Config::default();
    let r = c.screen_update(&pairs(&[("maxConnections", "1"), ("listenPort", "2"), ("maxConnections", "3")]));
    assert_eq!(r, Err(ours(&["listenPort", "maxConnections"], &[])));
    assert_eq!(
        r.unwrap_err().remark(),
        "Can not update config in black list. Not changeable at runtime: listenPort, maxConnections"
    );
    assert_eq!(c.screen_update(&pairs(&[("orderMessageEnable", "true"), ("noSuchKey", "1")])), Ok(()));
}

/// The attack of issue #45: a runtime value whose escaped line breaks would be lines of their own in the rewritten
/// file.
#[test]
fn a_value_with_line_breaks_is_refused() {
    let body = "productEnvName=center\\naclEnable=false\\nadminAllowList=\\nkvConfigPath=/elsewhere/kv.json";
    let p = props::parse(body).unwrap();
    assert_eq!(p.len(), 1, "{p:?}");
    let r = Config::default().screen_update(&p);
    assert_eq!(r, Err(ours(&[], &["productEnvName"])));
    assert_eq!(
        r.unwrap_err().remark(),
        "A line break or other control character in the key or value of: productEnvName"
    );
}

#[test]
fn every_control_character_is_refused_in_keys_and_values() {
    let c = Config::default();
    for ch in
        ['\0', '\t', '\n', '\r', '\x0B', '\x0C', '\x1B', '\x1F', '\x7F', '\u{85}', '\u{9B}', '\u{2028}', '\u{2029}']
    {
        let value = format!("a{ch}b");
        let r = c.screen_update(&pairs(&[("productEnvName", &value), ("orderMessageEnable", "true")]));
        assert_eq!(r, Err(ours(&[], &["productEnvName"])), "{ch:?} in a value");
        let key = format!("x{ch}");
        let r = c.screen_update(&pairs(&[(&key, "v")]));
        assert_eq!(r, Err(Refused::Ours { start_only: vec![], control: vec![key.clone()] }), "{ch:?} in a key");
        let escaped: String = ch.escape_debug().collect();
        assert_eq!(
            r.unwrap_err().remark(),
            format!("A line break or other control character in the key or value of: x{escaped}")
        );
    }
    // Both reasons: both named.
    let r = c.screen_update(&pairs(&[("listenPort", "1"), ("productEnvName", "a\rb")]));
    assert_eq!(
        r.unwrap_err().remark(),
        "Can not update config in black list. Not changeable at runtime: listenPort. \
         A line break or other control character in the key or value of: productEnvName"
    );
    // Tab, non-ASCII, `#`, `=`, backslashes and blanks are fine.
    let fine = pairs(&[("productEnvName", " a=b:c#d!e\\f \u{e9}\u{4e2d}\u{1F600}\u{a0} ")]);
    assert_eq!(c.screen_update(&fine), Ok(()));
}

#[test]
fn peer_chosen_keys_are_shortened_and_the_remark_is_bounded() {
    let c = Config::default();
    let long = "k".repeat(200);
    let r = c.screen_update(&pairs(&[(&long, "\n")])).unwrap_err().remark();
    assert_eq!(
        r,
        format!("A line break or other control character in the key or value of: {}…(200 chars)", "k".repeat(64))
    );
    // A key of control characters shows escaped, and shortened too.
    let r = c.screen_update(&pairs(&[(&"\0".repeat(100), "v")])).unwrap_err().remark();
    assert!(r.ends_with(&format!("{}…(100 chars)", "\\0".repeat(32))), "{r}");
    // Many long keys, each refused for both reasons at once (an operator's long configBlackList).
    let keys: Vec<String> = (0..1000).map(|i| format!("{i:04}{}\u{4e2d}", "k".repeat(300))).collect();
    let c = Config { config_black_list: format!("x; {}", keys.join("; ")), ..Config::default() };
    let body: Vec<(String, String)> = keys.iter().map(|k| (k.clone(), "\n".to_string())).collect();
    let r = c.screen_update(&body).unwrap_err().remark();
    assert!(r.chars().count() < 1024, "{} chars: {r}", r.chars().count());
    assert!(r.contains("and 995 more") && r.contains("0004kkk") && !r.contains("0005kkk"), "{r}");
}

/// A runtime key of Java's: what a body may name.
fn runtime_keys() -> Vec<&'static str> {
    KEYS.iter().filter(|(_, _, u)| *u == Update::Runtime).map(|(k, _, _)| *k).collect()
}

/// Pieces of body text that are hard for an escaper: escapes (`\u`, `\\`, escaped blanks and line breaks, surrogate
/// pairs), separators and comment marks inside a value, blanks, non-ASCII (raw and escaped), raw control characters
/// that are no line end.
const TOKENS: &[&str] = &[
    "a",
    "0",
    "7",
    "true",
    "=",
    ":",
    "#",
    "!",
    " ",
    "  ",
    "\\\\",
    "\\u0041",
    "\\u00e9",
    "\\uD83D\\uDE00",
    "\u{e9}",
    "\u{4e2d}",
    "\u{1F600}",
    "\\n",
    "\\r",
    "\\t",
    "\\ ",
    "\\=",
    "\u{85}",
    "\\u2028",
    "/elsewhere",
    "\\\n   ",
    "\u{a0}",
    "\\#",
];

/// A body line: a key (a runtime key, an extra key of the file escaped as `Properties.store` escapes a key, or a key
/// nobody knows), a separator, a value of tokens and a line end.
fn body_line(extra: Vec<String>) -> impl Strategy<Value = String> {
    let runtime = runtime_keys();
    let key = prop_oneof![
        proptest::sample::select(runtime).prop_map(String::from),
        proptest::sample::select(if extra.is_empty() { vec!["x.none".to_string()] } else { extra }).prop_map(|k| {
            let line = props::store(&[(k, String::new())]);
            line.trim_end_matches("=\n").to_string()
        }),
        Just("noSuchKey".to_string()),
    ];
    let sep = proptest::sample::select(vec!["=", ":", " = ", " ", "\t:"]);
    let value = proptest::collection::vec(proptest::sample::select(TOKENS), 0..6).prop_map(|t| t.concat());
    let eol = proptest::sample::select(vec!["\n", "\r\n", "\r"]);
    (key, sep, value, eol).prop_map(|(k, s, v, e)| format!("{k}{s}{v}{e}"))
}

/// A `-c` file's extra keys (blanks, separators and non-ASCII in names) with any values, then a body over them.
fn file_and_body() -> impl Strategy<Value = (Vec<(String, String)>, String, String)> {
    let extra = proptest::collection::btree_map("x\\.[a-z =:#!\u{e9}\u{4e2d}]{1,6}", any::<String>(), 0..4);
    (extra, any::<String>()).prop_flat_map(|(extra, password)| {
        let extra: Vec<(String, String)> = extra.into_iter().collect();
        let keys = extra.iter().map(|(k, _)| k.clone()).collect();
        let body = proptest::collection::vec(prop_oneof![8 => body_line(keys), 1 => Just("# c\n\n".to_string())], 0..8);
        (Just(extra), Just(password), body.prop_map(|lines| lines.concat()))
    })
}

fn file_keys(text: &str) -> BTreeSet<String> {
    props::parse(text).unwrap().into_iter().map(|(k, _)| k).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// An accepted body, applied and written, reads back as exactly the configuration it made; it adds and removes
    /// no key of the file; keys it does not name keep their values. A refused one is refused for its control
    /// characters or a number out of range only (the generator names no start-only key).
    #[test]
    fn an_accepted_update_reads_back_from_the_file((extra, password, body) in file_and_body()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.properties");
        let mut file = pairs(&[("adminAllowList", "127.0.0.1"), ("maxConnections", "7"), ("listenPort", "9999")]);
        file.push(("tls.server.keyPassword".into(), password));
        file.extend(extra);
        std::fs::write(&path, props::store(&file)).unwrap();
        let (before, _) = Config::from_file(&path).unwrap();
        let Ok(update) = props::parse(&body) else {
            // Only what Java could not hold either: a lone surrogate half (the generator writes none).
            return Err(TestCaseError::fail(format!("unparsable body {body:?}")));
        };
        let with_control: BTreeSet<String> = update
            .iter()
            .filter(|(k, v)| k.chars().chain(v.chars()).any(props::is_control))
            .map(|(k, _)| k.clone())
            .collect();
        match before.screen_update(&update) {
            // A runtime number outside its range (`bounds.rs`): refused after every other check passed.
            Err(Refused::OutOfRange(out)) => {
                prop_assert!(with_control.is_empty());
                let outside = update.iter().filter(|(k, v)| super::bounds::out_of_range(k, v).is_some()).count();
                prop_assert!(!out.is_empty() && outside > 0, "{:?}", out);
                return Ok(());
            }
            Err(refused) => {
                prop_assert_eq!(refused, Refused::Ours { start_only: vec![], control: with_control.into_iter().collect() });
                return Ok(());
            }
            Ok(()) => prop_assert!(with_control.is_empty()),
        }
        let named: BTreeSet<&str> = update.iter().map(|(k, _)| k.as_str()).collect();
        let after = before.with_update(update.clone()).config;
        std::fs::write(&path, after.file_text()).unwrap();
        let (read, _) = Config::from_file(&path).unwrap();
        prop_assert_eq!(&read, &after, "file:\n{}", after.file_text());
        prop_assert_eq!(read.all_entries(), after.all_entries());
        prop_assert_eq!(&read.extra, &after.extra);
        prop_assert_eq!(file_keys(&after.file_text()), file_keys(&before.file_text()));
        for (key, _, _) in KEYS.iter().filter(|(k, _, _)| !named.contains(k)) {
            prop_assert_eq!(after.get(key), before.get(key), "{}", key);
        }
        for (key, value) in &before.extra {
            let last = update.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.trim());
            prop_assert_eq!(after.extra.get(key).map(String::as_str), Some(last.unwrap_or(value)));
        }
        if let Some((_, v)) = update.iter().rev().find(|(k, _)| k == "productEnvName") {
            prop_assert_eq!(&after.product_env_name, v.trim());
        }
    }
}

/// A runtime number outside its range (`bounds.rs`) refuses the whole update with a remark that names it; inside,
/// and an unparsable value (ignored, as Java does), pass.
#[test]
fn runtime_numbers_outside_their_range_are_refused() {
    let c = Config::default();
    let r = c.screen_update(&pairs(&[("needWaitForService", "true"), ("waitSecondsForService", "315360000")]));
    assert_eq!(r, Err(Refused::OutOfRange(vec!["waitSecondsForService=315360000 (allowed at most 3600)".into()])));
    let remark = r.unwrap_err().remark();
    assert!(remark.contains("waitSecondsForService=315360000") && remark.contains("at most 3600"), "{remark}");
    assert!(c.screen_update(&pairs(&[("shutdownWaitTimeSeconds", "86400")])).is_err());
    assert!(c.screen_update(&pairs(&[("defaultThreadPoolNums", "0")])).is_err());
    // Either of two values for one key out of range refuses.
    assert!(c.screen_update(&pairs(&[("waitSecondsForService", "99999"), ("waitSecondsForService", "1")])).is_err());
    assert_eq!(c.screen_update(&pairs(&[("needWaitForService", "true"), ("waitSecondsForService", "3600")])), Ok(()));
    assert_eq!(c.screen_update(&pairs(&[("waitSecondsForService", "soon")])), Ok(()));
}
