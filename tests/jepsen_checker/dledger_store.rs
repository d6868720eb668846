//! The DLedger store reader (`tests/jepsen/dledger.rs`) proven on small stores written byte by byte in DLedger
//! 0.3.2's format: entries and the checkpoint read back, a torn or stale tail ends the log, a blank record moves on
//! to the next file, deleted files show as purged, and rule 7 catches a flipped body byte.

use std::path::{Path, PathBuf};

use crate::checker::{check_raft_logs, Report, Violation};
use crate::dledger;

/// The data files' size here (`mappedFileSize`; the fault test uses 10 MiB, any size reads the same).
const FILE_LEN: usize = 1024;

/// An entry as DLedger writes it: big-endian magic 1, size, index, term, pos, channel, chain CRC, body CRC (both
/// never set), body length, body.
fn entry(index: i64, term: i64, pos: u64, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(1i32.to_be_bytes());
    b.extend((48 + body.len() as i32).to_be_bytes());
    b.extend(index.to_be_bytes());
    b.extend(term.to_be_bytes());
    b.extend((pos as i64).to_be_bytes());
    b.extend([0u8; 12]);
    b.extend((body.len() as i32).to_be_bytes());
    b.extend(body);
    b
}

/// The blank record that fills a file from `at` (within it) to its end.
fn blank(at: usize) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend((-1i32).to_be_bytes());
    b.extend(((FILE_LEN - at) as i32).to_be_bytes());
    b.resize(FILE_LEN - at, 0);
    b
}

/// Node `node`'s store (`controllerStorePath`) under `root`.
fn store(root: &Path, node: &str) -> PathBuf {
    root.join(node).join("store")
}

