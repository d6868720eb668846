//! The command line before clap reads it (`main` passes every argv through `mqadmin_argv`): mqadmin's spellings
//! clap cannot take, and admin commands typed without `admin` (`mqnamesrv clusterList`, as mqadmin users do), for
//! which clap alone would only say "unrecognized subcommand".

use std::ffi::OsString;

use clap::Args as _;

use super::AdminArgs;

/// mqadmin spells the broker name `-bn`, which clap cannot take as a short flag: after `admin electMaster` or
/// `admin cleanBrokerMetadata` (or their kebab names), `-bn` becomes `--brokerName`. Other arguments are untouched.
///
/// An admin command used without `admin` ends the program here with the right form on stderr and clap's exit code
/// for a usage error (2), as clap itself ends it for any other bad command line.
pub fn mqadmin_argv(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if let Some(hint) = top_level_hint(&args) {
        eprintln!("{hint}");
        std::process::exit(2);
    }
    let Some(admin) = args.iter().position(|a| a == "admin") else { return args };
    let takes_bn = ["electMaster", "elect-master", "cleanBrokerMetadata", "clean-broker-metadata"];
    let Some(command) = args[admin..].iter().position(|a| takes_bn.iter().any(|c| a == c)) else { return args };
    for arg in &mut args[admin + command..] {
        if arg == "-bn" {
            *arg = OsString::from("--brokerName");
        }
    }
    args
}

/// The right form of a command line whose subcommand is an admin command (`mqnamesrv -n h:9876 clusterList` →
/// `mqnamesrv -n h:9876 admin clusterList`); `None` for any other.
pub(crate) fn top_level_hint(args: &[OsString]) -> Option<String> {
    // The subcommand is the first word that is not a flag or a flag's value. Which top-level flags take a value is
    // `main`'s business, so any flag without `=` is taken to have one: `-c config` (a file named like a command)
    // gets no hint, and `-p clusterList` none either (clap's error then).
    let mut after_flag = false;
    for (i, arg) in args.iter().enumerate().skip(1) {
        let word = arg.to_str()?;
        if word == "--" {
            return None;
        }
        if word.len() > 1 && word.starts_with('-') {
            after_flag = !word.contains('=') && (word.len() == 2 || word.starts_with("--"));
            continue;
        }
        if std::mem::take(&mut after_flag) {
            continue;
        }
        let command = admin_command(word)?;
        let mut right: Vec<String> = vec!["mqnamesrv".into()];
        right.extend(args[1..i].iter().map(|a| quoted(&a.to_string_lossy())));
        right.push("admin".into());
        right.push(command);
        right.extend(args[i + 1..].iter().map(|a| quoted(&a.to_string_lossy())));
        return Some(format!(
            "mqnamesrv: '{word}' is an admin command; run it as `mqnamesrv admin {word}`:\n  {}",
            right.join(" ")
        ));
    }
    None
}

/// The admin command (or mqadmin alias) named `word`, spelled as the parser knows it; mqadmin finds its commands
/// whatever their case, so this does too.
fn admin_command(word: &str) -> Option<String> {
    let parser = AdminArgs::augment_args(clap::Command::new("admin"));
    let found = parser.get_subcommands().find_map(|sub| {
        std::iter::once(sub.get_name()).chain(sub.get_all_aliases()).find(|n| n.eq_ignore_ascii_case(word))
    });
    found.map(String::from)
}

/// `word` as a POSIX shell reads it back.
fn quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn bn_becomes_broker_name_only_for_the_commands_that_take_it() {
        assert_eq!(
            mqadmin_argv(argv("mqnamesrv admin electMaster -a h:1 -bn broker-a -b 2")),
            argv("mqnamesrv admin electMaster -a h:1 --brokerName broker-a -b 2")
        );
        assert_eq!(mqadmin_argv(argv("mqnamesrv admin wipeWritePerm -bn")), argv("mqnamesrv admin wipeWritePerm -bn"));
        let before_admin = "mqnamesrv -bn broker-a admin electMaster";
        assert_eq!(mqadmin_argv(argv(before_admin)), argv(before_admin));
    }

    #[test]
    fn admin_commands_at_the_top_level_get_the_right_form() {
        let hint = |s: &str| top_level_hint(&argv(s));
        let right = |h: Option<String>| h.and_then(|h| h.lines().nth(1).map(|l| l.trim().to_string()));
        assert_eq!(right(hint("/usr/bin/mqnamesrv clusterList")).as_deref(), Some("mqnamesrv admin clusterList"));
        assert_eq!(
            right(hint("mqnamesrv -n h:9876 topicRoute -t T")).as_deref(),
            Some("mqnamesrv -n h:9876 admin topicRoute -t T")
        );
        assert_eq!(
            right(hint("mqnamesrv --namesrvAddr=a:1;b:1 updatekvconfig -s N")).as_deref(),
            Some("mqnamesrv '--namesrvAddr=a:1;b:1' admin updateKvConfig -s N")
        );
        assert_eq!(right(hint("mqnamesrv kv get N k")).as_deref(), Some("mqnamesrv admin kv get N k"));
        assert!(hint("mqnamesrv clusterList").is_some_and(|h| h.starts_with("mqnamesrv: 'clusterList' is an admin")));
        // Not a misplaced admin command: the server's own command lines, and a flag's value named like a command.
        for line in [
            "mqnamesrv",
            "mqnamesrv -c config",
            "mqnamesrv -c /etc/namesrv.properties",
            "mqnamesrv admin clusterList",
            "mqnamesrv -n h:1 admin route T",
            "mqnamesrv controller",
            "mqnamesrv -p",
            "mqnamesrv frobnicate",
            "mqnamesrv -- clusterList",
        ] {
            assert_eq!(hint(line), None, "{line}");
        }
    }
}
