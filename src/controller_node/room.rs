//! Big frames on the controller port are read under one byte budget (`controllerFrameBytes`), as big frames on the
//! name-server port are under `decoderQueueBytes` (docs/decisions/0027). Without it every connection could buffer up
//! to `maxFrameLength` before a byte of its frame was checked: `frame::decode` reserves the declared length as soon
//! as the prefix is in, so twenty connections that each announce a 15 MB frame and send half of it held 274 MB.
//!
//! Every frame not whole in one read takes its declared length from the budget before it is read further (decision
//! 0032: a limit only on frames over 256 KiB let 3,000 connections hold 255 KiB each). Without
//! room its connection stops reading (TCP holds the sender back) until room is given back, for at most
//! `ROOM_WAIT`, and is then closed. The room is given back when the frame has been handled, or when its connection
//! closes in the middle of it (`Room` gives it back when dropped).

use std::pin::pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::limit::ByteBudget;
use crate::metrics::ControllerMetrics;

/// A connection's read buffer is kept up to this capacity between frames; a larger one (a frame that took room
/// was read into it) is let go with the room (decision 0032).
pub(crate) const SMALL_BUFFER: usize = 64 * 1024;

/// How long a connection waits for room before it is closed.
pub(crate) const ROOM_WAIT: Duration = Duration::from_secs(10);

/// The budget of the controller port's big frames, shared by its connections.
pub(crate) struct FrameRoom {
    budget: ByteBudget,
    /// Woken when room is given back.
    freed: Notify,
    metrics: Arc<ControllerMetrics>,
}

/// Room taken for one frame; given back when dropped.
pub(crate) struct Room {
    room: Arc<FrameRoom>,
    bytes: usize,
}

impl Drop for Room {
    fn drop(&mut self) {
        self.room.budget.release(self.bytes);
        self.room.metrics.frame_room_bytes.fetch_sub(self.bytes as u64, Relaxed);
        self.room.freed.notify_waiters();
    }
}

impl FrameRoom {
    /// `cap` bytes (0 = unlimited, as the other byte budgets).
    pub(crate) fn new(cap: usize, metrics: Arc<ControllerMetrics>) -> Arc<FrameRoom> {
        Arc::new(FrameRoom { budget: ByteBudget::new(cap), freed: Notify::new(), metrics })
    }

    /// Takes `bytes` for a frame, waiting up to `wait` for room; `None` if there was none in time.
    pub(crate) async fn admit(self: &Arc<Self>, bytes: usize, wait: Duration) -> Option<Room> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut waiting = None;
        let room = loop {
            // Listening before looking, so that room given back in between is not missed.
            let mut freed = pin!(self.freed.notified());
            freed.as_mut().enable();
            if self.budget.try_take(bytes) {
                self.metrics.frame_room_bytes.fetch_add(bytes as u64, Relaxed);
                break Some(Room { room: Arc::clone(self), bytes });
            }
            waiting.get_or_insert_with(|| Waiting::new(&self.metrics));
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                break None;
            }
        };
        drop(waiting);
        room
    }
}

/// A connection counted in `namesrv_controller_frames_waiting` while it waits.
struct Waiting<'a>(&'a ControllerMetrics);

impl<'a> Waiting<'a> {
    fn new(metrics: &'a ControllerMetrics) -> Waiting<'a> {
        metrics.frames_waiting.fetch_add(1, Relaxed);
        Waiting(metrics)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.frames_waiting.fetch_sub(1, Relaxed);
    }
}

/// The capacity of one connection's read buffer, kept in `namesrv_controller_read_buffer_bytes` (the sum over the
/// connections): what the port holds for frames not whole yet, whatever the budget says.
pub(crate) struct BufferGauge<'a> {
    metrics: &'a ControllerMetrics,
    shown: usize,
}

impl<'a> BufferGauge<'a> {
    pub(crate) fn new(metrics: &'a ControllerMetrics) -> BufferGauge<'a> {
        BufferGauge { metrics, shown: 0 }
    }

    pub(crate) fn set(&mut self, capacity: usize) {
        if capacity != self.shown {
            self.metrics.read_buffer_bytes.fetch_add(capacity as u64, Relaxed);
            self.metrics.read_buffer_bytes.fetch_sub(self.shown as u64, Relaxed);
            self.shown = capacity;
        }
    }
}

impl Drop for BufferGauge<'_> {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn room_is_taken_waited_for_and_given_back() {
        let metrics = Arc::new(ControllerMetrics::default());
        let room = FrameRoom::new(1000, Arc::clone(&metrics));
        let first = room.admit(600, ROOM_WAIT).await.expect("room in an empty budget");
        assert_eq!(metrics.frame_room_bytes.load(Relaxed), 600);
        // No room: a short wait ends without it.
        assert!(room.admit(600, Duration::from_millis(20)).await.is_none());
        assert_eq!(metrics.frames_waiting.load(Relaxed), 0, "no longer waiting");
        // Room given back wakes a waiter.
        let waiter = tokio::spawn({
            let room = Arc::clone(&room);
            async move { room.admit(600, ROOM_WAIT).await.map(|r| r.bytes) }
        });
        while metrics.frames_waiting.load(Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        drop(first);
        assert_eq!(waiter.await.unwrap(), Some(600));
        assert_eq!(metrics.frame_room_bytes.load(Relaxed), 0, "the waiter's room went with its task");
    }
}
