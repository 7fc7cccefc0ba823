//! Whom each side trusts, and how many subscribers a publisher takes.
//!
//! The same [`Admission`] policy serves both directions: a publisher admits a subscriber only if
//! the connecting process's uid (`SO_PEERCRED`) passes it, and a subscriber trusts a publisher only
//! if the uid of the process serving the socket passes it. A publisher also refuses, as busy,
//! subscribers that would take it past its limit or into its descriptor reserve.

use std::os::fd::{AsRawFd, BorrowedFd};

use crate::sys;

/// Who may subscribe (on a publisher), or which publishers to trust (on a subscriber), checked
/// against the peer process's credentials (`SO_PEERCRED`) before anything is sent to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Admission {
    /// Only processes of our own uid (the default).
    #[default]
    SameUid,
    /// The listed uids (and our own). On a publisher, its socket file is made writable by
    /// everyone (mode 0666), as connecting needs: this check decides who is admitted. The
    /// topic directory stays private to its owner, so other users reach the topic through a
    /// socket path in a directory they can enter (`/srv/feeds/ticks`, not a topic name).
    Uids(Vec<u32>),
    /// Any process that can reach the socket. On a publisher, its socket file is made writable
    /// by everyone (mode 0666), as for `Uids`; a directory on the path may still keep others
    /// out.
    AnyUid,
}

impl Admission {
    /// Whether a peer running as `uid` passes this policy.
    pub(crate) fn admits(&self, uid: u32) -> bool {
        let own = sys::process::getuid();
        match self {
            Admission::SameUid => uid == own,
            Admission::Uids(list) => uid == own || list.contains(&uid),
            Admission::AnyUid => true,
        }
    }
}

/// Descriptors a publisher keeps free for the rest of its program: an eighth of its limit,
/// between 16 and 256. No subscriber is admitted into the reserve.
pub(crate) fn descriptor_reserve(limit: u64) -> u64 {
    (limit / 8).clamp(16, 256)
}

/// Why one more subscriber cannot be admitted now, if it cannot: `admitted` subscribers already
/// reach `max_subscribers`, or admitting this one (its connection `conn` is open already, its
/// control block would follow) would leave less than the descriptor reserve free.
pub(crate) fn capacity_refusal(
    admitted: usize,
    max_subscribers: Option<usize>,
    conn: BorrowedFd<'_>,
) -> Option<String> {
    if let Some(max) = max_subscribers
        && admitted >= max
    {
        return Some(format!("the topic has its maximum of {max} subscribers"));
    }
    descriptor_shortage(conn)
}

/// Why the connection `conn` (open already) and a control block after it would leave less
/// than the descriptor reserve free, if they would.
pub(crate) fn descriptor_shortage(conn: BorrowedFd<'_>) -> Option<String> {
    let limit = sys::process::descriptor_limit();
    let reserve = descriptor_reserve(limit);
    // Descriptors are allocated lowest first, so every number up to `conn`'s is in use: a lower
    // bound of the count where `/proc` cannot be listed. Connections accepted after `conn` (and
    // what the rest of the program opened since) are above it: only the listing counts them.
    let below_conn = u64::try_from(conn.as_raw_fd()).unwrap_or(0) + 1;
    let in_use =
        sys::process::descriptors_in_use_below(limit).map_or(below_conn, |n| n.max(below_conn));
    // The control block's descriptor, open while it is handed over.
    let after = in_use + 1;
    (after.saturating_add(reserve) > limit).then(|| {
        format!(
            "the publisher is short of descriptors ({after} of its limit of {limit} in use with \
             this subscriber, {reserve} kept for the rest of the program)"
        )
    })
}
