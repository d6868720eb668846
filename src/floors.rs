//! The floors of the house, checked: `docs/architecture.md` declares which floor each top-level module is on
//! ("Floors"), and these tests read that table and every source file, and fail when an import goes up a floor or
//! sideways between two modules of one floor (a chain of threads on one floor would hide which one waits on which),
//! when modules import each other in a circle, and when a module of `lib.rs` is missing from the table or from
//! `lib.rs`'s own module map. Test code is exempt (a test may build a writer to get a snapshot): files named
//! `tests.rs` or under a `tests/` folder, and each item marked `#[cfg(test)]` — that item alone, so every production
//! line of a file is read, below its test module too.

mod doc_paths;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// module → floor, from the "Floors" table of docs/architecture.md: rows `| N | `a`, `b` | … |`.
fn declared_floors() -> BTreeMap<String, u32> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let section = doc.split("\n## Floors").nth(1).expect("a \"## Floors\" section in docs/architecture.md");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut floors = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(floor), Some(modules)) = (cells.get(1), cells.get(2)) else { continue };
        let Ok(floor) = floor.parse::<u32>() else { continue };
        for m in modules.split(',') {
            let m = m.trim().trim_matches('`');
            assert!(floors.insert(m.to_string(), floor).is_none(), "{m} is on two floors in docs/architecture.md");
        }
    }
    assert!(!floors.is_empty(), "the Floors table of docs/architecture.md lists no module");
    floors
}

/// The top-level modules `lib.rs` declares, whatever their visibility (`mod`, `pub mod`, `pub(crate) mod`, …).
fn lib_modules() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    lib.lines().filter_map(module_declared).filter(|m| m != "floors").collect()
}

