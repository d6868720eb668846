//! The paths the docs name, checked: every file or folder of the repository a doc names (`src/…`, `tests/…`,
//! `benches/…`, `perf/…`, `docs/…`) exists, and every module path written in backticks
//! ([`crate::write_command::Outcome`], [`crate::handlers::dispatch`]) names a module of the crate and, at its end, an
//! item declared in that module's files. A rename that leaves a doc behind fails here; rustdoc's own links are checked
//! by `cargo doc` in CI.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{files_ending, root, rust_files};

/// The Markdown files that describe the code: the README and everything under `docs/`.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    files_ending(&root().join("docs"), "md", &mut files);
    files
}

/// Repository paths in a text: words that start with one of the top-level folders, cut at the first character
/// that cannot be part of a path. Patterns (`*`, `<…>`, `{…}`) and paths under a run's output are skipped.
fn repo_paths(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for start in ["src/", "tests/", "benches/", "perf/", "docs/"] {
        for (i, _) in text.match_indices(start) {
            let before = text[..i].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.' | '~' | '$')) {
                continue;
            }
            let path: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.'))
                .collect();
            let rest = &text[i + path.len()..];
            let path = path.trim_end_matches('.').to_string();
            if rest.starts_with(['*', '<', '{']) || path.contains("..") {
                continue;
            }
            out.insert(path);
        }
    }
    out
}

/// Module paths in backticks whose first segment is a module of `lib.rs`: `a::b::C` → ["a", "b", "C"].
fn module_paths(text: &str, modules: &BTreeSet<String>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        let quoted = quoted.strip_prefix("crate::").unwrap_or(quoted);
        let segments: Vec<String> = quoted.split("::").map(str::to_string).collect();
        let plain = segments.iter().all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if segments.len() >= 2 && plain && modules.contains(&segments[0]) {
            out.insert(segments);
        }
    }
    out
}

/// The files of module `dir` (`src/a/b`): `b.rs`, and `b/` with everything under it.
fn module_files(dir: &Path, production: bool) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    let file = dir.with_extension("rs");
    if file.is_file() {
        files.push(file);
    }
    if dir.is_dir() {
        rust_files(dir, &mut files);
    }
    // A module's unit tests declare helpers of their own; a doc names production items.
    if production {
        let src = root().join("src");
        files.retain(|f| !super::is_test_file(f.strip_prefix(&src).unwrap_or(f)));
    }
    (!files.is_empty()).then_some(files)
}

/// Whether `name` is declared in one of `files`: an item (or an item a `pub use` re-exports) or, with `members`,
/// also a method, a field or an enum variant of that name.
fn declared(files: &[PathBuf], name: &str, members: bool) -> bool {
    let keywords = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "macro_rules!"];
    let ends_word = |rest: &str| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    files.iter().any(|f| {
        let text = std::fs::read_to_string(f).expect("a source file");
        text.lines().any(|line| {
            let line = line.trim_start();
            let item = keywords
                .iter()
                .any(|k| line.split(&format!("{k} ")).skip(1).any(|r| r.strip_prefix(name).is_some_and(ends_word)));
            let reexport = line.starts_with("pub") && line.contains(" use ") && {
                let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
                words.clone().any(|w| w == name)
            };
            let member = members
                && (line.strip_prefix(name).is_some_and(|r| r.starts_with([':', '(', ',', ' ', '{']))
                    || line
                        .strip_prefix("pub ")
                        .and_then(|r| r.strip_prefix(name))
                        .is_some_and(|r| r.starts_with(':'))
                    || line
                        .strip_prefix("pub(crate) ")
                        .and_then(|r| r.strip_prefix(name))
                        .is_some_and(|r| r.starts_with(':')));
            item || reexport || member
        })
    })
}

