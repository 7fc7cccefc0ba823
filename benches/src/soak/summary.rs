//! What the soak prints: a progress line every few seconds on stderr, and the summary on stdout,
//! whose last line is `result PASS` or `result FAIL: why`.

use shmcast::{Mode, PublisherStats};
use shmcast_bench::error::Result;

use crate::member::Member;
use crate::options::Options;
use crate::samples::{RSS_GROWTH, Samples, mib};
use crate::schedule::{MAX_SUBS, MIN_SUBS, STALL_BOUND, STOP_FOR};
use crate::tally::Totals;

/// One progress line: the run so far, `published` messages and the `members` alive, with the
/// publisher's `demotions`.
pub fn status(
    published: u64,
    t: &Totals,
    members: &[Member],
    demotions: u64,
    s: &Samples,
) -> String {
    let gating = members
        .iter()
        .filter(|m| m.plan.mode == Mode::Gating)
        .count();
    let stopped = members.iter().filter(|m| m.stopped_until.is_some()).count();
    format!(
        "{} messages ({}), {} subscribers ({gating} gating, {stopped} stopped); joins {}, \
         leaves {}, kills {}, stops {}, demotions {}; fds {}, RSS {}",
        published,
        gib(t.bytes_published),
        members.len(),
        t.joins,
        t.leaves,
        t.kills,
        t.stops,
        demotions,
        s.fds_now,
        mib(s.rss_now),
    )
}

/// The summary of a run of `o` over a ring of `capacity` bytes that published `published`
/// messages and ended with `outcome`; `publisher`: its statistics, once it was closed.
pub fn summary(
    o: &Options,
    capacity: u64,
    published: u64,
    t: &Totals,
    s: &Samples,
    publisher: Option<&PublisherStats>,
    outcome: &Result<()>,
) -> String {
    let mut out = format!(
        "== soak: {} s, seed {}, messages of 0..={} bytes, {} KiB ring, stall bound {} ms, \
         {MIN_SUBS}..{MAX_SUBS} subscribers\n\n",
        o.duration.as_secs(),
        o.seed,
        o.max_size,
        capacity / 1024,
        STALL_BOUND.as_millis()
    );
    let mut line = |label: &str, text: String| {
        out.push_str(&format!("{label:<13}{text}\n"));
    };
    line(
        "published",
        format!("{} messages, {}", published, gib(t.bytes_published)),
    );
    line(
        "verified",
        format!(
            "{} messages, {}, every byte, by the subscribers together",
            t.received,
            gib(t.bytes_verified)
        ),
    );
    line(
        "subscribers",
        format!(
            "{} joined ({} gating, {} lossy); {} left, {} killed ({} while starting), {} read to \
             the end of the stream; {} stops of {}..{} ms",
            t.joins,
            t.gating_joins,
            t.joins - t.gating_joins,
            t.leaves,
            t.kills,
            t.kills_starting,
            t.stream_ends,
            t.stops,
            STOP_FOR.0.as_millis(),
            STOP_FOR.1.as_millis()
        ),
    );
    line(
        "lag",
        format!(
            "{} Lagged reports for {} missed messages",
            t.lag_reports,
            t.lagged + t.lost_after_demotion
        ),
    );
    let demotions = publisher.map_or("?".into(), |p| p.demotions.to_string());
    line(
        "demotions",
        format!(
            "{demotions} by the publisher; {} told to subscribers that went on receiving, which \
             then missed {} messages and found {} held samples overwritten",
            t.demotions_told, t.lost_after_demotion, t.overwritten_after_demotion
        ),
    );
    if let Some(p) = publisher {
        line(
            "publisher",
            format!(
                "{} admitted, {} refused, {} departed; {} wake syscalls, {} waits for space",
                p.admitted, p.refused, p.departed, p.wake_syscalls, p.space_waits
            ),
        );
    }
    let counts = |fds: &[Option<usize>]| {
        fds.iter()
            .map(|f| f.map_or("-".into(), |f| f.to_string()))
            .collect::<Vec<_>>()
            .join("/")
    };
    line(
        "descriptors",
        format!(
            "{} before the publisher, {} with it, {} at the end; fewest with 0/1/2/3/4/5 \
             subscribers: {} early, {} in the last third",
            s.fds_before,
            s.fds_with_publisher,
            s.fds_at_end.map_or("?".into(), |f| f.to_string()),
            counts(&s.fds_early),
            counts(&s.fds_late)
        ),
    );
    let show = |rss: Option<u64>| rss.map_or("?".into(), mib);
    line(
        "memory",
        format!(
            "RSS at most {} early, {} in the last third (growth allowed: {})",
            show(s.rss_early),
            show(s.rss_late),
            mib(RSS_GROWTH)
        ),
    );
    line(
        "result",
        match outcome {
            Ok(()) => "PASS".into(),
            Err(e) => format!("FAIL: {e}"),
        },
    );
    out
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}
