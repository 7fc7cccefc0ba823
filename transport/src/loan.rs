//! Loans: writable buffers inside the ring that the publisher fills in place, then publishes or
//! abandons.
//!
//! A loan holds the writer's lock: while it is alive, new subscribers wait to be admitted, so
//! publish promptly.
//!
//! # Messages whose length is known only once written
//!
//! A loan is a buffer of fixed capacity with a length, as a `Vec` that cannot grow:
//! [`Publisher::loan`](crate::Publisher::loan) lends `len` bytes that are all part of the message,
//! [`Publisher::loan_up_to`](crate::Publisher::loan_up_to) lends up to `max` bytes and starts
//! empty. [`io::Write`] appends (formatted text with `write!`, a serializer's writer), and so do
//! [`Loan::extend_from_slice`] and [`Loan::spare_capacity_mut`] with [`Loan::set_len`];
//! [`Loan::publish`] publishes exactly the bytes the loan holds, once, in place. Appending past
//! the capacity is an error ([`LoanFull`]; for `io::Write` an [`io::ErrorKind::WriteZero`]
//! carrying it): nothing is written past the capacity and nothing panics.
#![allow(unsafe_code)]

use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

use shmcast_core::{Reservation, Writer};

use crate::error::PodError;
use crate::shared::Shared;
use crate::wake::Link;

/// A writable buffer inside the ring. [`publish`](Loan::publish) commits it; dropping it
/// abandons it (subscribers never see it).
///
/// It dereferences to the bytes the message holds (`len`), out of `capacity` reserved: all of
/// them for [`Publisher::loan`](crate::Publisher::loan), none at first for
/// [`Publisher::loan_up_to`](crate::Publisher::loan_up_to), which is filled by appending.
///
/// While a loan is alive, new subscribers wait to be admitted: publish promptly.
///
/// ```no_run
/// use std::io::Write;
///
/// let mut publisher = shmcast::Publisher::bind("log")?;
/// let mut loan = publisher.loan_up_to(256)?;
/// write!(loan, "temperature {:.1} at {}", 21.5, "door")?;
/// assert_eq!(&loan[..], b"temperature 21.5 at door");
/// loan.publish(); // subscribers receive these 24 bytes
///
/// // Any writer-based serializer writes in place too, here serde_json:
/// let mut loan = publisher.loan_up_to(publisher.max_message())?;
/// serde_json::to_writer(&mut loan, &serde_json::json!({ "door": "open" }))?;
/// loan.publish();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Loan<'a> {
    guard: MutexGuard<'a, Writer<Link>>,
    res: Option<Reservation>,
    shared: &'a Shared,
    ptr: *mut u8,
    /// Bytes of the message: `..len` is what `publish` commits. At most `capacity`.
    len: usize,
    /// Bytes reserved at `ptr`.
    capacity: usize,
}

impl std::fmt::Debug for Loan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan")
            .field("len", &self.len)
            .field("capacity", &self.capacity)
            .field("seq", &self.guard.next_seq())
            .finish_non_exhaustive()
    }
}

impl<T> std::fmt::Debug for PodLoan<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodLoan")
            .field("type", &std::any::type_name::<T>())
            .field("loan", &self.loan)
            .finish()
    }
}

impl<'a> Loan<'a> {
    /// A loan of the reservation `res`, whose payload is `len` bytes at `ptr`, all of them part
    /// of the message.
    pub(crate) fn new(
        guard: MutexGuard<'a, Writer<Link>>,
        res: Reservation,
        shared: &'a Shared,
        ptr: *mut u8,
        len: usize,
    ) -> Self {
        Loan {
            guard,
            res: Some(res),
            shared,
            ptr,
            len,
            capacity: len,
        }
    }

    /// The same loan with an empty message (for `Publisher::loan_up_to`).
    pub(crate) fn emptied(mut self) -> Self {
        self.len = 0;
        self
    }

    /// Publishes the bytes the loan holds (`len`, not the capacity) to every subscriber.
    pub fn publish(mut self) {
        if let Some(mut res) = self.res.take() {
            res.truncate(self.len);
            self.shared
                .wake(&mut self.guard, |w, wake| w.commit(res, wake));
        }
        self.close_if_asked();
    }

    /// Ends the stream if a [`Closer`](crate::Closer) asked for it while this loan held the
    /// writer: the close it could not make waits for the loan's end.
    fn close_if_asked(&mut self) {
        if self.shared.closing() {
            self.shared.wake(&mut self.guard, |w, wake| w.close(wake));
        }
    }

