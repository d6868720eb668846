//! The tests that read what the servers log: this binary's one global subscriber captures every line of every
//! server in it (`captured`), so these tests live apart from the others, whose servers would log into it too.

#[path = "../support/mod.rs"]
mod support;

mod limits;
mod refusal_log;

use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// What the servers of this binary logged from the first call on: WARN and above, and INFO and above.
pub struct Captured {
    pub warn: Arc<Mutex<Vec<u8>>>,
    pub info: Arc<Mutex<Vec<u8>>>,
}

/// Installs the binary's one subscriber on the first call.
pub fn captured() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let warn = Arc::new(Mutex::new(Vec::new()));
        let info = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(capture(&warn).with_filter(LevelFilter::WARN))
            .with(capture(&info).with_filter(LevelFilter::INFO));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        Captured { warn, info }
    })
}

/// A plain-text layer writing into `buf`.
fn capture<S>(buf: &Arc<Mutex<Vec<u8>>>) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let sink = buf.clone();
    tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || Sink(sink.clone()))
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Turns: a test that counts every line of a kind in a stretch of the log runs alone (`alone`); the others run side
/// by side (`shared`), but never beside it.
static TURNS: RwLock<()> = RwLock::new(());

pub fn alone() -> RwLockWriteGuard<'static, ()> {
    TURNS.write().unwrap_or_else(|e| e.into_inner())
}

pub fn shared() -> RwLockReadGuard<'static, ()> {
    TURNS.read().unwrap_or_else(|e| e.into_inner())
}
