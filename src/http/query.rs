//! The parts of a request URL the endpoint reads: `%XX` escapes and query parameters. A leaf: the answers
//! (`routes`, `api`, `events`) all use it.

/// `%XX` escapes in a path segment (topic names are usually plain; `%` and non-ASCII may be escaped).
pub(super) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `name`'s value in a query string, percent-decoded (`+` is a space, as forms send it).
pub(super) fn param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(&v.replace('+', " ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        assert_eq!(param("q=Topic%20A&limit=5", "q").as_deref(), Some("Topic A"));
        assert_eq!(param("q=a+b", "q").as_deref(), Some("a b"));
        assert_eq!(param("limit=5", "q"), None);
        assert_eq!(param("q", "q").as_deref(), Some(""));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("Topic%20A"), "Topic A");
        assert_eq!(percent_decode("%E4%B8%AD"), "中");
        assert_eq!(percent_decode("bad%2"), "bad%2");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("%中"), "%中");
    }
}
