//! A connection's byte stream with a write deadline: a write or flush that makes no progress for `timeout` fails
//! with `TimedOut`, and hyper then drops the connection. A client that stops reading (a pipeliner that never reads
//! its replies, a stalled event-stream consumer) so costs one task's buffers for at most that long, and never holds
//! up another connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub(super) struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Armed while a write waits for room; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub(super) fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline { inner, timeout, stalled: None }
    }

    /// A pending write: start the clock if it is not running, and fail once it has run out.
    fn check_stall(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let timeout = self.timeout;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + timeout)));
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the HTTP client did not read its reply in time")))
    }

    fn progress<T>(&mut self, p: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match p {
            Poll::Pending => match self.check_stall(cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Pending,
            },
            done => {
                self.stalled = None;
                done
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.progress(p, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.progress(p, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_flush(cx);
        self.progress(p, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.progress(p, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[test]
    fn a_write_nobody_reads_fails_after_the_timeout_and_progress_resets_the_clock() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            // A 64 KiB pipe: the writer fills it, then waits for a reader that never comes.
            let (a, mut b) = tokio::io::duplex(64 * 1024);
            let mut w = WriteDeadline::new(a, Duration::from_millis(200));
            let chunk = vec![7u8; 16 * 1024];
            for _ in 0..4 {
                w.write_all(&chunk).await.expect("room in the pipe");
            }
            let started = std::time::Instant::now();
            let e = w.write_all(&chunk).await.expect_err("nobody reads");
            assert_eq!(e.kind(), io::ErrorKind::TimedOut);
            assert!(started.elapsed() >= Duration::from_millis(200), "not before the timeout");
            // Reading makes room: the next write goes through with a fresh clock.
            let mut sink = vec![0u8; 64 * 1024];
            tokio::io::AsyncReadExt::read_exact(&mut b, &mut sink).await.unwrap();
            w.write_all(&chunk).await.expect("room again");
        });
    }
}
