//! A [`Stream`] of owned messages over an async subscriber.

use std::ops::Deref;
use std::pin::Pin;
use std::task::{Context, Poll};

use ::tokio::io::unix::AsyncFd;
use futures_core::{FusedStream, Stream};

use crate::error::{PodError, RecvError};
use crate::subscriber::{Sample, Subscriber};

/// A message copied out of the ring, owned: what [`Messages`] yields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    seq: u64,
    bytes: Vec<u8>,
}

impl Message {
    fn copy_of(sample: &Sample<'_>) -> Message {
        Message {
            seq: sample.seq(),
            bytes: sample.to_vec(),
        }
    }

    /// The message's sequence number (0 for the publisher's first message).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The payload.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The payload read as a `T` (a copy: an owned message's bytes are not aligned for any
    /// particular type). [`PodError::Size`] if its length is not `T`'s size.
    ///
    /// ```no_run
    /// use futures_util::StreamExt;
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut ticks = shmcast::tokio::AsyncSubscriber::connect("ticks").await?.into_stream();
    /// while let Some(message) = ticks.next().await {
    ///     let price: f64 = message?.to_pod()?;
    ///     println!("{price}");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn to_pod<T: bytemuck::Pod>(&self) -> Result<T, PodError> {
        bytemuck::try_pod_read_unaligned(&self.bytes).map_err(PodError::cast::<T>(self.bytes.len()))
    }
}

impl Deref for Message {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// The messages of an [`AsyncSubscriber`](super::AsyncSubscriber) as a
/// [`Stream`](futures_core::Stream) of owned [`Message`]s, from
/// [`into_stream`](super::AsyncSubscriber::into_stream).
///
/// Yields `Ok(message)` in order, `Err(RecvError::Lagged(n))` and `Err(RecvError::Demoted)` as
/// they happen (the stream goes on after them), and ends (`None`) at the end of the stream.
/// Any other error (`Corrupt`, `Evicted`, `Io`) is yielded once and ends the stream too, so a
/// loop that logs errors and goes on still ends. It is a
/// [`FusedStream`](futures_core::FusedStream): `None` for good once ended.
///
/// `next()` below is `futures_util::StreamExt`'s: a dependency of its own (`futures-util`, or
/// `futures`, or `tokio-stream` with `tokio_stream::StreamExt`), as tokio has none.
///
/// ```no_run
/// use futures_util::StreamExt;
/// use shmcast::tokio::AsyncSubscriber;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let mut messages = AsyncSubscriber::connect("ticks").await?.into_stream();
/// while let Some(got) = messages.next().await {
///     match got {
///         Ok(m) => println!("#{}: {} bytes", m.seq(), m.len()),
///         Err(e) => eprintln!("{e}"),
///     }
/// }
/// # Ok(())
/// # }
/// ```
///
/// Cancel safety: a message is taken only in the poll that yields it, so dropping a `next()`
/// future loses nothing.
#[derive(Debug)]
pub struct Messages {
    fd: AsyncFd<Subscriber>,
    ended: bool,
}

impl Messages {
    pub(super) fn new(fd: AsyncFd<Subscriber>) -> Messages {
        Messages { fd, ended: false }
    }

    /// The subscriber inside, for its statistics.
    pub fn get_ref(&self) -> &Subscriber {
        self.fd.get_ref()
    }

    /// The async subscriber again, to receive in place or the newest message from here on.
    pub fn into_inner(self) -> super::AsyncSubscriber {
        super::AsyncSubscriber::from_fd(self.fd)
    }
}

impl FusedStream for Messages {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

impl Stream for Messages {
    type Item = Result<Message, RecvError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            let mut ready = match this.fd.poll_read_ready_mut(cx) {
                Poll::Ready(Ok(ready)) => ready,
                Poll::Ready(Err(e)) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(RecvError::Io(e))));
                }
                Poll::Pending => return Poll::Pending,
            };
            let got = match ready.get_inner_mut().try_recv() {
                Ok(sample) => Ok(Message::copy_of(&sample)),
                Err(e) => Err(e),
            };
            match got {
                Ok(message) => return Poll::Ready(Some(Ok(message))),
                // Parked with its own signal: the next message makes the descriptor readable.
                Err(RecvError::Empty) => ready.clear_ready(),
                Err(RecvError::Disconnected) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Err(e @ (RecvError::Lagged(_) | RecvError::Demoted)) => {
                    return Poll::Ready(Some(Err(e)));
                }
                Err(e) => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(e)));
                }
            }
        }
    }
}
