//! The Helm chart (`docs/deploy/helm/namesrv`) checked without a cluster (none can run on the CI machine):
//! `helm lint --strict` and `helm template` with the default values and with TLS and ACL on, and every rendered
//! object decoded strictly against the Kubernetes API types by `tests/peers/k8s` (an unknown field is an error),
//! with and without the Prometheus Operator's API. helm and the checker are built once by
//! `tests/peers/k8s/tools.sh` (Go, the module proxy). Ignored: run with `cargo test -- --ignored`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// helm and the checker, built (once) by tools.sh.
fn tools() -> (PathBuf, PathBuf) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/k8s/tools.sh");
    let out = Command::new(&script).output().unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(out.status.success(), "{} failed:\n{}", script.display(), String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines().map(PathBuf::from);
    (lines.next().expect("helm's path"), lines.next().expect("the checker's path"))
}

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/helm/namesrv")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn helm(helm: &Path, args: &[&str]) -> Output {
    Command::new(helm)
        .args(args)
        .env("HELM_CACHE_HOME", std::env::temp_dir().join("namesrv-helm-cache"))
        .env("HELM_CONFIG_HOME", std::env::temp_dir().join("namesrv-helm-config"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", helm.display()))
}

/// The checker's verdict on `manifest`: its output, and whether it accepted every object.
fn check(checker: &Path, manifest: &str) -> (bool, String) {
    let mut child = Command::new(checker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", checker.display()));
    child.stdin.take().expect("stdin").write_all(manifest.as_bytes()).expect("write the manifest");
    let out = child.wait_with_output().expect("the checker's output");
    (out.status.success(), text(&out))
}

#[test]
#[ignore = "real peer: helm 4 and the Kubernetes API types (Go, built once)"]
fn helm_chart_lints_and_renders_objects_the_kubernetes_api_types_accept_strictly() {
    let (helm_bin, checker) = tools();
    let chart = chart();
    let chart = chart.to_str().expect("a UTF-8 path");
    let tls_acl = format!("{chart}/ci/tls-acl-values.yaml");
    for (name, values) in [("default values", None), ("TLS and ACL", Some(tls_acl.as_str()))] {
        let mut lint = vec!["lint", "--strict", chart];
        lint.extend(values.iter().flat_map(|v| ["--values", *v]));
        let out = helm(&helm_bin, &lint);
        assert!(out.status.success(), "helm lint ({name}):\n{}", text(&out));
        for monitoring in [false, true] {
            let mut args = vec!["template", "mq", chart, "--namespace", "rocketmq"];
            args.extend(values.iter().flat_map(|v| ["--values", *v]));
            if monitoring {
                args.extend(["--api-versions", "monitoring.coreos.com/v1"]);
            }
            let out = helm(&helm_bin, &args);
            assert!(out.status.success(), "helm template ({name}):\n{}", text(&out));
            let manifest = String::from_utf8_lossy(&out.stdout).into_owned();
            let (ok, verdict) = check(&checker, &manifest);
            assert!(
                ok,
                "strict decode ({name}, monitoring API {monitoring}):\n{verdict}\n--- manifest ---\n{manifest}"
            );
            eprintln!("helm template ({name}, monitoring API {monitoring}): {}", verdict.trim());
            let expected = if monitoring { "ServiceMonitor=1 " } else { "" };
            assert!(
                verdict.contains(&format!("PodDisruptionBudget=1 Service=2 {expected}StatefulSet=1")),
                "objects ({name}, monitoring API {monitoring}): {verdict}"
            );
            assert!(verdict.contains("ConfigMap=1 "), "{verdict}");
            assert!(
                manifest.contains("namesrvPeers=mq-namesrv-0.mq-namesrv-peers.rocketmq.svc.cluster.local:9876;"),
                "namesrvPeers by the headless Service's names:\n{manifest}"
            );
            if values.is_some() {
                for line in ["aclEnable=true", "tls.server.mode=enforcing", "secretName: namesrv-tls", "scheme: HTTPS"]
                {
                    assert!(manifest.contains(line), "{line} missing ({name}):\n{manifest}");
                }
            }
        }
    }

    // A grace period that leaves no room for the drain is refused with the reason.
    let out = helm(&helm_bin, &["template", "mq", chart, "--set", "shutdown.terminationGracePeriodSeconds=12"]);
    assert!(!out.status.success(), "a 12 s grace period for a 5 s preStop and a 15 s drain was accepted");
    assert!(text(&out).contains("must be larger than"), "{}", text(&out));

    // Under TLS enforcing the probes speak HTTPS and cannot present a client certificate: requiring one is refused.
    let tls = ["--set", "tls.enabled=true", "--set", "tls.secretName=t", "--set", "tls.requireClientCerts=true"];
    let out = helm(&helm_bin, &[&["template", "mq", chart][..], &tls[..]].concat());
    assert!(!out.status.success() && text(&out).contains("cannot present"), "{}", text(&out));

    // The checker is strict: a misspelt field and an unknown kind are refused.
    let out = helm(&helm_bin, &["template", "mq", chart]);
    let manifest = String::from_utf8_lossy(&out.stdout).replacen("  replicas: 2", "  replica: 2", 1);
    let (ok, verdict) = check(&checker, &manifest);
    assert!(!ok && verdict.contains("replica"), "a misspelt field passed: {verdict}");
    let (ok, verdict) = check(&checker, "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n");
    assert!(!ok && verdict.contains("Gadget"), "an unknown kind passed: {verdict}");
}