/// The module a line such as `pub(crate) mod x;` declares.
fn module_declared(line: &str) -> Option<String> {
    let line = line.trim();
    let rest = match line.strip_prefix("pub") {
        Some(r) if r.starts_with('(') => &r[r.find(')')? + 1..],
        Some(r) => r,
        None => line,
    };
    let name = rest.trim_start().strip_prefix("mod ")?.trim().strip_suffix(';')?.trim();
    Some(name.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    files_ending(dir, "rs", out);
}

/// Every file under `dir` with extension `ext`, at any depth.
fn files_ending(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a folder of the repository") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files_ending(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

fn is_test_file(rel: &Path) -> bool {
    rel.components().any(|c| c.as_os_str() == "tests")
        || rel.file_stem().and_then(|s| s.to_str()).is_some_and(|s| s == "tests")
}

/// The production code of a file: without comments and without each item marked `#[cfg(test)]` (a test module,
/// a test-only function, `use`, variant or match arm), and nothing more, so that production code after a test-only
/// item is still read.
fn code_of(text: &str) -> String {
    let code = lexed(text);
    let mut out = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find(TEST_ONLY) {
        out.push_str(&rest[..at]);
        let item = &rest[at + TEST_ONLY.len()..];
        rest = &item[item_end(item)..];
    }
    out.push_str(rest);
    out
}

const TEST_ONLY: &str = "#[cfg(test)]";

/// `text` with comments removed and the contents of string and character literals blanked (their quotes kept), so
/// that braces, `//` and `crate::` inside literals are neither structure nor imports.
fn lexed(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < chars.len() {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            out.push(' ');
            i = j;
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…", r#"…"#, … (an `r#ident` raw identifier has no quote after its hashes).
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body_at = i + 2 + hashes;
            let body: String = chars[body_at..].iter().collect();
            let len = body.find(&close).map(|n| body[..n].chars().count()).unwrap_or(chars.len() - body_at);
            out.push_str("\"\"");
            i = body_at + len + 1 + hashes;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{7f}') or a lifetime ('a, which has no closing quote).
            let len = if next == Some('\\') {
                chars[i + 2..].iter().position(|&q| q == '\'').map(|n| n + 3)
            } else {
                (chars.get(i + 2) == Some(&'\'')).then_some(3)
            };
            match len {
                Some(len) => {
                    out.push_str("' '");
                    i += len;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Where the item that starts `code` ends (comments and literals already blanked): after its `;`, after its
/// block's `}`, or — for an enum variant, a field or a match arm — after its `,`; never past the `}` that closes
/// the scope it is in. Further attributes before the item are part of it.
fn item_end(code: &str) -> usize {
    let mut head = code.trim_start();
    // Past further attributes (`#[derive(…)]`, …): brackets inside them balance.
    while let Some(attr) = head.strip_prefix("#[") {
        let mut depth = 1usize;
        let close = attr.find(|c: char| {
            depth = match c {
                '[' => depth + 1,
                ']' => depth - 1,
                _ => depth,
            };
            depth == 0
        });
        head = close.map_or("", |n| attr[n + 1..].trim_start());
    }
    // Past a visibility (`pub`, `pub(crate)`, …) and `async`, the keyword that says this is an item.
    let item = head
        .strip_prefix("pub")
        .map_or(head, |r| r.strip_prefix(|c: char| c == '(').map_or(r, |r| &r[r.find(')').map_or(0, |n| n + 1)..]));
    let item = item.trim_start();
    let item = item.strip_prefix("async ").unwrap_or(item);
    let declares =
        ["fn ", "mod ", "use ", "impl", "struct ", "enum ", "const ", "static ", "type ", "trait ", "macro_rules!"]
            .iter()
            .any(|k| item.starts_with(k));
    let mut depth = 0usize;
    for (i, c) in code.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth == 0 => return i,
            ')' | ']' => depth -= 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            ',' if depth == 0 && !declares => return i + 1,
            _ => {}
        }
    }
    code.len()
}

/// The top-level modules a file's code names: `crate::x` and each item of `crate::{x::…, y, …}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Items at depth 0 of the braces: the first segment of each.
            let (mut depth, mut start) = (0usize, 0usize);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..j].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

/// module → the modules its non-test code names, with the file of each arrow.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src").to_path_buf();
        let first = rel.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or_default();
        let module = first.trim_end_matches(".rs").to_string();
        if ["lib", "main", "floors"].contains(&module.as_str()) || is_test_file(&rel) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).expect("read"));
        for to in named_modules(&code) {
            if to != module {
                graph.entry(module.clone()).or_default().entry(to).or_insert_with(|| rel.display().to_string());
            }
        }
    }
    graph
}

#[test]
fn every_module_is_on_a_floor_and_in_the_module_map() {
    let floors = declared_floors();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).expect("src/lib.rs");
    let map: String = lib.lines().filter(|l| l.starts_with("//!")).collect::<Vec<_>>().join("\n");
    for m in lib_modules() {
        assert!(
            floors.contains_key(&m),
            "module {m} is on no floor: add it to the Floors table of docs/architecture.md"
        );
        assert!(map.contains(&format!("`{m}`")), "module {m} is missing from the module map at the top of src/lib.rs");
    }
    for m in floors.keys() {
        assert!(lib_modules().contains(m), "docs/architecture.md puts {m} on a floor, but lib.rs has no such module");
    }
}

#[test]
fn imports_go_down_only() {
    let wrong = not_downward(&declared_floors(), &imports());
    assert!(
        wrong.is_empty(),
        "imports that go up a floor or sideways within one (docs/architecture.md, \"Floors\"):\n{}",
        wrong.join("\n")
    );
}

/// Each import of `graph` whose target is not on a lower floor than its source, with the file that makes it.
fn not_downward(floors: &BTreeMap<String, u32>, graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let mut wrong = Vec::new();
    for (from, tos) in graph {
        let Some(&f) = floors.get(from) else { continue };
        for (to, file) in tos {
            match floors.get(to) {
                Some(&t) if t > f => {
                    wrong.push(format!("{file}: {from} (floor {f}) imports {to} (floor {t}), a floor up"))
                }
                Some(&t) if t == f => wrong.push(format!("{file}: {from} imports {to}, sideways on floor {f}")),
                _ => {}
            }
        }
    }
    wrong
}