/// Why one module path does not resolve, or `None`.
fn unresolved(segments: &[String]) -> Option<String> {
    let why = unresolved_in(&root().join("src"), segments)?;
    // A test's path as `cargo test --test BIN` names it (`acl::go_client_signed_routes` in docs/interop.md).
    let binaries = std::fs::read_dir(root().join("tests")).expect("tests/").filter_map(|e| Some(e.ok()?.path()));
    let test = |bin: PathBuf| -> bool {
        let files = module_files(&bin.join(&segments[0]), false).unwrap_or_default();
        files.iter().any(|f| {
            let text = std::fs::read_to_string(f).expect("a test file");
            segments[1..].iter().all(|s| text.contains(&format!("fn {s}(")) || text.contains(&format!("mod {s}")))
        })
    };
    (!binaries.filter(|b| b.is_dir()).any(test)).then_some(why)
}

fn unresolved_in(src: &Path, segments: &[String]) -> Option<String> {
    let mut dir = src.to_path_buf();
    for (i, segment) in segments.iter().enumerate() {
        let next = dir.join(segment);
        if segment == "tests" {
            // A unit test by its path (`reactor::tests::full_writer_queue_answers_system_busy`).
            // Beside the module (`tests.rs`, `tests/`), or inline in its own file.
            let files = module_files(&next, false).or_else(|| module_files(&dir, false)).unwrap_or_default();
            let named = |s: &String| files.iter().any(|f| declared(std::slice::from_ref(f), s, false));
            return segments[i + 1..]
                .iter()
                .find(|s| !named(s))
                .map(|s| format!("no test `{s}` in {}", next.display()));
        }
        if module_files(&next, true).is_some() && (next.with_extension("rs").is_file() || next.join("mod.rs").is_file())
        {
            dir = next;
            continue;
        }
        let files = module_files(&dir, true)?;
        // An item: it must be declared in the module; what follows it (a method, a field) in the same files.
        let item = &segments[i];
        if !declared(&files, item, false) {
            return Some(format!("no item `{item}` in {}", dir.display()));
        }
        return segments[i + 1..]
            .iter()
            .find(|s| !declared(&files, s, true))
            .map(|s| format!("no `{item}::{s}` in {}", dir.display()));
    }
    None
}

#[test]
fn the_paths_the_docs_name_exist() {
    let modules: BTreeSet<String> = super::lib_modules().into_iter().collect();
    let mut missing = Vec::new();
    for doc in doc_files() {
        let rel = doc.strip_prefix(root()).expect("under the root").display().to_string();
        let text = std::fs::read_to_string(&doc).expect("a doc");
        for path in repo_paths(&text) {
            let run_output = path.starts_with("perf/results/") && path.ends_with(".raw");
            if !root().join(&path).exists() && !run_output {
                missing.push(format!("{rel}: {path} does not exist"));
            }
        }
        for segments in module_paths(&text, &modules) {
            if let Some(why) = unresolved(&segments) {
                missing.push(format!("{rel}: `{}`: {why}", segments.join("::")));
            }
        }
    }
    assert!(missing.is_empty(), "paths the docs name that the code does not have:\n{}", missing.join("\n"));
}

#[test]
fn the_doc_readers_find_paths_and_module_paths() {
    let text = "see src/floors.rs, `tests/suite/` and docs/decisions/0027-*; not x/src/y or ~/src/z. \
                `write_command::Outcome`, `crate::handlers::dispatch`, `Conn::admission`, `a b`";
    let paths: Vec<String> = repo_paths(text).into_iter().collect();
    assert_eq!(paths, ["src/floors.rs", "tests/suite/"]);
    let modules = ["write_command", "handlers"].map(String::from).into_iter().collect();
    let found: Vec<String> = module_paths(text, &modules).into_iter().map(|s| s.join("::")).collect();
    assert_eq!(found, ["handlers::dispatch", "write_command::Outcome"]);
    assert_eq!(unresolved(&["write_command".into(), "Outcome".into()]), None);
    assert!(unresolved(&["writer".into(), "command".into(), "Outcome".into()]).is_some());
}