/// Writes node `node`'s data file starting at log offset `from`: `records` one after the other, zeros to the end.
fn data_file(root: &Path, node: &str, from: u64, records: &[Vec<u8>]) {
    let dir = store(root, node).join(format!("dledger-{node}/data"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bytes = records.concat();
    assert!(bytes.len() <= FILE_LEN);
    bytes.resize(FILE_LEN, 0);
    std::fs::write(dir.join(format!("{from:020}")), bytes).unwrap();
}

fn checkpoint(root: &Path, node: &str, file: &str, text: &str) {
    let dir = store(root, node).join(format!("dledger-{node}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

/// Entries 0 (term 1) and 1 (term 2) at the start of the first file, and their records' end.
fn two_entries() -> (Vec<Vec<u8>>, u64) {
    let first = entry(0, 1, 0, br#"{"a":1}"#);
    let second = entry(1, 2, first.len() as u64, &[0x00, 0xff, b'z']);
    let end = (first.len() + second.len()) as u64;
    (vec![first, second], end)
}

#[test]
fn a_dledger_store_reads_as_its_entries_and_its_checkpoint() {
    let root = tempfile::tempdir().unwrap();
    data_file(root.path(), "n0", 0, &two_entries().0);
    checkpoint(root.path(), "n0", "checkpoint", "endIndex=1\ncommittedIndex=1\n");
    // An older checkpoint kept by the writer: not the committed index.
    checkpoint(root.path(), "n0", "checkpoint.bak", "endIndex=0\ncommittedIndex=0\n");
    let log = dledger::read("n0", &store(root.path(), "n0")).unwrap();
    assert_eq!((log.node.as_str(), log.committed, log.purged), ("n0", Some(1), None));
    let entries: Vec<(u64, &str)> = log.entries.iter().map(|(i, e)| (*i, e.as_str())).collect();
    assert_eq!(entries, vec![(0, r#"term 1 body {"a":1}"#), (1, r"term 2 body \x00\xffz")]);
}

#[test]
fn a_store_without_entries_or_committed_index_is_an_empty_log() {
    let root = tempfile::tempdir().unwrap();
    checkpoint(root.path(), "n1", "checkpoint", "endIndex=-1\ncommittedIndex=-1\n");
    let log = dledger::read("n1", &store(root.path(), "n1")).unwrap();
    assert_eq!((log.committed, log.purged, log.entries.len()), (None, None, 0));
    // The node's directory is found under another name too (the member id need not be the caller's name).
    let log = dledger::read("other", &store(root.path(), "n1")).unwrap();
    assert_eq!(log.node, "other");
    assert!(dledger::read("n9", &root.path().join("nowhere")).is_err());
}

#[test]
fn a_torn_or_stale_tail_ends_the_log() {
    let (records, end) = two_entries();
    let torn_header = entry(2, 2, end, b"x")[..8].to_vec();
    let tails = [
        ("a header cut after its size", torn_header),
        ("an old leader's entry of a lower term, left after a truncation", entry(2, 1, end, b"old")),
        ("an index that does not follow", entry(3, 2, end, b"x")),
        ("a position that is not its own", entry(2, 2, end + 8, b"x")),
        ("a size that disagrees with the body", {
            let mut e = entry(2, 2, end, b"x");
            e[7] += 1;
            e
        }),
        ("an entry running past the end of its file", entry(2, 2, end, &vec![b'x'; FILE_LEN - end as usize - 40])),
    ];
    for (what, tail) in tails {
        let root = tempfile::tempdir().unwrap();
        let mut file = records.clone();
        let tail = &tail[..tail.len().min(FILE_LEN - end as usize)];
        file.push(tail.to_vec());
        // Nothing after the bad record is read either, even a well-formed entry 2 in its own place.
        let after = entry(2, 2, end + tail.len() as u64, b"after");
        if end as usize + tail.len() + after.len() <= FILE_LEN {
            file.push(after);
        }
        data_file(root.path(), "n0", 0, &file);
        let log = dledger::read("n0", &store(root.path(), "n0")).unwrap();
        assert_eq!(log.entries.keys().copied().collect::<Vec<_>>(), vec![0, 1], "{what}");
    }
}

#[test]
fn a_blank_record_leads_to_the_next_file_and_deleted_files_show_as_purged() {
    let root = tempfile::tempdir().unwrap();
    // The first file (offset 0) was deleted; the second starts with entry 5, the third with entry 7.
    let five = entry(5, 3, FILE_LEN as u64, b"five");
    let six = entry(6, 3, (FILE_LEN + five.len()) as u64, b"six");
    let used = five.len() + six.len();
    data_file(root.path(), "n2", FILE_LEN as u64, &[five, six, blank(used)]);
    data_file(root.path(), "n2", 2 * FILE_LEN as u64, &[entry(7, 4, 2 * FILE_LEN as u64, b"seven")]);
    // Killed between deleting `checkpoint` and renaming the new one: only `checkpoint.tmp` is left.
    checkpoint(root.path(), "n2", "checkpoint.tmp", "committedIndex=7\nendIndex=7\n");
    let log = dledger::read("n2", &store(root.path(), "n2")).unwrap();
    assert_eq!((log.committed, log.purged), (Some(7), Some(4)));
    assert_eq!(log.entries.keys().copied().collect::<Vec<_>>(), vec![5, 6, 7]);
    assert_eq!(log.entries[&7], "term 4 body seven");
    // A gap between the files is a damaged store, not a log.
    std::fs::remove_file(store(root.path(), "n2").join(format!("dledger-n2/data/{:020}", 2 * FILE_LEN))).unwrap();
    data_file(root.path(), "n2", 3 * FILE_LEN as u64, &[]);
    assert!(dledger::read("n2", &store(root.path(), "n2")).is_err());
}

#[test]
fn equal_stores_pass_rule_7_and_a_flipped_body_byte_fails_it() {
    let root = tempfile::tempdir().unwrap();
    let (records, _) = two_entries();
    for node in ["n0", "n1", "n2"] {
        data_file(root.path(), node, 0, &records);
        checkpoint(root.path(), node, "checkpoint", "endIndex=1\ncommittedIndex=1\n");
    }
    let read_all =
        || -> Vec<_> { ["n0", "n1", "n2"].iter().map(|n| dledger::read(n, &store(root.path(), n)).unwrap()).collect() };
    let mut report = Report::default();
    assert_eq!(check_raft_logs(&read_all(), &mut report), 2);
    assert_eq!(report.violations, vec![]);
    // One byte of entry 1's body on n1, nothing else changed.
    let path = store(root.path(), "n1").join(format!("dledger-n1/data/{:020}", 0));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[records[0].len() + 48] ^= 0x01;
    std::fs::write(&path, bytes).unwrap();
    let mut report = Report::default();
    assert_eq!(check_raft_logs(&read_all(), &mut report), 2);
    assert!(
        matches!(report.violations.as_slice(), [Violation::RaftLogsDiffer { index: 1, entries }]
            if entries[1] == ("n1".to_string(), Some(r"term 2 body \x01\xffz".to_string()))),
        "{:?}",
        report.violations
    );
}
