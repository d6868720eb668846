//! mqadmin habits in `mqnamesrv admin`: `-n` before `admin`, after it and after the command, `NAMESRV_ADDR` as the
//! default, mqadmin's command and flag names for every name-server command, `--version` and a `--help` that lists
//! every command. The built binary against our server in-process (no Java peer).

use crate::support;

use std::process::Command;

use clap::Args as _;
use namesrv::protocol::ResponseCode;
use serde_json::Value;
use support::client::Client;
use support::inproc::InProc;
use support::registration::Broker;

const MASTER: Broker = Broker { cluster: "HabitCluster", name: "broker-h", addr: "127.0.0.1:10911", id: 0 };

/// One run of the binary: exit code, stdout, stderr.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    #[track_caller]
    fn ok(self) -> String {
        assert_eq!(self.code, 0, "stdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self.stdout
    }
}

/// `mqnamesrv ARGS` with `NAMESRV_ADDR` set to `env` (or unset), and no `ROCKETMQ_HOME` (no tools.yml signs).
fn run(args: &[&str], env: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mqnamesrv"));
    cmd.args(args).env_remove("RUST_LOG").env_remove("ROCKETMQ_HOME").env_remove("NAMESRV_ADDR");
    if let Some(v) = env {
        cmd.env("NAMESRV_ADDR", v);
    }
    let out = cmd.output().expect("run mqnamesrv");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `mqnamesrv admin ARGS` with `-n addr` after the command.
fn admin(addr: &str, args: &[&str]) -> Run {
    let mut all = vec!["admin"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-n", addr]);
    run(&all, None)
}

/// A server with MASTER registered for two topics (perm 6). Keep the client: closing it unregisters the broker.
fn with_broker() -> (InProc, Client) {
    let server = InProc::start(|_| {});
    let mut broker = Client::connect(server.addr());
    let r = broker.request(MASTER.register(&["HabitTopic", "OtherTopic"], 1, 513));
    assert_eq!(r.code, ResponseCode::SUCCESS, "{r:?}");
    (server, broker)
}

/// The perm of each queue data of `topic`, from `route --json`.
fn perms(addr: &str, topic: &str) -> Vec<i64> {
    let out = admin(addr, &["--json", "route", topic]).ok();
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    v["queueDatas"].as_array().expect("queueDatas").iter().map(|q| q["perm"].as_i64().expect("perm")).collect()
}

#[test]
fn every_read_command_takes_n_anywhere_and_namesrv_addr_by_default() {
    let (server, _broker) = with_broker();
    let a = server.addr().to_string();
    let commands: &[&[&str]] = &[
        &["cluster"],
        &["clusterList"],
        &["topics"],
        &["topicList"],
        &["route", "HabitTopic"],
        &["topicRoute", "-t", "HabitTopic"],
        &["config", "get"],
        &["getNamesrvConfig"],
        &["kv", "list", "NS"],
        &["getKvConfig", "-s", "NS", "-k", "k"],
    ];
    admin(&a, &["updateKvConfig", "-s", "NS", "-k", "k", "-v", "v"]).ok();
    for command in commands {
        let before_admin = [&["-n", a.as_str(), "admin"][..], command].concat();
        let after_admin = [&["admin", "-n", a.as_str()][..], command].concat();
        let after_command = [&["admin"][..], command, &["-n", a.as_str()]].concat();
        let expected = run(&after_command, None).ok();
        assert!(!expected.is_empty(), "{command:?} printed nothing");
        // A wrong NAMESRV_ADDR shows that -n, wherever it stands, is what is used.
        let wrong = Some("127.0.0.1:1");
        assert_eq!(run(&before_admin, wrong).ok(), expected, "-n before admin: {command:?}");
        assert_eq!(run(&after_admin, wrong).ok(), expected, "-n after admin: {command:?}");
        assert_eq!(run(&after_command, wrong).ok(), expected, "-n after the command: {command:?}");
        let from_env = [&["admin"][..], command].concat();
        assert_eq!(run(&from_env, Some(&a)).ok(), expected, "NAMESRV_ADDR: {command:?}");
    }
    // Without -n, NAMESRV_ADDR is used: a dead one fails naming it.
    let dead = run(&["admin", "clusterList"], Some("127.0.0.1:1"));
    assert_eq!(dead.code, 2, "{}", dead.stderr);
    assert!(dead.stderr.contains("127.0.0.1:1"), "{}", dead.stderr);
}

#[test]
fn wipe_and_add_write_perm_change_the_routes_and_report_counts() {
    let (server, _broker) = with_broker();
    let a = server.addr().to_string();
    assert_eq!(perms(&a, "HabitTopic"), [6]);

    let out = run(&["-n", &a, "admin", "wipeWritePerm", "-b", "broker-h"], None).ok();
    assert_eq!(out, format!("wipe write perm of broker[broker-h] in name server[{a}] OK, 2\n"));
    assert_eq!(perms(&a, "HabitTopic"), [4]);
    assert_eq!(perms(&a, "OtherTopic"), [4]);

    let out = admin(&a, &["--json", "addWritePerm", "--brokerName", "broker-h"]).ok();
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"brokerName": "broker-h", "servers": [{"namesrv": a, "addTopicCount": 2}], "failed": []})
    );
    assert_eq!(perms(&a, "HabitTopic"), [6]);

    // A broker the server does not know: nothing touched, and said so.
    let out = admin(&a, &["wipeWritePerm", "-b", "nobody"]).ok();
    assert!(out.ends_with("OK, 0\n"), "{out}");
    // -b is required.
    assert_ne!(admin(&a, &["wipeWritePerm"]).code, 0);
}

