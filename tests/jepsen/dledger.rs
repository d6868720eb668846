//! Reads a stopped Java controller node's DLedger store for the checker's rule 7, from the file format alone (no Java,
//! nothing of DLedger's code), as `raftlog.rs` reads ours. The format is DLedger 0.3.2's, the version
//! rocketmq-controller 5.5.0 depends on (`DLedgerMmapFileStore`, `DLedgerEntryCoder`, `MmapFileList`, `IOUtils`):
//!
//! - The node's files are in `controllerStorePath/dledger-<selfId>/` (`DLedgerConfig.getDefaultPath`).
//! - `data/` holds the entries in files of one size (`mappedFileSize`), each named by the 20-digit offset of its first
//!   byte in the log; together they are one sequence of bytes. An entry is, big-endian: magic `i32` (1), size `i32`
//!   (the whole entry), index `i64`, term `i64`, pos `i64` (its own offset in the log), channel `i32`, chain CRC `i32`,
//!   body CRC `i32` (neither CRC is ever set: both 0), body length `i32` (size − 48), the body. An entry that does not
//!   fit in what is left of a file (plus 8 bytes) is put at the start of the next one, and the rest of the file gets a
//!   blank record: magic −1, its length. Indexes start at 0 and follow each other.
//! - Nothing is zeroed when the log is cut back (a follower truncating an old leader's tail, `truncate`): the old bytes
//!   stay after the new end until overwritten. Java's own recovery (`recover`) reads the data files in order (from the
//!   third-last one, trusting those before it) and stops at the first record that is not a next entry: a size of 0,
//!   another magic, a position that is not the record's own, a size that disagrees with the body length, an index that
//!   is not the previous one + 1, or a term below the previous one. This reader stops at the same places, so it sees
//!   the log Java would serve after a restart; a torn tail ends it too.
//! - `index/` maps each index to its entry's position (32 bytes an index); Java rebuilds it from the data when they
//!   disagree, so it is not read here.
//! - `checkpoint` is a properties file, `endIndex=…` and `committedIndex=…` (−1: none), written every 3 s by the flush
//!   thread: `checkpoint.tmp` first, the old one copied to `checkpoint.bak`, then `checkpoint` deleted and
//!   `checkpoint.tmp` renamed to it. A node killed between the delete and the rename has only `checkpoint.tmp`; one
//!   killed while writing `checkpoint.tmp` may leave a cut-off number there, never a larger one. The committed index is
//!   the largest of the two: never past what the node had committed.
//! - Whole files are deleted from the front only: by `CleanSpaceService` (by age, or on a nearly full disk) and after a
//!   snapshot (`SnapshotManager.truncatePrefix` → `resetOffsetAfterSnapshot`: the files wholly before the snapshot's
//!   last entry; the controller's state machine takes one about every 1 000 entries). The first remaining file still
//!   starts with a whole entry, so when the first entry's index is above 0 everything below it is gone (`purged`). A
//!   follower whose log ends before the leader's first file has its files replaced by one that starts mid-file with
//!   zeros before that point (`MmapFileList.rebuildWithPos`): Java's recovery reads no entry there after a restart, and
//!   neither does this reader.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use crate::checker::NodeLog;

/// Magic of an entry (`DLedgerMmapFileStore.MAGIC_1`, the only one) and of the blank record ending a file.
const MAGIC: i32 = 1;
const BLANK_MAGIC: i32 = -1;
/// Bytes before the body (`DLedgerEntry.BODY_OFFSET`).
const BODY_OFFSET: usize = 48;

/// The log of node `node` in `store` (its `controllerStorePath`): its entries as `term T body B` (the body with
/// non-printable bytes escaped, so equal entries read the same on every node; the position is left out), the
/// committed index of its checkpoint, and the index below which its files were deleted, if any.
pub fn read(node: &str, store: &Path) -> Result<NodeLog, String> {
    let dir = node_dir(node, store)?;
    let committed = committed_index(&dir)?;
    let entries = entries(&dir.join("data"))?;
    let purged = entries.keys().next().and_then(|first| first.checked_sub(1));
    Ok(NodeLog { node: node.to_string(), committed, purged, entries })
}

/// `dledger-<node>` under `store`, or else the only `dledger-*` directory there (the member id is the directory's
/// name, and the caller's name for the node may differ from it).
fn node_dir(node: &str, store: &Path) -> Result<PathBuf, String> {
    let own = store.join(format!("dledger-{node}"));
    if own.is_dir() {
        return Ok(own);
    }
    let listing = std::fs::read_dir(store).map_err(|e| format!("{}: {e}", store.display()))?;
    let mut found = Vec::new();
    for entry in listing {
        let path = entry.map_err(|e| format!("{}: {e}", store.display()))?.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("dledger-")) {
            found.push(path);
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("{}: expected dledger-{node} or one dledger-* directory, found {found:?}", store.display())),
    }
}

