//! The Raft log on disk (the controller's, and the replicated KV group's: `RaftLog<C>`), and openraft's
//! `RaftLogStorage` over it.
//!
//! Two files in the store's directory:
//! - `raft-log`: the entries, one record each — `[length: u32 LE][crc32 of length][crc32 of payload][entry as
//!   JSON]` — appended and `sync_data`ed before openraft hears they are durable. The file holds exactly the entries
//!   the store holds: `truncate` cuts it (`set_len` + `sync_all`), `purge` rewrites it without the purged prefix.
//! - `raft-meta.json`: the vote, the committed id and the purged id, replaced whole and atomically
//!   ([`crate::persist::save_atomic`]: temp file, fsync, rename, fsync of the directory) on every change. Raft needs
//!   the vote durable before it is answered; the committed id is optional to openraft, kept so a restarted node
//!   re-applies what it had applied; the purged id is written before the log is cut, so a crash in between only leaves
//!   entries that the next open skips.
//!
//! A crash in the middle of an append leaves a torn last record: it is dropped (and cut off) at open, as it was
//! never acknowledged. Damage anywhere else is a `LogStoreError`, never a panic and never a silent loss.
//!
//! Every entry is also held in memory: the controller's log is small (a few events per broker action, purged
//! after each snapshot), and replication reads it often. The I/O is synchronous: the controller runs openraft on
//! its own runtime and threads, where a short fsync blocks nothing of the name server.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{AnyError, OptionalSend, RaftLogReader, RaftTypeConfig, StorageIOError, Vote};
use serde::{Deserialize, Serialize};

use super::{LogId, NodeId, StorageError, TypeConfig};

/// The type configurations a `RaftLog` can hold: node ids are `u64` and entries openraft's own (the controller's
/// group and the replicated KV group, decision 0033).
pub(crate) trait LogConfig: RaftTypeConfig<NodeId = NodeId, Entry = openraft::Entry<Self>, D: Clone> {}
impl<C: RaftTypeConfig<NodeId = NodeId, Entry = openraft::Entry<C>, D: Clone>> LogConfig for C {}
use crate::persist::save_atomic;

pub(crate) const LOG_FILE: &str = "raft-log";
pub(crate) const META_FILE: &str = "raft-meta.json";

/// In front of every record: the payload's length, a checksum of that length, and a checksum of the payload.
const HEADER_LEN: usize = 12;

/// Why the log could not be opened or written. Openraft sees it wrapped in a `StorageError`.
#[derive(Debug, thiserror::Error)]
pub enum LogStoreError {
    #[error("Raft log {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A bad record that is not the torn tail of an interrupted append.
    #[error("Raft log {path} is damaged at byte {offset}: {reason}")]
    Corrupt { path: PathBuf, offset: u64, reason: String },
    #[error("Raft log meta {path} is not valid: {reason}")]
    BadMeta { path: PathBuf, reason: String },
    /// Openraft asked for something Raft never does (an append that does not extend the log).
    #[error("Raft log {path}: {reason}")]
    Misuse { path: PathBuf, reason: String },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> LogStoreError + '_ {
    move |source| LogStoreError::Io { path: path.to_owned(), source }
}

/// `raft-meta.json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Meta {
    vote: Option<Vote<NodeId>>,
    committed: Option<LogId>,
    purged: Option<LogId>,
}

/// An entry and where its record starts in `raft-log` (what `truncate` cuts at).
struct Stored<C: LogConfig> {
    entry: openraft::Entry<C>,
    offset: u64,
}

struct Log<C: LogConfig> {
    log_path: PathBuf,
    meta_path: PathBuf,
    meta: Meta,
    /// Index → entry; exactly the records of `raft-log`, in order.
    entries: BTreeMap<u64, Stored<C>>,
    /// Opened for appending; its length is `file_len`.
    file: File,
    file_len: u64,
    /// Deliberately broken build (`fault-ack-before-fsync`): records acknowledged but not yet written, and how many.
    #[cfg(feature = "fault-ack-before-fsync")]
    pending: (Vec<u8>, usize),
}

/// The log store openraft writes through. Cloning shares the log (openraft's `LogReader` is one of these).
pub(crate) struct RaftLog<C: LogConfig> {
    log: Arc<Mutex<Log<C>>>,
}

