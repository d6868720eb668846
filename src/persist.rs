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
pub(crate) fn bak_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// Atomically replaces `path` with `bytes` (see the module doc).
pub(crate) fn save_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    save_with(path, |f| {
        f.write_all(bytes)?;
        f.sync_all()
    })
}

/// `save_atomic` with the writing of the temp file given (tests make it fail). Whatever step fails (writing,
/// fsync, rename), the temp file is removed: a failed save leaves the directory as it found it, but for `.bak`.
fn save_with(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    save_as(path, Access::Shared, write)
}

/// Who may read a saved file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// As the umask says, with a `.bak` of the previous version.
    Shared,
    /// The owner alone (0600) from the moment the file exists, and no `.bak`: for files that hold passwords.
    Owner,
}

/// `save_atomic` for a file only its owner may read (the ACL 2.0 users, with their passwords): the temp file is
/// created 0600, so there is no moment in which another user could open it.
pub(crate) fn save_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    save_as(path, Access::Owner, |f| {
        f.write_all(bytes)?;
        f.sync_all()
    })
}

fn save_as(path: &Path, access: Access, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    if access == Access::Shared && path.exists() {
        // The backup is a convenience copy for operators; the main file never depends on it.
        let _ = fs::copy(path, bak_path(path));
    }
    // Unique per save: two saves of one file (a periodic one and the last one at shutdown) never share a temp file.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = with_suffix(path, &format!("{TMP_INFIX}{}.{n}", std::process::id()));
    // `create_new`: the name is ours alone, so removing it on failure never removes anything else.
    let mode = if access == Access::Owner { 0o600 } else { 0o666 };
    let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
    let written = write(&mut f);
    drop(f);
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, path)) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// What comes between a file's name and `<pid>.<n>` in the name of its temp file.
const TMP_INFIX: &str = ".tmp.";

/// Removes the temp files of `path` that an earlier process left behind (it stopped between writing and renaming):
/// only regular files named exactly `<file name>.tmp.<digits>.<digits>` in the file's own directory, nothing else.
/// Called at start, before this process saves anything. Returns how many were removed.
pub(crate) fn remove_stale_temps(path: &Path) -> usize {
    let (Some(name), dir) = (path.file_name(), path.parent().filter(|p| !p.as_os_str().is_empty())) else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(dir.unwrap_or(Path::new("."))) else {
        return 0;
    };
    let mut prefix = name.as_encoded_bytes().to_vec();
    prefix.extend_from_slice(TMP_INFIX.as_bytes());
    let mut removed = 0;
    for entry in entries.flatten() {
        let is_temp = entry.file_name().as_encoded_bytes().strip_prefix(prefix.as_slice()).is_some_and(is_pid_and_n);
        // `DirEntry::file_type` does not follow symbolic links: a link is left alone, and so is a directory.
        if is_temp && entry.file_type().is_ok_and(|t| t.is_file()) && fs::remove_file(entry.path()).is_ok() {
            tracing::info!(file = %entry.path().display(), "removed the temp file of an unfinished save");
            removed += 1;
        }
    }
    removed
}

/// `<digits>.<digits>`, as `save_with` names its temp files.
fn is_pid_and_n(rest: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let mut parts = rest.splitn(2, |b| *b == b'.');
    matches!((parts.next(), parts.next()), (Some(pid), Some(n)) if digits(pid) && digits(n))
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
/// error); an unreadable or invalid one is an error that names the file and its `.bak`. Temp files of a save that
/// an earlier process did not finish are removed first (`remove_stale_temps`).
pub fn load_kv(path: &Path) -> Result<KvTable, LoadError> {
    remove_stale_temps(path);
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
pub(crate) fn save_kv(path: &Path, kv: &KvTable) -> io::Result<()> {
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

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_failed_write_or_fsync_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        save_atomic(&path, b"one").unwrap();
        let e = save_with(&path, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(names(dir.path()), ["kvConfig.json", "kvConfig.json.bak"]);
        assert_eq!(fs::read(&path).unwrap(), b"one", "the file is untouched");
    }

    /// Root ignores permissions, so the rename is made to fail by a non-empty directory where the file should be.
    #[test]
    fn a_failed_rename_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv.properties");
        fs::create_dir_all(path.join("inside")).unwrap();
        assert!(save_atomic(&path, b"k=v\n").is_err());
        assert_eq!(names(dir.path()), ["namesrv.properties"]);
    }

    /// Only `<file>.tmp.<digits>.<digits>` regular files of that file go; look-alikes stay.
    #[test]
    fn stale_temp_files_are_removed_at_start_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kvConfig.json");
        let stale = ["kvConfig.json.tmp.123.0", "kvConfig.json.tmp.1.42"];
        let kept = [
            "kvConfig.json",
            "kvConfig.json.bak",
            "kvConfig.json.tmp",
            "kvConfig.json.tmp.",
            "kvConfig.json.tmp.12",
            "kvConfig.json.tmp.12.",
            "kvConfig.json.tmp.x.1",
            "kvConfig.json.tmp.1.2.3",
            "kvConfig.json.tmp.1.2~",
            "xkvConfig.json.tmp.1.2",
            "other.json.tmp.1.2",
            "namesrv.properties.tmp.1.2",
        ];
        for name in stale.iter().chain(&kept) {
            fs::write(dir.path().join(name), b"{}").unwrap();
        }
        fs::create_dir(dir.path().join("kvConfig.json.tmp.7.7")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("kvConfig.json.bak"), dir.path().join("kvConfig.json.tmp.8.8"))
            .unwrap();
        load_kv(&path).unwrap();
        let mut expected: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        expected.extend(["kvConfig.json.tmp.7.7".into(), "kvConfig.json.tmp.8.8".into()]);
        expected.sort();
        assert_eq!(names(dir.path()), expected);
        assert_eq!(remove_stale_temps(&dir.path().join("namesrv.properties")), 1);
        assert!(!dir.path().join("namesrv.properties.tmp.1.2").exists());
        // A missing directory is nothing to do.
        assert_eq!(remove_stale_temps(&dir.path().join("missing/kvConfig.json")), 0);
    }

    #[test]
    fn a_private_file_is_the_owners_alone_from_the_start() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("authUsers.json");
        save_private(&path, b"[1]").unwrap();
        save_private(&path, b"[2]").unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(fs::read(&path).unwrap(), b"[2]");
        assert_eq!(names(dir.path()), ["authUsers.json"], "no .bak of a file with passwords");
    }
}
