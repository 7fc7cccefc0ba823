//! Asking many publishers at once. A publisher that does not answer (stopped, or overloaded)
//! costs its whole timeout, so `list` asks on a few threads: with up to [`THREADS`] such
//! publishers, it waits about one timeout, not one each. Results keep the order of the items,
//! so the output is the same however the threads ran. A thread that cannot be started leaves
//! its share to the others (at worst, to the calling thread alone).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Most threads asking at once, the calling thread included.
const THREADS: usize = 8;

/// `f` of each item, in the items' order, computed on up to [`THREADS`] threads.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    // Each thread takes the next item not yet taken, until none is left.
    let work = || {
        let mut done = Vec::new();
        loop {
            // Relaxed: the counter only hands out indices; the results travel through `join`.
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut results: Vec<(usize, R)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..THREADS.min(items.len()))
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mut all = work();
        for helper in helpers {
            match helper.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn results_keep_the_order_of_the_items() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(
            map(&items, |i| i * 2),
            (0..100).map(|i| i * 2).collect::<Vec<_>>()
        );
        assert_eq!(map(&[] as &[u64], |i| *i), Vec::<u64>::new());
    }

    #[test]
    fn items_are_worked_on_side_by_side() {
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        map(&[(); THREADS], |()| {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Until another item is under way too, for a while: one at a time never gets there.
            let deadline = Instant::now() + Duration::from_secs(5);
            while most.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            in_flight.fetch_sub(1, Ordering::SeqCst);
        });
        assert!(most.load(Ordering::SeqCst) >= 2);
    }
}
