//! A publisher in an event loop waits for space on a descriptor: [`Publisher::space_fd`],
//! armed by [`Publisher::watch_space`] when a gating subscriber's ring is full.
//!
//! The descriptor is an epoll set of the publisher's own. While a wait is armed it holds the
//! space set the blocking loans sleep on (every gating subscriber's connection, on which one
//! that releases space while the publisher waits rings a doorbell, and the server thread's kick
//! when a subscriber leaves) and a timer, armed for when the publisher must look again by itself
//! (the stall bound, or the periodic re-check that bounds what a subscriber withholding its
//! doorbells can do). Between waits it holds nothing that can make it readable.

use std::os::fd::BorrowedFd;

use super::Publisher;
use crate::error::LoanError;
use crate::full_wait::{self, FullWait, Wait};

impl Publisher {
    /// The descriptor a publisher in an event loop (`poll`, epoll, mio, libuv, ...) waits on
    /// for space: readable only after [`watch_space`](Self::watch_space) armed it, when the
    /// publisher should try its loan again, and until the next loan, watch or
    /// [`unwatch_space`](Self::unwatch_space). It may stay registered in the loop for good;
    /// readiness may be spurious (the loan then finds the ring still full and watches again).
    ///
    /// It is an epoll descriptor owned by the publisher: wait on it for input, never read it or
    /// close it (a loop that sets `O_NONBLOCK` on it does no harm). Tokio users have
    /// [`AsyncPublisher`](crate::tokio::AsyncPublisher) instead.
    pub fn space_fd(&self) -> BorrowedFd<'_> {
        self.shared.space.watch_fd()
    }

    /// Asks to be told through [`space_fd`](Self::space_fd) when `len` bytes may fit, for a
    /// publisher in an event loop whose [`try_loan`](Self::try_loan) found the ring full.
    /// Never blocks, except for a poll of at most the spin limit while a core is free.
    ///
    /// Returns `Ok(true)` if `len` bytes fit now: nothing is armed, loan at once. Otherwise
    /// announces the wait, so that gating subscribers ring the publisher as they release, and
    /// returns `Ok(false)`: the descriptor becomes readable when a subscriber has released
    /// space, when one has left, when the stall bound has passed (the next loan then demotes
    /// the slowest gating subscriber, as a blocking loan would), when a
    /// [`Closer`](super::Closer) ended the stream, or after 100 ms at the latest, a re-check
    /// that a subscriber withholding its doorbells cannot prevent. Then try the loan again: any
    /// loan, or another `watch_space`, withdraws the announcement first;
    /// [`unwatch_space`](Self::unwatch_space) withdraws it without a loan. The stall bound
    /// counts across these retries from the first loan that found the ring full.
    ///
    /// # Errors
    ///
    /// [`LoanError::TooLarge`] if `len` exceeds [`max_message`](Self::max_message),
    /// [`LoanError::Closed`] once a [`Closer`](super::Closer) ended the stream,
    /// [`LoanError::Io`] if the descriptor's timer cannot be armed.
    ///
    /// ```no_run
    /// use rustix::event::{PollFd, PollFlags, poll};
    /// use shmcast::{LoanError, Publisher};
    ///
    /// let mut publisher = Publisher::bind("ticks")?;
    /// for i in 0u64..1000 {
    ///     loop {
    ///         match publisher.try_loan(8) {
    ///             Ok(mut loan) => {
    ///                 loan.copy_from_slice(&i.to_le_bytes());
    ///                 loan.publish();
    ///                 break;
    ///             }
    ///             Err(LoanError::Full) => {}
    ///             Err(e) => return Err(e.into()),
    ///         }
    ///         // The ring is full: an event loop waits here among its other descriptors.
    ///         if !publisher.watch_space(8)? {
    ///             let space = publisher.space_fd();
    ///             poll(&mut [PollFd::new(&space, PollFlags::IN)], None)?;
    ///         }
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn watch_space(&mut self, len: usize) -> Result<bool, LoanError> {
        if !self.space_watched {
            // What reached the space set since the last wait (a late doorbell, a departure)
            // would make the new wait readable at once, for nothing.
            full_wait::end_now(&self.shared);
        }
        let mut full = FullWait::new(Wait::Forever, self.stall_bound).in_event_loop();
        let Some(after) = self.space_step(len, &mut full)? else {
            return Ok(true);
        };
        self.space_watched = true;
        self.shared.space.arm_watch(after).map_err(|e| {
            self.end_space_watch();
            LoanError::Io(e)
        })?;
        Ok(false)
    }

    /// Withdraws what [`watch_space`](Self::watch_space) armed, for a publisher that gives up
    /// on the message it waited to send (drops it, defers it, shuts down): subscribers stop
    /// ringing for the wait, its timer is disarmed, and the descriptor is quiet until the next
    /// watch. Every loan and watch withdraws an armed wait first; an armed descriptor left
    /// without either becomes readable and stays so. Does nothing if nothing is armed.
    pub fn unwatch_space(&mut self) {
        self.end_space_watch();
    }

    /// Withdraws an armed watch, if any: the announcement, the timer, the doorbells.
    pub(super) fn end_space_watch(&mut self) {
        if std::mem::take(&mut self.space_watched) {
            self.shared.space.end_watch();
            full_wait::end_now(&self.shared);
        }
    }
}