#[test]
fn an_import_sideways_or_up_is_refused_and_one_down_is_not() {
    let floors: BTreeMap<String, u32> = [("reactor", 8), ("decoder", 7), ("writer", 7), ("handlers", 6)]
        .into_iter()
        .map(|(m, f)| (m.to_string(), f))
        .collect();
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry(from.to_string()).or_default().insert(to.to_string(), format!("src/{from}.rs"));
        }
        g
    };
    assert!(not_downward(&floors, &graph(&[("reactor", "decoder"), ("decoder", "handlers")])).is_empty());
    assert_eq!(
        not_downward(&floors, &graph(&[("decoder", "writer"), ("handlers", "reactor")])),
        [
            "src/decoder.rs: decoder imports writer, sideways on floor 7",
            "src/handlers.rs: handlers (floor 6) imports reactor (floor 8), a floor up"
        ]
    );
}

#[test]
fn no_module_circles() {
    let graph = imports();
    // Depth-first search with colours: grey on the stack, black done. A grey target closes a circle.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeMap<String, String>>,
        colour: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        colour.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for to in graph.get(m).into_iter().flat_map(|t| t.keys()) {
            match colour.get(to).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == to).unwrap_or(0);
                    let mut circle = stack[at..].to_vec();
                    circle.push(to.clone());
                    return Some(circle);
                }
                0 => {
                    if let Some(c) = visit(to, graph, colour, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        colour.insert(m.to_string(), 2);
        None
    }
    let mut colour = BTreeMap::new();
    for m in graph.keys() {
        if colour.get(m).copied().unwrap_or(0) == 0 {
            let circle = visit(m, &graph, &mut colour, &mut Vec::new());
            assert!(circle.is_none(), "modules import each other in a circle: {}", circle.unwrap().join(" → "));
        }
    }
}

#[test]
fn the_module_reader_sees_every_visibility() {
    for line in ["mod a;", "pub mod a;", "pub(crate) mod a;", "  pub(super) mod a ;", "pub(in crate::x) mod a;"] {
        assert_eq!(module_declared(line).as_deref(), Some("a"), "{line}");
    }
    for line in ["mod tests {", "// mod a;", "pub use a::b;", "pub fn module();", "pub(crate) model: u8,"] {
        assert_eq!(module_declared(line), None, "{line}");
    }
}

#[test]
fn the_import_reader_sees_grouped_and_plain_paths_but_not_comments_or_tests() {
    let code = code_of(
        "use crate::{config::Config, state::{Snapshot, RouteView}, self};\nuse crate::model::X; // crate::writer\n\
         fn f() { crate::clock::now(); }\n#[cfg(test)]\nmod tests { use crate::server; }",
    );
    let found: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(found, ["clock", "config", "model", "state"]);
}

/// The "Rules" table of docs/architecture.md: rows `| `path`, `!path` | `name`, … | why |`.
fn declared_rules() -> Vec<(Vec<String>, Vec<String>)> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).expect("docs/architecture.md");
    let section = doc.split("\n## Rules").nth(1).expect("a \"## Rules\" section in docs/architecture.md");
    let section = section.split("\n## ").next().unwrap_or(section);
    let ticked = |cell: &str| -> Vec<String> {
        cell.split(',').map(|c| c.trim().trim_matches('`').to_string()).filter(|c| !c.is_empty()).collect()
    };
    let rules: Vec<_> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (paths, names) = (cells.get(1)?, cells.get(2)?);
            paths.starts_with('`').then(|| (ticked(paths), ticked(names)))
        })
        .collect();
    assert!(!rules.is_empty(), "the Rules table of docs/architecture.md has no row");
    rules
}

