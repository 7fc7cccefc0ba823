//! Loans: writable buffers inside the ring that the publisher fills in place, then publishes or
//! abandons.
//!
//! A loan holds the writer's lock: while it is alive, new subscribers wait to be admitted, so
//! publish promptly.
#![allow(unsafe_code)]

use std::ops::{Deref, DerefMut};
use std::sync::MutexGuard;

use shmcast_core::{Reservation, Writer};

use crate::error::PodError;
use crate::shared::Shared;
use crate::wake::Link;

/// A writable buffer inside the ring. [`publish`](Loan::publish) commits it; dropping it
/// abandons it (subscribers never see it).
///
/// While a loan is alive, new subscribers wait to be admitted: publish promptly.
pub struct Loan<'a> {
    guard: MutexGuard<'a, Writer<Link>>,
    res: Option<Reservation>,
    shared: &'a Shared,
    ptr: *mut u8,
    len: usize,
}

impl std::fmt::Debug for Loan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loan")
            .field("len", &self.len)
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
    /// A loan of the reservation `res`, whose payload is `len` bytes at `ptr`.
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
        }
    }

    /// Publishes the buffer to every subscriber.
    pub fn publish(mut self) {
        if let Some(res) = self.res.take() {
            self.shared
                .wake(&mut self.guard, |w, wake| w.commit(res, wake));
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
        // SAFETY: `ptr..ptr+len` is the reservation's payload, which only this loan may touch
        // until it is committed or abandoned (both consume the loan).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl DerefMut for Loan<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        if let Some(res) = self.res.take() {
            self.guard.abandon(res);
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