    /// The most bytes this loan can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The bytes that can still be appended (`capacity − len`), to write into directly and then
    /// claim with [`set_len`](Self::set_len). They hold whatever the ring held there before.
    ///
    /// ```no_run
    /// let mut publisher = shmcast::Publisher::bind("raw")?;
    /// let mut loan = publisher.loan_up_to(64)?;
    /// let spare = loan.spare_capacity_mut();
    /// spare[..3].copy_from_slice(b"abc"); // as an encoder into a `&mut [u8]` would
    /// loan.set_len(3)?;
    /// loan.publish();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn spare_capacity_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.whole_mut()[len..]
    }

    /// Sets the message's length to `len`, shorter or longer (up to the capacity; bytes claimed
    /// this way are whatever was written there, see
    /// [`spare_capacity_mut`](Self::spare_capacity_mut)). A `len` over the capacity is an error
    /// and changes nothing.
    pub fn set_len(&mut self, len: usize) -> Result<(), LoanFull> {
        if len > self.capacity {
            return Err(LoanFull {
                capacity: self.capacity,
                requested: len,
            });
        }
        self.len = len;
        Ok(())
    }

    /// Shortens the message to `len` bytes; a `len` not below the current length changes
    /// nothing (as `Vec::truncate`).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Empties the message (the capacity stays).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends `bytes`, all or nothing: if they do not fit in the capacity, nothing is written
    /// and the error says how much was asked for.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<(), LoanFull> {
        let end = self.len.saturating_add(bytes.len());
        if end > self.capacity {
            return Err(self.full(bytes.len()));
        }
        self.spare_capacity_mut()[..bytes.len()].copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// The whole reservation, `capacity` bytes.
    #[inline]
    fn whole_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr..ptr+capacity` is the reservation's payload, which only this loan may
        // touch until it is committed or abandoned (both consume the loan); `&mut self` makes
        // this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.capacity) }
    }

    /// The error for appending `more` bytes.
    fn full(&self, more: usize) -> LoanFull {
        LoanFull {
            capacity: self.capacity,
            requested: self.len.saturating_add(more),
        }
    }

    /// Drops the buffer without publishing it.
    pub fn abandon(mut self) {
        if let Some(res) = self.res.take() {
            self.guard.abandon(res);
        }
    }

    /// The buffer as a `T`.
    pub fn as_pod_mut<T: bytemuck::Pod>(&mut self) -> Result<&mut T, PodError> {
        let len = self.len;
        bytemuck::try_from_bytes_mut(self).map_err(PodError::cast::<T>(len))
    }
}

impl Deref for Loan<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` lies in the reservation's payload (`len <= capacity`), which
        // only this loan may touch until it is committed or abandoned (both consume the loan).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl DerefMut for Loan<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.whole_mut()[..len]
    }
}

/// Appends to the message. A `write` that finds the loan full is an error of kind
/// [`io::ErrorKind::WriteZero`] carrying [`LoanFull`] (so `write!` and serializers stop with it
/// rather than loop); one that finds some room writes what fits, as `io::Write` for `&mut [u8]`
/// does. `write_all` is all or nothing. Nothing is written past the capacity.
impl io::Write for Loan<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.capacity - self.len);
        if n == 0 && !buf.is_empty() {
            return Err(self.full(buf.len()).into());
        }
        self.extend_from_slice(&buf[..n])?;
        Ok(n)
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Ok(self.extend_from_slice(buf)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A loan cannot hold the bytes asked for; nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoanFull {
    /// The loan's capacity.
    pub capacity: usize,
    /// The length the message would have had.
    pub requested: usize,
}

impl fmt::Display for LoanFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the loan holds at most {} bytes; {} do not fit",
            self.capacity, self.requested
        )
    }
}

impl std::error::Error for LoanFull {}

impl From<LoanFull> for io::Error {
    fn from(e: LoanFull) -> io::Error {
        io::Error::new(io::ErrorKind::WriteZero, e)
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if let Some(res) = self.res.take() {
            self.guard.abandon(res);
            self.close_if_asked();
        }
    }
}

/// A loan of exactly one `T`, from [`Publisher::loan_pod`](crate::Publisher::loan_pod).
pub struct PodLoan<'a, T> {
    loan: Loan<'a>,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T: bytemuck::Pod> PodLoan<'a, T> {
    /// A loan of one `T`; the caller checked that `loan` has its size and alignment.
    pub(crate) fn new(loan: Loan<'a>) -> Self {
        PodLoan {
            loan,
            _t: std::marker::PhantomData,
        }
    }

    /// Publishes the value.
    pub fn publish(self) {
        self.loan.publish();
    }
}

impl<T: bytemuck::Pod> Deref for PodLoan<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Size and alignment were checked in `loan_pod` (payloads are 16-byte aligned).
        bytemuck::from_bytes(&self.loan)
    }
}

impl<T: bytemuck::Pod> DerefMut for PodLoan<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        bytemuck::from_bytes_mut(&mut self.loan)
    }
}