/// The controller's log.
pub(crate) type LogStore = RaftLog<TypeConfig>;

impl<C: LogConfig> Clone for RaftLog<C> {
    fn clone(&self) -> Self {
        RaftLog { log: Arc::clone(&self.log) }
    }
}

impl<C: LogConfig> RaftLog<C> {
    /// Opens (or creates) the log in `dir`: reads the meta file and every record, drops a torn last record, and
    /// drops the entries a purge had already covered.
    pub(crate) fn open(dir: &Path) -> Result<RaftLog<C>, LogStoreError> {
        fs::create_dir_all(dir).map_err(io_error(dir))?;
        let log_path = dir.join(LOG_FILE);
        let meta_path = dir.join(META_FILE);
        let meta = read_meta(&meta_path)?;
        let bytes = match fs::read(&log_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_error(&log_path)(e)),
        };
        let (records, good_len) = decode_records(&log_path, &bytes)?;
        let created = bytes.is_empty() && !log_path.exists();
        let file = OpenOptions::new().create(true).append(true).open(&log_path).map_err(io_error(&log_path))?;
        if created {
            // A new file's name is durable only once its directory is synced; its first append syncs the data.
            File::open(dir).and_then(|d| d.sync_all()).map_err(io_error(dir))?;
        }
        if good_len < bytes.len() as u64 {
            // The torn tail of an append that was never acknowledged: cut it so the next append follows the last
            // whole record.
            file.set_len(good_len).map_err(io_error(&log_path))?;
            file.sync_all().map_err(io_error(&log_path))?;
        }
        let mut log = Log {
            log_path,
            meta_path,
            meta,
            entries: BTreeMap::new(),
            file,
            file_len: good_len,
            #[cfg(feature = "fault-ack-before-fsync")]
            pending: (Vec::new(), 0),
        };
        let purged = log.meta.purged.map(|id| id.index);
        let mut saw_purged = false;
        for (entry, offset) in records {
            if purged.is_some_and(|p| entry.log_id.index <= p) {
                saw_purged = true;
                continue;
            }
            log.entries.insert(entry.log_id.index, Stored { entry, offset });
        }
        if saw_purged {
            // The crash came between writing the purged id and rewriting the log: finish the purge.
            log.rewrite()?;
        }
        Ok(RaftLog { log: Arc::new(Mutex::new(log)) })
    }

    fn lock(&self) -> MutexGuard<'_, Log<C>> {
        // A panic elsewhere cannot leave `Log` half-changed in a way this store relies on: every change to the
        // map follows the file operation that makes it true.
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The entries in `range`, in order.
    pub(crate) fn entries(&self, range: impl RangeBounds<u64>) -> Vec<openraft::Entry<C>> {
        let log = self.lock();
        let range = (range.start_bound().cloned(), range.end_bound().cloned());
        log.entries.range(range).map(|(_, stored)| stored.entry.clone()).collect()
    }

    pub(crate) fn vote(&self) -> Option<Vote<NodeId>> {
        self.lock().meta.vote
    }

    pub(crate) fn committed(&self) -> Option<LogId> {
        self.lock().meta.committed
    }
}

