//! Where the logs go and how they look: stderr (default) or `logDir/namesrv.log` rolled by size, as text or one
//! JSON object per line; the audit trail (target `audit`) with them or in `auditLogPath`. `RUST_LOG` filters
//! (default `info`). Set once, at start (`init`).

pub(crate) mod rolling;

use std::path::PathBuf;

use tracing::Subscriber;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::config::Config;
use rolling::RollingFile;

/// The file `logDir` holds (Java's name for the name server's log).
pub(crate) const LOG_FILE: &str = "namesrv.log";

/// `logFormat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// tracing's human-readable lines (the default).
    Text,
    /// One JSON object per line (timestamp, level, target, fields), for log shippers.
    Json,
}

impl LogFormat {
    pub(crate) fn parse(s: &str) -> Option<LogFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// Why logging could not be set up; start-up stops with it (a server that cannot log where it was told to is
/// one an operator cannot watch).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("logFormat must be text or json, not {0:?}")]
    Format(String),
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
}

/// The logging settings of a `Config`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LogSettings {
    pub format: LogFormat,
    /// `None`: stderr.
    pub dir: Option<PathBuf>,
    pub max_file_size: u64,
    pub max_files: usize,
    /// `None`: the audit trail goes with the other logs.
    pub audit_path: Option<PathBuf>,
}

impl LogSettings {
    pub(crate) fn from_config(config: &Config) -> Result<LogSettings, LogError> {
        let format = LogFormat::parse(&config.log_format).ok_or_else(|| LogError::Format(config.log_format.clone()))?;
        let path = |s: &str| Some(s.trim()).filter(|s| !s.is_empty()).map(PathBuf::from);
        Ok(LogSettings {
            format,
            dir: path(&config.log_dir),
            max_file_size: config.log_max_file_size as u64,
            max_files: config.log_max_files,
            audit_path: path(&config.audit_log_path),
        })
    }
}

/// Installs the global subscriber. Call once, before the server starts.
pub fn init(config: &Config) -> Result<(), LogError> {
    use tracing_subscriber::filter::{filter_fn, EnvFilter};
    use tracing_subscriber::prelude::*;

    let settings = LogSettings::from_config(config)?;
    let env = || EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let (main, ansi): (BoxMakeWriter, bool) = match &settings.dir {
        None => (BoxMakeWriter::new(std::io::stderr), std::io::IsTerminal::is_terminal(&std::io::stderr())),
        Some(dir) => {
            let file = RollingFile::open(dir, LOG_FILE, settings.max_file_size, settings.max_files)
                .map_err(|source| LogError::Open { path: dir.join(LOG_FILE), source })?;
            (BoxMakeWriter::new(std::sync::Mutex::new(file)), false)
        }
    };
    let audit_file = match &settings.audit_path {
        None => None,
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|source| LogError::Open { path: p.clone(), source })?,
        ),
    };
    let separate_audit = audit_file.is_some();
    let main = layer(main, settings.format, ansi)
        .with_filter(env())
        .with_filter(filter_fn(move |m| !(separate_audit && m.target() == crate::audit::TARGET)));
    let audit = audit_file.map(|f| {
        layer(BoxMakeWriter::new(std::sync::Mutex::new(f)), settings.format, false)
            .with_filter(env())
            .with_filter(filter_fn(|m| m.target() == crate::audit::TARGET))
    });
    tracing_subscriber::registry().with(main).with(audit).init();
    Ok(())
}

fn layer<S>(writer: BoxMakeWriter, format: LogFormat, ansi: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    match format {
        LogFormat::Text => tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi).boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer().json().with_writer(writer).boxed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_config() {
        let c = Config::default();
        let s = LogSettings::from_config(&c).unwrap();
        assert_eq!((s.format, s.dir, s.audit_path), (LogFormat::Text, None, None));
        assert_eq!((s.max_file_size, s.max_files), (100 * 1024 * 1024, 10));

        let c = Config { log_format: " JSON ".into(), log_dir: "/var/log/rocketmq".into(), ..Config::default() };
        let s = LogSettings::from_config(&c).unwrap();
        assert_eq!((s.format, s.dir), (LogFormat::Json, Some(PathBuf::from("/var/log/rocketmq"))));

        let c = Config { log_format: "xml".into(), ..Config::default() };
        let e = LogSettings::from_config(&c).unwrap_err();
        assert!(matches!(&e, LogError::Format(f) if f == "xml"), "{e}");
    }
}