/// Whether `code` names `name`: a module `crate::m` however it is imported (so `crate::mx` is not `crate::m`, and
/// `crate::{m::…}` is), anything else as text.
fn names_it(code: &str, name: &str) -> bool {
    match name.strip_prefix("crate::") {
        Some(module) if module.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            named_modules(code).contains(module)
        }
        _ => code.contains(name),
    }
}

#[test]
fn a_rule_on_a_module_sees_it_imported_in_a_group_and_not_in_a_longer_name() {
    let code = code_of("use crate::{clip, state::Snapshot};\nfn f() { crate::clock::now(); }");
    assert!(names_it(&code, "crate::state"));
    assert!(!names_it(&code, "crate::cli"), "clip is not cli");
    assert!(names_it(&code, "crate::clock::now"));
    assert!(!names_it(&code, "RouteTables"));
}

#[test]
fn the_rules_of_docs_architecture_hold() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut broken = Vec::new();
    for (paths, names) in declared_rules() {
        let (out, within): (Vec<_>, Vec<_>) = paths.iter().partition(|p| p.starts_with('!'));
        let matches = |rel: &str, p: &str| if p.ends_with('/') { rel.starts_with(p) } else { rel == p };
        for file in &files {
            let rel = file.strip_prefix(root()).expect("under the root").display().to_string();
            let rel_in_src = Path::new(&rel).strip_prefix("src").expect("under src");
            if is_test_file(rel_in_src)
                || !within.iter().any(|p| matches(&rel, p))
                || out.iter().any(|p| matches(&rel, &p[1..]))
            {
                continue;
            }
            let code = code_of(&std::fs::read_to_string(file).expect("read"));
            for name in names.iter().filter(|n| names_it(&code, n)) {
                broken.push(format!("{rel} names {name}"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "production code that breaks a rule of docs/architecture.md (\"Rules\"):\n{}",
        broken.join("\n")
    );
}

/// Production code after a test-only item is read: the check once cut each file at its first `#[cfg(test)]` and
/// so never saw the lower half of `handlers/mod.rs` or `writer/mod.rs`.
#[test]
fn the_import_reader_reads_past_test_only_items_to_the_end_of_the_file() {
    let code = code_of(
        "#[cfg(test)]\npub(crate) use crate::server::X;\nenum E {\n    #[cfg(test)]\n    Only(crate::http::Y),\n    \
         Real(crate::model::Z),\n}\nfn f(t: T) { match t {\n    #[cfg(test)]\n    T::A => crate::feed::g(1, 2),\n    \
         T::B => crate::clock::now(),\n} }\n#[cfg(test)]\nmod tests {\n    fn s() { let _ = \"}\"; crate::writer::w(); }\n}\n\
         #[cfg(test)]\n#[derive(Debug)]\nstruct Probe<A, B> { a: A, b: crate::audit::B }\n\
         pub(crate) fn late() { let _ = '{'; let _ = r#\"{ crate::tls \"#; crate::config::load(); } /* crate::acl */\n",
    );
    let found: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(found, ["clock", "config", "model"], "read:\n{code}");
}

/// Unit tests have one layout: a module's tests are its `mod tests` — inline when short, `tests.rs` beside the module
/// when long, a `tests/` folder when they need several files — so a reader finds them under one name.
#[test]
fn unit_tests_live_in_mod_tests() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut odd = Vec::new();
    for path in files {
        if path.file_stem().and_then(|s| s.to_str()).is_some_and(|s| s.starts_with("tests_") || s.ends_with("_tests")) {
            odd.push(format!("{}: a test file not named tests.rs", path.display()));
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        for line in text.lines().filter(|l| l.trim_start().trim_start_matches("pub(super) ").starts_with("mod tests_"))
        {
            odd.push(format!("{}: `{}`", path.display(), line.trim()));
        }
    }
    assert!(odd.is_empty(), "unit tests outside `mod tests`:\n{}", odd.join("\n"));
}