/// The largest `committedIndex` of `checkpoint` and `checkpoint.tmp`, `None` if neither names one of 0 or more.
fn committed_index(dir: &Path) -> Result<Option<u64>, String> {
    let mut committed = None;
    for name in ["checkpoint", "checkpoint.tmp"] {
        let path = dir.join(name);
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let value = text.lines().find_map(|line| {
            let (key, value) = line.split_once(['=', ':'])?;
            (key.trim() == "committedIndex").then(|| value.trim().parse::<i64>().ok()).flatten()
        });
        committed = committed.max(value.and_then(|v| u64::try_from(v).ok()));
    }
    Ok(committed)
}

/// The data files in log order: (offset of the first byte, length, path); none when `data` does not exist (a node
/// that never stored an entry).
fn data_files(data: &Path) -> Result<Vec<(u64, u64, PathBuf)>, String> {
    let listing = match std::fs::read_dir(data) {
        Ok(listing) => listing,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", data.display())),
    };
    let mut files = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| format!("{}: {e}", data.display()))?;
        let path = entry.path();
        let len = entry.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
        let name = entry.file_name().to_string_lossy().into_owned();
        let from: u64 = name.parse().map_err(|_| format!("{}: not a data file (an offset)", path.display()))?;
        files.push((from, len, path));
    }
    files.sort();
    // Java refuses to start on files of different sizes or with a gap between them (`MmapFileList.load`,
    // `checkSelf`): such a store is damaged, not a log to compare.
    for pair in files.windows(2) {
        let ((from, len, path), (next, next_len, next_path)) = (&pair[0], &pair[1]);
        if len != next_len || from + len != *next {
            return Err(format!(
                "{} ({len} bytes) is not followed by {} ({next_len} bytes)",
                path.display(),
                next_path.display()
            ));
        }
    }
    Ok(files)
}

/// Reads as many bytes as `buf` holds; `false` if the file ends first.
fn fill(file: &mut impl Read, buf: &mut [u8]) -> Result<bool, std::io::Error> {
    match file.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// `body` as text, losing nothing: printable ASCII as it is (the controller's events are mostly JSON), `\\` for a
/// backslash, `\xNN` for any other byte.
fn shown(body: &[u8]) -> String {
    let mut s = String::with_capacity(body.len());
    for &b in body {
        match b {
            b'\\' => s.push_str("\\\\"),
            b' '..=b'~' => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The entries of the data files in `data`, from the first byte of the first file up to the first record that is
/// not the next entry (see the module's description).
fn entries(data: &Path) -> Result<BTreeMap<u64, String>, String> {
    let mut entries = BTreeMap::new();
    // The previous entry's index and term.
    let mut last: Option<(i64, i64)> = None;
    'files: for (from, len, path) in data_files(data)? {
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        let mut file = BufReader::new(File::open(&path).map_err(io)?);
        let mut at = from;
        loop {
            let mut header = [0u8; BODY_OFFSET];
            if !fill(&mut file, &mut header[..8]).map_err(io)? {
                break 'files;
            }
            let (magic, size) = (i32_at(&header, 0), i32_at(&header, 4));
            if magic == BLANK_MAGIC {
                continue 'files;
            }
            if magic != MAGIC || !fill(&mut file, &mut header[8..]).map_err(io)? {
                break 'files;
            }
            let (index, term, pos, body_len) =
                (i64_at(&header, 8), i64_at(&header, 16), i64_at(&header, 24), i32_at(&header, 44));
            let next = last.is_none_or(|(i, t)| i.checked_add(1) == Some(index) && term >= t);
            // The size agrees with the body's length, and the entry ends within this file.
            let fits = body_len >= 0
                && i64::from(size) == i64::from(body_len) + BODY_OFFSET as i64
                && at - from + size as u64 <= len;
            if !next || !fits || index < 0 || term < 0 || u64::try_from(pos) != Ok(at) {
                break 'files;
            }
            let mut body = vec![0u8; body_len as usize];
            if !fill(&mut file, &mut body).map_err(io)? {
                break 'files;
            }
            entries.insert(index as u64, format!("term {term} body {}", shown(&body)));
            last = Some((index, term));
            at += size as u64;
        }
    }
    Ok(entries)
}