fn read_meta(path: &Path) -> Result<Meta, LogStoreError> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| LogStoreError::BadMeta { path: path.to_owned(), reason: e.to_string() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Meta::default()),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// One record's bytes.
fn encode_record<C: LogConfig>(entry: &openraft::Entry<C>, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let payload = serde_json::to_vec(entry)?;
    let len = (payload.len() as u32).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc32fast::hash(&len).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The whole records of `bytes` with their offsets, and the length they cover.
///
/// An append cut short by a crash leaves a record that runs past the end of the file, or a last record whose
/// payload checksum fails, possibly followed by zeros (what a file system may leave after a crash): that torn tail
/// ends the log. Anything else bad is damage and an error. The length has its own checksum so that a damaged length
/// in the middle of the file is seen as damage, not taken for a torn tail that would swallow the records after it.
#[allow(clippy::type_complexity)]
fn decode_records<C: LogConfig>(
    path: &Path,
    bytes: &[u8],
) -> Result<(Vec<(openraft::Entry<C>, u64)>, u64), LogStoreError> {
    let mut records: Vec<(openraft::Entry<C>, u64)> = Vec::new();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let corrupt = |reason: String| LogStoreError::Corrupt { path: path.to_owned(), offset: pos as u64, reason };
        let rest = &bytes[pos..];
        let zeros_from = |at: usize| rest.get(at..).is_none_or(|tail| tail.iter().all(|b| *b == 0));
        if rest.len() < HEADER_LEN || zeros_from(0) {
            break;
        }
        let len = u32_at(rest, 0);
        if crc32fast::hash(&len.to_le_bytes()) != u32_at(rest, 4) {
            return Err(corrupt("record length checksum mismatch".to_owned()));
        }
        let end = HEADER_LEN + len as usize;
        let Some(payload) = rest.get(HEADER_LEN..end) else {
            break; // the record runs past the end of the file
        };
        if crc32fast::hash(payload) != u32_at(rest, 8) {
            if zeros_from(end) {
                break;
            }
            return Err(corrupt("checksum mismatch".to_owned()));
        }
        let entry: openraft::Entry<C> =
            serde_json::from_slice(payload).map_err(|e| corrupt(format!("entry does not decode: {e}")))?;
        if let Some((prev, _)) = records.last() {
            if entry.log_id.index <= prev.log_id.index {
                let reason = format!("entry {} follows entry {}", entry.log_id.index, prev.log_id.index);
                return Err(corrupt(reason));
            }
        }
        records.push((entry, pos as u64));
        pos += end;
    }
    Ok((records, pos as u64))
}

impl<C: LogConfig> Log<C> {
    fn save_meta(&self) -> Result<(), LogStoreError> {
        let bytes = serde_json::to_vec_pretty(&self.meta).expect("Meta is plain data and always serializes");
        save_atomic(&self.meta_path, &bytes).map_err(io_error(&self.meta_path))
    }

    fn append(&mut self, entries: impl IntoIterator<Item = openraft::Entry<C>>) -> Result<(), LogStoreError> {
        let mut buf = Vec::new();
        let mut added = Vec::new();
        let mut last = self.entries.last_key_value().map(|(index, _)| *index);
        for entry in entries {
            let index = entry.log_id.index;
            if last.is_some_and(|last| index <= last) {
                let reason = format!("append of entry {index} after entry {last:?} without a truncate");
                return Err(LogStoreError::Misuse { path: self.log_path.clone(), reason });
            }
            last = Some(index);
            let offset = self.file_len + buf.len() as u64;
            encode_record(&entry, &mut buf).map_err(|e| LogStoreError::Misuse {
                path: self.log_path.clone(),
                reason: format!("entry {index} does not serialize: {e}"),
            })?;
            added.push(Stored { entry, offset });
        }
        if buf.is_empty() {
            return Ok(());
        }
        #[cfg(feature = "fault-ack-before-fsync")]
        {
            // Deliberately broken build (docs/reliability.md, "Broken builds the checker caught"): the records are
            // acknowledged to openraft while they are still in this process's memory, and written and synced only
            // once 8 have gathered (or before a truncate or purge). A kill -9 loses them as a power cut loses a page
            // cache never synced: a node forgets entries it told the leader were durable.
            self.pending.0.extend_from_slice(&buf);
            self.pending.1 += added.len();
            self.file_len += buf.len() as u64;
            for stored in added {
                self.entries.insert(stored.entry.log_id.index, stored);
            }
            if self.pending.1 >= 8 {
                self.write_pending()?;
            }
            return Ok(());
        }
        #[allow(unreachable_code)]
        let written = self.file.write_all(&buf).and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Leave the file as the map says it is; if even that fails the next open drops the torn tail.
            let _ = self.file.set_len(self.file_len);
            return Err(io_error(&self.log_path)(e));
        }
        self.file_len += buf.len() as u64;
        for stored in added {
            self.entries.insert(stored.entry.log_id.index, stored);
        }
        Ok(())
    }

    /// `fault-ack-before-fsync`: writes and syncs the records acknowledged before.
    #[cfg(feature = "fault-ack-before-fsync")]
    fn write_pending(&mut self) -> Result<(), LogStoreError> {
        let (buf, _) = std::mem::take(&mut self.pending);
        self.file.write_all(&buf).and_then(|()| self.file.sync_data()).map_err(io_error(&self.log_path))
    }

    /// Drops the entries from `index` on.
    fn truncate(&mut self, index: u64) -> Result<(), LogStoreError> {
        #[cfg(feature = "fault-ack-before-fsync")]
        self.write_pending()?;
        let Some(offset) = self.entries.range(index..).next().map(|(_, stored)| stored.offset) else {
            return Ok(());
        };
        self.file.set_len(offset).and_then(|()| self.file.sync_all()).map_err(io_error(&self.log_path))?;
        self.file_len = offset;
        self.entries.split_off(&index);
        Ok(())
    }

    /// Drops the entries up to `log_id`, inclusive: the purged id first, then the file.
    fn purge(&mut self, log_id: LogId) -> Result<(), LogStoreError> {
        #[cfg(feature = "fault-ack-before-fsync")]
        self.write_pending()?;
        if self.meta.purged.is_some_and(|purged| purged >= log_id) {
            return Ok(());
        }
        self.meta.purged = Some(log_id);
        self.save_meta()?;
        self.entries = self.entries.split_off(&(log_id.index + 1));
        self.rewrite()
    }

    /// Replaces `raft-log` with the records of the entries held, read back from the file as they are (no
    /// re-encoding), and updates their offsets.
    fn rewrite(&mut self) -> Result<(), LogStoreError> {
        let base = self.entries.first_key_value().map_or(self.file_len, |(_, stored)| stored.offset);
        let bytes = fs::read(&self.log_path).map_err(io_error(&self.log_path))?;
        let kept = bytes.get(base as usize..self.file_len as usize).ok_or_else(|| LogStoreError::Corrupt {
            path: self.log_path.clone(),
            offset: base,
            reason: format!("the file is shorter than the {} bytes written", self.file_len),
        })?;
        save_atomic(&self.log_path, kept).map_err(io_error(&self.log_path))?;
        self.file = OpenOptions::new().append(true).open(&self.log_path).map_err(io_error(&self.log_path))?;
        self.file_len = kept.len() as u64;
        for stored in self.entries.values_mut() {
            stored.offset -= base;
        }
        Ok(())
    }

    fn log_state(&self) -> LogState<C> {
        let last = self.entries.last_key_value().map(|(_, stored)| stored.entry.log_id);
        LogState { last_purged_log_id: self.meta.purged, last_log_id: last.or(self.meta.purged) }
    }
}

