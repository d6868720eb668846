//! Turns a reply into a form two servers' replies can be compared in: code, remark, ext fields (absent and `{}`
//! are the same), and the body parsed with the crate's lenient (fastjson) parser into a canonical tree — object keys
//! sorted, and arrays whose order is Java hash order (`queueDatas`, `brokerDatas`, `topicList`, the values of
//! `clusterAddrTable`) sorted. Java's default dialect `{0:"a"}` and the standard `{"0":"a"}` therefore normalise
//! equal; where the dialect is what is being tested, compare `Normalized::key_style` or the raw bytes as well.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use namesrv::protocol::json::{self, Value};
use namesrv::protocol::{RemotingCommand, SerializeType};

/// Arrays whose element order is Java `HashMap`/`HashSet` iteration order and therefore not comparable.
const HASH_ORDER_ARRAYS: &[&str] = &["queueDatas", "brokerDatas", "topicList"];
/// Objects whose every value is a hash-ordered array.
const HASH_ORDER_ARRAY_MAPS: &[&str] = &["clusterAddrTable"];

/// A canonical JSON tree: object members sorted by key, hash-ordered arrays sorted.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Canon {
    Null,
    Bool(bool),
    /// The number's text as written (a standard-dialect big long arrives as a string and stays one).
    Number(String),
    String(String),
    Array(Vec<Canon>),
    Object(BTreeMap<String, Canon>),
}

/// A reply body after normalisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Empty,
    Json(Canon),
    /// Not parseable as (lenient) JSON: compared byte for byte (lossy UTF-8 for display).
    Text(String),
}

/// How integer map keys of `brokerAddrs` objects are written in the raw body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyStyle {
    /// No non-empty `brokerAddrs` object in the body.
    None,
    /// `{0:"…"}`: fastjson's default dialect.
    Bare,
    /// `{"0":"…"}`: the standard dialect.
    Quoted,
    /// Both styles in one body (never right).
    Mixed,
}

/// The comparable content of one reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub code: i32,
    pub remark: Option<String>,
    /// Absent and `{}` are both the empty map.
    pub ext: BTreeMap<String, String>,
    pub body: Body,
    /// Not part of `content_eq`: the metadata a test may compare separately.
    pub header_encoding: SerializeType,
    pub version: i32,
    pub flag: i32,
    pub language: Option<String>,
    pub key_style: KeyStyle,
    pub raw_body: Vec<u8>,
}

impl Normalized {
    /// Code, remark, ext fields and canonical body equal.
    pub fn content_eq(&self, other: &Normalized) -> bool {
        self.code == other.code && self.remark == other.remark && self.ext == other.ext && self.body == other.body
    }

    /// A multi-line rendering used in diffs.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "code: {}", self.code);
        let _ = writeln!(s, "remark: {:?}", self.remark);
        for (k, v) in &self.ext {
            let _ = writeln!(s, "ext.{k}: {v:?}");
        }
        match &self.body {
            Body::Empty => s.push_str("body: (none)\n"),
            Body::Text(t) => {
                let _ = writeln!(s, "body (text): {t:?}");
            }
            Body::Json(c) => {
                s.push_str("body:\n");
                c.pretty(&mut s, 1);
                s.push('\n');
            }
        }
        s
    }
}

/// Normalises a reply.
pub fn normalize(cmd: &RemotingCommand) -> Normalized {
    let ext = cmd.ext_fields.as_ref().map(|e| e.0.iter().cloned().collect()).unwrap_or_default();
    let body = if cmd.body.is_empty() {
        Body::Empty
    } else {
        match json::parse(&cmd.body) {
            Ok(v) => Body::Json(canon(&v, None)),
            Err(_) => Body::Text(String::from_utf8_lossy(&cmd.body).into_owned()),
        }
    };
    Normalized {
        code: cmd.code,
        remark: cmd.remark.clone(),
        ext,
        body,
        header_encoding: cmd.serialize_type,
        version: cmd.version,
        flag: cmd.flag,
        language: cmd.language.map(|l| l.name().to_string()),
        key_style: key_style(&cmd.body),
        raw_body: cmd.body.to_vec(),
    }
}

/// Canonicalises a parsed value; `key` is the member name it was found under.
pub fn canon(v: &Value, key: Option<&str>) -> Canon {
    match v {
        Value::Null => Canon::Null,
        Value::Bool(b) => Canon::Bool(*b),
        Value::Number(n) => Canon::Number(n.clone()),
        Value::String(s) => Canon::String(s.clone()),
        Value::Array(items) => {
            let mut out: Vec<Canon> = items.iter().map(|i| canon(i, None)).collect();
            if key.is_some_and(|k| HASH_ORDER_ARRAYS.contains(&k)) {
                out.sort();
            }
            Canon::Array(out)
        }
        Value::Object(members) => {
            let sort_values = key.is_some_and(|k| HASH_ORDER_ARRAY_MAPS.contains(&k));
            let mut map = BTreeMap::new();
            for (k, v) in members {
                let mut c = canon(v, Some(k));
                if sort_values {
                    if let Canon::Array(items) = &mut c {
                        items.sort();
                    }
                }
                map.insert(k.clone(), c);
            }
            Canon::Object(map)
        }
    }
}

