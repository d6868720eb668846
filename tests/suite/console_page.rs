//! Static checks of the web console page (`src/http/console.html`) that the browser test
//! (`tests/interop/console.rs`) would not notice: it stays one small self-contained file, and no code in it turns
//! text into markup (topic and broker names are whatever clients sent).

const PAGE: &str = include_str!("../../src/http/console.html");

#[test]
fn console_page_is_small() {
    // 40 KiB until issue 47 added the health summary, the fleet, the topic browser's paging and filters, the
    // error chart with its readouts and the phone layout (about 58 KiB then): still one file read in one go.
    assert!(PAGE.len() < 64 * 1024, "console.html is {} bytes; it is meant to stay small", PAGE.len());
}

#[test]
fn console_page_loads_nothing_from_elsewhere() {
    // The only URL is the SVG namespace, an identifier that is never fetched.
    let urls: Vec<&str> = PAGE
        .match_indices("://")
        .map(|(i, _)| {
            let start = PAGE[..i].rfind(|c: char| c == '\'' || c == '"' || c.is_whitespace()).map_or(0, |s| s + 1);
            let end = i + PAGE[i..].find(|c: char| c == '\'' || c == '"' || c.is_whitespace()).unwrap_or(0);
            &PAGE[start..end]
        })
        .filter(|u| *u != "http://www.w3.org/2000/svg")
        .collect();
    assert!(urls.is_empty(), "console.html names other URLs: {urls:?}");
    for tag in ["<script src", "<link rel=\"stylesheet\"", "@import", "<iframe"] {
        assert!(!PAGE.contains(tag), "console.html loads something: {tag}");
    }
}

#[test]
fn console_page_builds_no_markup_from_strings() {
    for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
        assert!(!PAGE.contains(sink), "console.html uses {sink}: server text must go in as text nodes");
    }
}