#[test]
fn delete_topic_in_the_name_server_with_and_without_a_cluster() {
    let (server, _broker) = with_broker();
    let a = server.addr().to_string();
    // Another cluster's name: the topic stays.
    admin(&a, &["deleteTopic", "-t", "HabitTopic", "-c", "NoSuchCluster"]).ok();
    assert_eq!(perms(&a, "HabitTopic"), [6]);

    let out = admin(&a, &["deleteTopic", "-t", "HabitTopic", "-c", "HabitCluster"]).ok();
    assert_eq!(out, format!("Delete topic HabitTopic (cluster HabitCluster)\n{a}  ok\n"));
    let gone = admin(&a, &["topicRoute", "-t", "HabitTopic"]);
    assert_eq!(gone.code, 1, "{}", gone.stderr);
    assert!(gone.stderr.contains("TOPIC_NOT_EXIST"), "{}", gone.stderr);

    admin(&a, &["deleteTopic", "-t", "OtherTopic"]).ok();
    let topics = admin(&a, &["--json", "topicList"]).ok();
    assert!(!topics.contains("OtherTopic") && !topics.contains("HabitTopic"), "{topics}");
}

#[test]
fn kv_and_config_under_mqadmin_names() {
    let server = InProc::start(|_| {});
    let a = server.addr().to_string();
    admin(&a, &["updateKvConfig", "-s", "NS", "-k", "key1", "-v", "value 1"]).ok();
    assert_eq!(admin(&a, &["getKvConfig", "-s", "NS", "-k", "key1"]).ok(), "value 1\n");
    assert_eq!(admin(&a, &["kv", "get", "NS", "key1"]).ok(), "value 1\n", "the same entry under our name");
    admin(&a, &["deleteKvConfig", "--namespace", "NS", "--key", "key1"]).ok();
    let missing = admin(&a, &["getKvConfig", "-s", "NS", "-k", "key1"]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);

    let order = |a: &str| {
        let out = admin(a, &["--json", "getNamesrvConfig"]).ok();
        let v: Value = serde_json::from_str(&out).unwrap();
        v["orderMessageEnable"].as_str().map(String::from)
    };
    assert_eq!(order(&a).as_deref(), Some("false"));
    admin(&a, &["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"]).ok();
    assert_eq!(order(&a).as_deref(), Some("true"));
    // Refused keys are refused under this name too (exit 1, the server's answer).
    let refused = admin(&a, &["updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("NO_PERMISSION"), "{}", refused.stderr);
}

#[test]
fn version_names_the_version_and_commit() {
    let out = run(&["--version"], None).ok();
    assert_eq!(out, format!("mqnamesrv {}\n", namesrv::VERSION));
    let commit = out.trim_end().rsplit_once(" (").map(|(_, c)| c.trim_end_matches(')')).unwrap_or("");
    assert!(out.starts_with(&format!("mqnamesrv {} (", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(!commit.is_empty(), "no commit in {out:?}");
}

#[test]
fn help_lists_every_command_with_its_mqadmin_name() {
    let help = run(&["admin", "--help"], None).ok();
    // Every command the parser knows, so a new one cannot be left out of the help.
    let parser = namesrv::cli::AdminArgs::augment_args(clap::Command::new("admin"));
    let mut names = 0;
    for sub in parser.get_subcommands() {
        let name = sub.get_name();
        assert!(help.lines().any(|l| l.trim_start().starts_with(name)), "{name} missing from:\n{help}");
        for alias in sub.get_visible_aliases() {
            assert!(help.contains(alias), "{alias} missing from:\n{help}");
        }
        names += 1;
    }
    assert!(names >= 14, "only {names} commands");
    for mqadmin in [
        "topicRoute",
        "clusterList",
        "topicList",
        "getNamesrvConfig",
        "updateNamesrvConfig",
        "updateKvConfig",
        "deleteKvConfig",
        "wipeWritePerm",
        "addWritePerm",
        "deleteTopic",
    ] {
        assert!(help.contains(mqadmin), "{mqadmin} missing from:\n{help}");
    }
    let top = run(&["--help"], None).ok();
    assert!(top.contains("admin") && top.contains("wipeWritePerm"), "{top}");
}

/// `NAMESRV_ADDR="a;b"` with one of the two stopped: every read falls over to the server that answers (and says
/// so on stderr only when it was not the first); every write goes to both, prints one line per server and exits
/// non-zero, and the server that is up applied it.
#[test]
fn with_one_of_two_servers_down_reads_fall_over_and_writes_report_each_server() {
    let (server, _broker) = with_broker();
    let live = server.addr().to_string();
    let mut stopped = InProc::start(|_| {});
    let dead = stopped.addr().to_string();
    stopped.stop();

    let down_first = format!("{dead};{live}");
    for command in [&["clusterList"][..], &["topicRoute", "-t", "HabitTopic"], &["topicList"], &["getNamesrvConfig"]] {
        let expected = admin(&live, command).ok();
        let args = [&["admin"][..], command].concat();
        let fell_over = run(&args, Some(&down_first));
        let stderr = &fell_over.stderr;
        assert_eq!((fell_over.code, fell_over.stdout.as_str()), (0, expected.as_str()), "{command:?}: {stderr}");
        assert!(stderr.contains(&format!("cannot connect to name server {dead}")), "{stderr}");
        assert!(stderr.contains(&format!("answered by {live}")), "{stderr}");
        // The first server answered: nothing on stderr.
        let quiet = run(&args, Some(&format!("{live};{dead}")));
        assert_eq!((quiet.code, quiet.stderr.as_str(), quiet.stdout), (0, "", expected), "{command:?}");
    }

    let up_first = format!("{live};{dead}");
    let put = run(&["admin", "updateKvConfig", "-s", "NS", "-k", "k", "-v", "v"], Some(&up_first));
    assert_eq!(put.code, 2, "{}", put.stderr);
    let lines: Vec<&str> = put.stdout.lines().collect();
    assert_eq!(lines[0], "Put NS k = v");
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), [live.as_str(), "ok"]);
    assert!(lines[2].starts_with(&format!("{dead}  failed: cannot connect: ")), "{}", put.stdout);
    assert_eq!(lines.len(), 3, "{}", put.stdout);
    assert!(put.stderr.contains(&format!("failed on 1 of 2 name servers ({dead})")), "{}", put.stderr);
    assert_eq!(admin(&live, &["getKvConfig", "-s", "NS", "-k", "k"]).ok(), "v\n", "the live server applied it");

    // The same for every write, whichever way it is spelled; the dead server first does not stop the live one.
    for command in [
        &["deleteKvConfig", "-s", "NS", "-k", "k"][..],
        &["kv", "put", "NS", "k2", "v2"],
        &["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"],
        &["config", "set", "clusterTest=true"],
        &["deleteTopic", "-t", "OtherTopic"],
        &["addWritePerm", "-b", "broker-h"],
        &["wipeWritePerm", "-b", "broker-h"],
    ] {
        let args = [&["admin"][..], command].concat();
        let write = run(&args, Some(&down_first));
        assert_eq!(write.code, 2, "{command:?}: {}", write.stderr);
        let out = &write.stdout;
        let dead_line = out.lines().position(|l| l.contains(&dead) && l.contains("ailed")).expect(out);
        let live_line = out.lines().position(|l| l.contains(&live) && !l.contains("ailed")).expect(out);
        assert!(dead_line < live_line, "-n order: {out}");
    }
    assert_eq!(admin(&live, &["kv", "get", "NS", "k2"]).ok(), "v2\n");
    let config: Value = serde_json::from_str(&admin(&live, &["--json", "config", "get"]).ok()).unwrap();
    assert_eq!((config["orderMessageEnable"].as_str(), config["clusterTest"].as_str()), (Some("true"), Some("true")));
    assert_eq!(perms(&live, "HabitTopic"), [4], "wiped on the live server");
    assert!(!admin(&live, &["topicList"]).ok().contains("OtherTopic"));
    let wipe = run(&["admin", "wipeWritePerm", "-b", "broker-h"], Some(&up_first));
    let lines: Vec<&str> = wipe.stdout.lines().collect();
    assert_eq!(lines[0], format!("wipe write perm of broker[broker-h] in name server[{live}] OK, 1"));
    let failed = format!("wipe write perm of broker[broker-h] in name server[{dead}] Failed: cannot connect: ");
    assert!(lines[1].starts_with(&failed), "{}", wipe.stdout);

    // In JSON: the servers that applied it, and those that failed with why.
    let put = run(&["admin", "--json", "kv", "put", "NS", "k3", "v3"], Some(&up_first));
    assert_eq!(put.code, 2);
    let v: Value = serde_json::from_str(&put.stdout).unwrap();
    assert_eq!(v["servers"], serde_json::json!([live]));
    assert_eq!(v["failed"][0]["namesrv"], dead.as_str());
    assert!(v["failed"][0]["error"].as_str().unwrap_or_default().starts_with("cannot connect: "), "{v}");

    // Both down: a read fails naming the last one tried, after saying it tried the first.
    let both = format!("{dead};{dead}");
    let none = run(&["admin", "clusterList"], Some(&both));
    assert_eq!(none.code, 2);
    assert_eq!(none.stderr.lines().count(), 2, "{}", none.stderr);
}

/// updateNamesrvConfig checks the key before sending: a key the server ignores is warned about and still sent
/// (exit 0, as the server answers SUCCESS); a start-only key is warned about and the server's refusal printed; a
/// value that is not true/false for a boolean key is refused with nothing sent.
#[test]
fn update_namesrv_config_warns_of_ignored_keys_and_refuses_non_boolean_switches() {
    let server = InProc::start(|_| {});
    let a = server.addr().to_string();
    let config = |a: &str| -> Value { serde_json::from_str(&admin(a, &["--json", "getNamesrvConfig"]).ok()).unwrap() };

    let unknown = admin(&a, &["updateNamesrvConfig", "-k", "fooBar", "-v", "1"]);
    assert_eq!(unknown.code, 0, "{}", unknown.stderr);
    assert!(
        unknown.stderr.starts_with("mqnamesrv admin: warning: fooBar is not a name server setting"),
        "{}",
        unknown.stderr
    );
    assert!(unknown.stderr.contains("the server ignores it"), "{}", unknown.stderr);
    assert_eq!(config(&a)["fooBar"], Value::Null, "ignored indeed");

    admin(&a, &["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "TRUE"]).ok();
    assert_eq!(config(&a)["orderMessageEnable"], "true");
    for args in [
        &["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "maybe"][..],
        &["config", "set", "clusterTest=true", "orderMessageEnable=no"],
    ] {
        let refused = admin(&a, args);
        assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
        assert!(refused.stdout.is_empty(), "{}", refused.stdout);
        assert!(refused.stderr.contains("orderMessageEnable is a boolean: give true or false"), "{}", refused.stderr);
        assert!(refused.stderr.contains("Nothing was sent"), "{}", refused.stderr);
    }
    // Sent, "maybe" would have turned the switch off, and clusterTest would be on.
    let after = config(&a);
    assert_eq!((after["orderMessageEnable"].as_str(), after["clusterTest"].as_str()), (Some("true"), Some("false")));

    let start_only = admin(&a, &["updateNamesrvConfig", "-k", "listenPort", "-v", "9999"]);
    assert_eq!(start_only.code, 1, "{}", start_only.stderr);
    let lines: Vec<&str> = start_only.stderr.lines().collect();
    assert!(lines[0].contains("warning: listenPort is set at start only: the server refuses it (NO_PERMISSION)"));
    assert_eq!(
        lines[1],
        format!(
            "mqnamesrv admin: name server {a} answered NO_PERMISSION (16): Can not update config in black list. \
             Not changeable at runtime: listenPort"
        )
    );
    assert_eq!(config(&a)["listenPort"], "0");

    let help = run(&["admin", "updateNamesrvConfig", "--help"], None).ok();
    assert!(help.contains("Boolean.parseBoolean") && help.contains("nothing is sent"), "{help}");
}

/// Every flag and argument of every admin command says what it is in `--help`.
#[test]
fn every_flag_of_every_command_has_a_description() {
    fn undescribed(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if arg.get_help().is_none() && !["help", "version"].contains(&id) {
                out.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            undescribed(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }
    let mut parser = namesrv::cli::AdminArgs::augment_args(clap::Command::new("admin"));
    parser.build();
    let mut missing = Vec::new();
    undescribed(&parser, "admin", &mut missing);
    assert!(missing.is_empty(), "no description: {missing:#?}");
    // And the binary shows them.
    let help = run(&["admin", "wipeWritePerm", "--help"], None).ok();
    assert!(
        help.lines().any(|l| l.contains("--brokerName") && l.len() > "  -b, --brokerName <BROKER>".len() + 5),
        "{help}"
    );
}

/// An admin command typed without `admin` (`mqnamesrv clusterList`, the mqadmin habit) is not run and not a bare
/// "unrecognized subcommand": the right form is printed, exit 2.
#[test]
fn admin_commands_without_admin_suggest_the_right_form() {
    for (args, right) in [
        (&["clusterList"][..], "mqnamesrv admin clusterList"),
        (&["-n", "127.0.0.1:1", "topicRoute", "-t", "T"], "mqnamesrv -n 127.0.0.1:1 admin topicRoute -t T"),
        (&["updateNamesrvConfig", "-k", "k", "-v", "v"], "mqnamesrv admin updateNamesrvConfig -k k -v v"),
        (&["getcontrollermetadata", "-a", "h:1"], "mqnamesrv admin getControllerMetaData -a h:1"),
    ] {
        let run = run(args, None);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(run.stderr.contains("is an admin command"), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().nth(1).map(str::trim), Some(right), "{}", run.stderr);
    }
    // Other unknown words are still clap's error.
    let other = run(&["frobnicate"], None);
    assert_eq!(other.code, 2);
    assert!(other.stderr.contains("unrecognized subcommand"), "{}", other.stderr);
}

/// A controller command pointed at a name server's port (where no controller answers; the name server answers
/// REQUEST_CODE_NOT_SUPPORTED) says that the controller is off there, rather than a bare response code.
#[test]
fn controller_commands_at_a_name_server_port_say_the_controller_is_off() {
    let server = InProc::start(|_| {});
    let a = server.addr().to_string();
    for command in [
        &["getControllerMetaData", "-a", &a][..],
        &["getSyncStateSet", "-a", &a, "-b", "broker-a"],
        &["electMaster", "-a", &a, "-c", "C", "-bn", "broker-a", "-b", "1"],
        &["cleanBrokerMetadata", "-a", &a, "-c", "C", "-bn", "broker-a"],
    ] {
        let args = [&["admin"][..], command].concat();
        let off = run(&args, None);
        assert_eq!(off.code, 1, "{command:?}: {}", off.stderr);
        assert!(off.stdout.is_empty(), "{}", off.stdout);
        assert!(
            off.stderr.starts_with(&format!(
                "mqnamesrv admin: the controller is off at {a} (enableControllerInNamesrv=false?)"
            )),
            "{command:?}: {}",
            off.stderr
        );
    }
}
