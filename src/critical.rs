//! Threads the service cannot live without: those without which it would go on answering clients wrongly (the
//! reactors, the writer, the decoder, the controller, and the two that keep the accounts current, the ACL-reload and
//! ACL 2.0 users threads; docs/architecture.md, "Which threads are critical"). A panic that escapes one ends the
//! process with `EXIT_THREAD_PANICKED` instead of leaving a server that half works, so the service manager restarts
//! it (docs/security.md).

use std::thread::JoinHandle;

/// The exit code when a critical thread panicked (EX_SOFTWARE).
pub(crate) const EXIT_THREAD_PANICKED: i32 = 70;

pub(crate) fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    let thread = name.clone();
    std::thread::Builder::new().name(name).spawn(move || {
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
            tracing::error!(thread, "thread panicked; exiting so that the service manager restarts the server");
            std::process::exit(EXIT_THREAD_PANICKED);
        }
    })
}