/// Looks at every `"brokerAddrs":{` in the raw body and reports how its first key is written.
pub fn key_style(body: &[u8]) -> KeyStyle {
    const NEEDLE: &[u8] = b"\"brokerAddrs\":{";
    let (mut bare, mut quoted) = (false, false);
    let mut i = 0;
    while let Some(pos) = find(&body[i..], NEEDLE) {
        let after = i + pos + NEEDLE.len();
        match body.get(after) {
            Some(b'"') => quoted = true,
            Some(c) if c.is_ascii_digit() || *c == b'-' => bare = true,
            _ => {}
        }
        i = after;
    }
    match (bare, quoted) {
        (false, false) => KeyStyle::None,
        (true, false) => KeyStyle::Bare,
        (false, true) => KeyStyle::Quoted,
        (true, true) => KeyStyle::Mixed,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Canon {
    /// Indented rendering, one member per line, so line diffs are readable.
    pub fn pretty(&self, out: &mut String, indent: usize) {
        let pad = "  ".repeat(indent);
        match self {
            Canon::Array(items) if !items.is_empty() => {
                out.push_str("[\n");
                for (n, item) in items.iter().enumerate() {
                    out.push_str(&pad);
                    out.push_str("  ");
                    item.pretty(out, indent + 1);
                    if n + 1 < items.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&pad);
                out.push(']');
            }
            Canon::Object(map) if !map.is_empty() => {
                out.push_str("{\n");
                for (n, (k, v)) in map.iter().enumerate() {
                    let _ = write!(out, "{pad}  {k:?}: ");
                    v.pretty(out, indent + 1);
                    if n + 1 < map.len() {
                        out.push(',');
                    }
                    out.push('\n');
                }
                out.push_str(&pad);
                out.push('}');
            }
            other => {
                let _ = write!(out, "{other}");
            }
        }
    }
}

impl fmt::Display for Canon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Canon::Null => f.write_str("null"),
            Canon::Bool(b) => write!(f, "{b}"),
            Canon::Number(n) => f.write_str(n),
            Canon::String(s) => write!(f, "{s:?}"),
            Canon::Array(items) => {
                f.write_str("[")?;
                for (n, i) in items.iter().enumerate() {
                    if n > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{i}")?;
                }
                f.write_str("]")
            }
            Canon::Object(map) => {
                f.write_str("{")?;
                for (n, (k, v)) in map.iter().enumerate() {
                    if n > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{k:?}:{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// A unified-style line diff of two texts (`-` left only, `+` right only, two-space context).
pub fn line_diff(left: &str, right: &str) -> String {
    let a: Vec<&str> = left.lines().collect();
    let b: Vec<&str> = right.lines().collect();
    // LCS table; replies are small.
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "   {}", a[i]);
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            let _ = writeln!(out, " + {}", b[j]);
            j += 1;
        } else {
            let _ = writeln!(out, " - {}", a[i]);
            i += 1;
        }
    }
    out
}

/// Turns a properties-text body (GET_NAMESRV_CONFIG) into a canonical JSON object of its entries, replacing only
/// the values that are specific to one server: its listen `port` (`"<port>"`), a path equal to one of `roots`
/// (`"<dir>"`) and a path below one (`"<dir>/…/<file name>"`). Keys and every other value stay as they are, so
/// missing or extra keys and different defaults still show.
pub fn normalize_properties(n: &mut Normalized, port: u16, roots: &[std::path::PathBuf]) {
    let text = String::from_utf8_lossy(&n.raw_body).into_owned();
    if text.is_empty() {
        return;
    }
    let mut map = BTreeMap::new();
    for line in text.lines() {
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        let mut value = v.to_string();
        if value == port.to_string() {
            value = "<port>".into();
        }
        for root in roots {
            let root = root.to_string_lossy();
            if value == root {
                value = "<dir>".into();
            } else if let Some(rest) = value.strip_prefix(&format!("{root}/")) {
                let file = rest.rsplit('/').next().unwrap_or(rest);
                value = format!("<dir>/…/{file}");
            }
        }
        map.insert(k.to_string(), Canon::String(value));
    }
    n.body = Body::Json(Canon::Object(map));
}
