//! Embeds the commit the binary was built from (`--version`, the `namesrv_build_info` metric). Outside a git
//! checkout (a crate tarball) it is "unknown", unless `NAMESRV_COMMIT` names it (the container build passes it in,
//! as `.git` is not in its context).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    let given = std::env::var("NAMESRV_COMMIT").ok().filter(|c| !c.is_empty() && c != "unknown");
    let commit = given.or_else(|| git(&["rev-parse", "--short=12", "HEAD"]));
    println!("cargo:rustc-env=NAMESRV_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    // Rerun only when HEAD moves. Ask git where HEAD and the branch ref live: in a worktree `.git` is a file and
    // the ref is in the main checkout; a path that does not exist would make cargo rerun this on every build.
    println!("cargo:rerun-if-env-changed=NAMESRV_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
