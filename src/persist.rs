//! Durable files: the KV store (`kvConfig.json`) and the config store (`-c` file). Every save writes a temp file,
//! fsyncs it, keeps the previous content as `<file>.bak`, renames the temp file over the original and fsyncs the
//! directory, so a crash at any moment leaves a complete old or new file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::protocol::body;
use crate::state::KvTable;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// The backup path Java uses: `<path>.bak`.
pub fn bak_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// Atomically replaces `path` with `bytes` (see the module doc).
pub fn save_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    if path.exists() {
        // The backup is a convenience copy for operators; the main file never depends on it.
        let _ = fs::copy(path, bak_path(path));
    }
    // Unique per save: two saves of one file (a periodic one and the last one at shutdown) never share a temp file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = with_suffix(path, &format!(".tmp.{}.{n}", std::process::id()));
    {
        let mut f = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Why the KV file could not be loaded at start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read KV config file {path}: {source} (previous version, if any: {bak})")]
    Read { path: PathBuf, bak: PathBuf, source: io::Error },
    #[error("KV config file {path} is not valid: {reason} (previous version, if any: {bak})")]
    Invalid { path: PathBuf, bak: PathBuf, reason: String },
}

/// Loads `kvConfig.json`. A missing file is an empty table (like Java, whose `File.exists()` is also false when a
/// parent is a regular file: such a path cannot hold a file, so it starts empty and the first write reports the
/// error); an unreadable or invalid one is an error that names the file and its `.bak`.
pub fn load_kv(path: &Path) -> Result<KvTable, LoadError> {
    let bak = bak_path(path);
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
            return Ok(KvTable::default())
        }
        Err(source) => return Err(LoadError::Read { path: path.into(), bak, source }),
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(KvTable::default());
    }
    body::decode_kv_config_file(&bytes).map(KvTable::from_map).map_err(|e| LoadError::Invalid {
        path: path.into(),
        bak,
        reason: e.to_string(),
    })
}

/// Saves the KV table in Java's format.
pub fn save_kv(path: &Path, kv: &KvTable) -> io::Result<()> {
    let mut out = Vec::with_capacity(256);
    body::encode_kv_config_file(&kv.to_map(), &mut out);
    save_atomic(path, &out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_keeps_previous_content_as_bak() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/kv.json");
        save_atomic(&path, b"one").unwrap();
        assert!(!bak_path(&path).exists());
        save_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read(bak_path(&path)).unwrap(), b"one");
        assert!(!with_suffix(&path, ".tmp").exists());
    }

    #[test]
    fn path_under_a_regular_file_loads_empty_but_cannot_be_saved() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("blocker");
        fs::write(&blocker, b"not a directory").unwrap();
        let path = blocker.join("kvConfig.json");
        assert!(load_kv(&path).unwrap().is_empty());
        assert!(save_kv(&path, &KvTable::default()).is_err());
    }

    #[test]
    fn invalid_or_unreadable_file_names_the_file_and_its_bak() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        fs::write(&path, b"{not json").unwrap();
        let msg = load_kv(&path).unwrap_err().to_string();
        assert!(msg.contains(&path.display().to_string()) && msg.contains("kvConfig.json.bak"), "{msg}");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let msg = load_kv(&path).unwrap_err().to_string();
        assert!(msg.contains("cannot read") && msg.contains("kvConfig.json.bak"), "{msg}");
        fs::remove_dir(&path).unwrap();
        fs::write(&path, b"  \n").unwrap();
        assert!(load_kv(&path).unwrap().is_empty());
    }
}
