//! A hook between the steps of a read: the reader calls [`point`] after each load it later
//! relies on (positions, headers, the copy), so a single-threaded test can let the writer run at
//! exactly that point, at every point in turn. Without the `test-support` feature a point is
//! nothing at all.

/// A point between two steps of a read, where the property tests let the writer run
/// (`testing::on_step`); nothing outside those tests.
#[inline(always)]
pub(crate) fn point() {
    #[cfg(feature = "test-support")]
    hook::fire();
}

#[cfg(feature = "test-support")]
pub use hook::{StepGuard, on_step};

#[cfg(feature = "test-support")]
mod hook {
    use std::cell::RefCell;

    type Hook = Box<dyn FnMut()>;

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// Calls `hook` at every step of every read on this thread until the guard is dropped.
    pub fn on_step(hook: impl FnMut() + 'static) -> StepGuard {
        HOOK.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
        StepGuard(())
    }

    /// Removes the hook of [`on_step`] when dropped.
    #[must_use = "the hook is removed when the guard is dropped"]
    pub struct StepGuard(());

    impl Drop for StepGuard {
        fn drop(&mut self) {
            let _ = HOOK.try_with(|h| h.borrow_mut().take());
        }
    }

    /// Runs the hook, if any (taken out while it runs, so it may read and write the ring).
    pub(super) fn fire() {
        let Ok(Some(mut hook)) = HOOK.try_with(|h| h.borrow_mut().take()) else {
            return;
        };
        hook();
        let _ = HOOK.try_with(|h| {
            let mut slot = h.borrow_mut();
            if slot.is_none() {
                *slot = Some(hook);
            }
        });
    }
}