fn write_error(e: LogStoreError) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

fn vote_error(e: LogStoreError) -> StorageError {
    StorageIOError::write_vote(AnyError::new(&e)).into()
}

impl<C: LogConfig> RaftLogReader<C> for RaftLog<C> {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<openraft::Entry<C>>, StorageError> {
        Ok(self.entries(range))
    }
}

impl<C: LogConfig> RaftLogStorage<C> for RaftLog<C> {
    type LogReader = RaftLog<C>;

    async fn get_log_state(&mut self) -> Result<LogState<C>, StorageError> {
        Ok(self.lock().log_state())
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let mut log = self.lock();
        let before = log.meta.vote.replace(*vote);
        log.save_meta().inspect_err(|_| log.meta.vote = before).map_err(vote_error)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        Ok(self.vote())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        // `fault-ack-before-fsync`: a committed id past the records written would stop the node at its next start
        // (openraft re-applies up to it); the broken build does not keep it, to lose entries, not to crash.
        #[cfg(feature = "fault-ack-before-fsync")]
        {
            let _ = committed;
            return Ok(());
        }
        #[allow(unreachable_code)]
        let mut log = self.lock();
        if log.meta.committed == committed {
            return Ok(());
        }
        let before = std::mem::replace(&mut log.meta.committed, committed);
        log.save_meta().inspect_err(|_| log.meta.committed = before).map_err(write_error)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.committed())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<C>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = openraft::Entry<C>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        // Written and synced before returning, so the entries are durable when openraft hears of them.
        self.lock().append(entries).map_err(write_error)?;
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock().truncate(log_id.index).map_err(write_error)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.lock().purge(log_id).map_err(write_error)
    }
}

/// An open error as openraft's, for callers that start openraft from it.
impl From<LogStoreError> for StorageError {
    fn from(e: LogStoreError) -> Self {
        StorageIOError::read_logs(AnyError::new(&e)).into()
    }
}
