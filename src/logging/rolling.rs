//! A log file that rolls by size: `namesrv.log` is renamed `namesrv.log.1` (and `.1` → `.2`, …) before a write
//! that would take it past the limit, and the oldest beyond `max_files` is deleted.
//!
//! Written over std rather than taken from a crate: the rolling crates we looked at also do time-based rolling
//! (pulling in a date library we do not need) and either cut a line in two at the limit or panic when the
//! directory cannot be created. Here a write is never split — the formatter hands over one whole event per
//! `write`, so every file holds whole lines — and every failure is an `io::Error`.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The open log file and what it takes to roll it.
#[derive(Debug)]
pub(crate) struct RollingFile {
    path: PathBuf,
    max_bytes: u64,
    max_files: usize,
    file: File,
    len: u64,
    /// A roll failed (say, the directory became read-only): told once on stderr, then appending goes on so that
    /// nothing is lost; rolling is tried again at the next write.
    roll_failed: bool,
}

impl RollingFile {
    /// Opens (appending) or creates `dir/name`, creating `dir` if needed. `max_bytes` 0 means never roll;
    /// `max_files` 0 keeps no rolled file (the log starts afresh at the limit).
    pub(crate) fn open(dir: &Path, name: &str, max_bytes: u64, max_files: usize) -> io::Result<RollingFile> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(name);
        let file = append(&path)?;
        let len = file.metadata()?.len();
        Ok(RollingFile { path, max_bytes, max_files, file, len, roll_failed: false })
    }

    /// The file being written.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `path.N`.
    fn rolled(&self, n: usize) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(format!(".{n}"));
        PathBuf::from(p)
    }

    fn roll(&mut self) -> io::Result<()> {
        if self.max_files == 0 {
            self.file = File::create(&self.path)?;
            self.len = 0;
            return Ok(());
        }
        // Oldest first, so that no rename overwrites a file still to be moved.
        match std::fs::remove_file(self.rolled(self.max_files)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        for n in (1..self.max_files).rev() {
            match std::fs::rename(self.rolled(n), self.rolled(n + 1)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::rename(&self.path, self.rolled(1))?;
        self.file = append(&self.path)?;
        self.len = 0;
        Ok(())
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl Write for RollingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A write larger than the limit on its own still goes into a fresh file whole.
        if self.max_bytes > 0 && self.len > 0 && self.len + buf.len() as u64 > self.max_bytes {
            match self.roll() {
                Ok(()) => self.roll_failed = false,
                Err(e) if !self.roll_failed => {
                    self.roll_failed = true;
                    eprintln!("mqnamesrv: cannot roll {}: {e}; appending to it", self.path.display());
                }
                Err(_) => {}
            }
        }
        self.file.write_all(buf)?;
        self.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn rolls_before_the_limit_keeping_whole_writes_and_max_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RollingFile::open(&dir.path().join("logs"), "namesrv.log", 20, 2).unwrap();
        for line in ["line-00001\n", "line-00002\n", "line-00003\n", "line-00004\n", "line-00005\n"] {
            f.write_all(line.as_bytes()).unwrap();
        }
        let p = f.path().to_path_buf();
        // 11-byte lines, 20-byte limit: one line per file; the oldest (1, 2) are gone.
        assert_eq!(read(&p), "line-00005\n");
        assert_eq!(read(&f.rolled(1)), "line-00004\n");
        assert_eq!(read(&f.rolled(2)), "line-00003\n");
        assert!(!f.rolled(3).exists());
    }

    #[test]
    fn appends_to_an_existing_file_and_counts_its_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("n.log"), "012345678901234\n").unwrap();
        let mut f = RollingFile::open(dir.path(), "n.log", 20, 3).unwrap();
        f.write_all(b"abc\n").unwrap();
        assert_eq!(read(f.path()), "012345678901234\nabc\n", "exactly 20 bytes: no roll yet");
        f.write_all(b"d\n").unwrap();
        assert_eq!(read(f.path()), "d\n");
        assert_eq!(read(&f.rolled(1)), "012345678901234\nabc\n");
    }

    #[test]
    fn an_oversized_write_lands_whole_and_zero_means_never_or_none_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RollingFile::open(dir.path(), "a.log", 4, 1).unwrap();
        f.write_all(b"0123456789\n").unwrap();
        assert_eq!(read(f.path()), "0123456789\n", "an empty file takes any write");
        f.write_all(b"x\n").unwrap();
        assert_eq!(read(&f.rolled(1)), "0123456789\n");

        let mut never = RollingFile::open(dir.path(), "b.log", 0, 1).unwrap();
        for _ in 0..100 {
            never.write_all(b"0123456789\n").unwrap();
        }
        assert_eq!(read(never.path()).len(), 1100);
        assert!(!never.rolled(1).exists());

        let mut none_kept = RollingFile::open(dir.path(), "c.log", 12, 0).unwrap();
        none_kept.write_all(b"first line\n").unwrap();
        none_kept.write_all(b"second\n").unwrap();
        assert_eq!(read(none_kept.path()), "second\n");
        assert!(!none_kept.rolled(1).exists());
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        assert!(RollingFile::open(&blocker.join("logs"), "n.log", 10, 1).is_err());
    }
}
