//! `limits`: the machine's own ceilings, measured by the same binary, so that every other result
//! can be read as a fraction of what the hardware allows.
//!
//! * copy, read and write bandwidth over the working set of the throughput scenario's ring (the
//!   read is the subscribers' checksum loop, the write the publisher's fill loop);
//! * eventfd ping-pong between two processes: the round trip of two blocking wakes;
//! * cache-line ping-pong between two processes spinning on a shared line: the round trip of
//!   two cache-line transfers, the floor under any busy-polling handoff.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::{BenchError, Result, sys};
use crate::harness::ring_capacity;
use crate::options::Options;
use crate::payload;
use crate::process::{self, Fleet, Spec};
use crate::report::{Progress, Section, cores, gbps};
use crate::stats::Summary;
use crate::sys::{SharedLines, now_ns};
use crate::table::Table;

/// The child role that answers ping-pongs.
pub const ROLE: &str = "limits-echo";

/// Longest a ping-pong waits for the other side.
const STALL: Duration = Duration::from_secs(5);

/// The parent's value that tells an echo child to stop.
const STOP: u64 = u64::MAX;

/// The ceilings other scenarios compare with (medians).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// CPUs available.
    pub cores: usize,
    /// Checksum (read) bandwidth, bytes/s.
    pub read_bps: f64,
    /// Fill (write) bandwidth, bytes/s.
    pub write_bps: f64,
    /// eventfd ping-pong round trip, ns.
    pub eventfd_rtt_ns: f64,
    /// Cache-line ping-pong round trip, ns.
    pub cacheline_rtt_ns: f64,
}

/// Runs the scenario.
pub fn run(o: &Options) -> Result<(Section, Limits)> {
    let progress = Progress::new("limits");
    let working_set = ring_capacity(o.size) as usize;
    let chunk = o.size.min(working_set);
    let span = if o.quick {
        Duration::from_millis(20)
    } else {
        Duration::from_millis(100)
    };
    let (eventfd_rounds, line_rounds) = if o.quick {
        (500, 20_000)
    } else {
        (5_000, 200_000)
    };
    let mut copy = Vec::new();
    let mut read = Vec::new();
    let mut write = Vec::new();
    let mut eventfd = Vec::new();
    let mut line = Vec::new();
    let mut bare = Vec::new();
    for rep in 0..o.reps {
        copy.push(bandwidth(working_set, chunk, span, Kind::Copy));
        read.push(bandwidth(working_set, chunk, span, Kind::Read));
        write.push(bandwidth(working_set, chunk, span, Kind::Write));
        eventfd.push(eventfd_ping_pong(eventfd_rounds)?);
        line.push(cacheline_ping_pong(line_rounds)?);
        bare.push(eventfd_write_cost()?);
        progress.say(&format!(
            "rep {}/{}: copy {:.1} GB/s, read {:.1} GB/s, write {:.1} GB/s, eventfd rtt {:.2} µs, \
             cache-line rtt {:.0} ns",
            rep + 1,
            o.reps,
            gbps(copy[rep]),
            gbps(read[rep]),
            gbps(write[rep]),
            eventfd[rep] / 1000.0,
            line[rep]
        ));
    }
    // (JSON key, label, unit shown, values, scale to the unit shown, decimals)
    type Row<'a> = (&'a str, &'a str, &'a str, &'a [f64], f64, usize);
    let rows: [Row<'_>; 6] = [
        ("copy_bandwidth", "copy bandwidth", "GB/s", &copy, 1e-9, 2),
        (
            "read_bandwidth",
            "read (checksum) bandwidth",
            "GB/s",
            &read,
            1e-9,
            2,
        ),
        (
            "write_bandwidth",
            "write (fill) bandwidth",
            "GB/s",
            &write,
            1e-9,
            2,
        ),
        (
            "eventfd_rtt",
            "eventfd ping-pong round trip",
            "µs",
            &eventfd,
            1e-3,
            2,
        ),
        (
            "cacheline_rtt",
            "cache-line ping-pong round trip",
            "ns",
            &line,
            1.0,
            0,
        ),
        (
            "eventfd_write",
            "eventfd write, nobody waiting",
            "ns",
            &bare,
            1.0,
            0,
        ),
    ];
    let mut table = Table::new(&["figure", "median (min..max)", "unit"]);
    let mut results = Vec::new();
    for (key, label, unit, values, scale, digits) in rows {
        let s = Summary::of(values);
        table.row(vec![label.into(), s.show(scale, digits), unit.into()]);
        let raw_unit = match unit {
            "GB/s" => "bytes_per_s",
            _ => "ns",
        };
        results.push(json!({
            "name": key,
            "unit": raw_unit,
            "median": s.median,
            "min": s.min,
            "max": s.max,
        }));
    }
    let limits = Limits {
        cores: cores(),
        read_bps: Summary::of(&read).median,
        write_bps: Summary::of(&write).median,
        eventfd_rtt_ns: Summary::of(&eventfd).median,
        cacheline_rtt_ns: Summary::of(&line).median,
    };
    let text = format!(
        "== limits: {} cores; bandwidth over a {} KiB working set in {} KiB pieces, \
         median (min..max) of {} repetition(s)\n\n{}  \
         a one-way blocking wake is at best half the eventfd round trip ({:.2} µs), a busy-polling \
         handoff half the cache-line round trip ({:.0} ns)\n",
        limits.cores,
        working_set / 1024,
        chunk / 1024,
        o.reps,
        table.render(),
        limits.eventfd_rtt_ns / 2000.0,
        limits.cacheline_rtt_ns / 2.0,
    );
    let section = Section {
        text,
        json: json!({
            "scenario": "limits",
            "params": {
                "working_set_bytes": working_set,
                "chunk_bytes": chunk,
                "eventfd_rounds": eventfd_rounds,
                "cacheline_rounds": line_rounds,
                "reps": o.reps,
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts: Vec::new(),
    };
    Ok((section, limits))
}

#[derive(Clone, Copy)]
enum Kind {
    Copy,
    Read,
    Write,
}

/// Bytes per second of `kind` over `working_set` bytes in `chunk`-byte pieces, for `span`.
fn bandwidth(working_set: usize, chunk: usize, span: Duration, kind: Kind) -> f64 {
    let mut src = vec![0u8; working_set];
    let mut dst = vec![0u8; working_set];
    payload::fill(&mut src[..chunk], 1);
    let pieces = working_set / chunk;
    let mut bytes = 0u64;
    let mut sink = 0u64;
    let started = Instant::now();
    let mut i = 0usize;
    while started.elapsed() < span {
        let at = (i % pieces) * chunk;
        match kind {
            Kind::Copy => dst[at..at + chunk].copy_from_slice(&src[at..at + chunk]),
            Kind::Read => sink = sink.wrapping_add(payload::sum_words(&src[at..at + chunk])),
            Kind::Write => payload::fill(&mut dst[at..at + chunk], i as u64),
        }
        bytes += chunk as u64;
        i += 1;
    }
    std::hint::black_box((sink, &dst));
    bytes as f64 / started.elapsed().as_secs_f64()
}

/// Median round trip (ns) of `rounds` eventfd ping-pongs with a child process.
fn eventfd_ping_pong(rounds: usize) -> Result<f64> {
    let ping = crate::sys::eventfd().map_err(sys("eventfd"))?;
    let pong = crate::sys::eventfd().map_err(sys("eventfd"))?;
    let mut fleet = Fleet::new();
    fleet.spawn(Spec {
        name: "eventfd echo".into(),
        role: ROLE,
        args: vec![
            "eventfd".into(),
            process::raw(&ping).to_string(),
            process::raw(&pong).to_string(),
        ],
        fds: vec![process::raw(&ping), process::raw(&pong)],
    })?;
    fleet.expect(0, "ready", Instant::now() + STALL)?;
    let mut samples = Vec::with_capacity(rounds);
    let started = Instant::now();
    for _ in 0..rounds + rounds / 10 {
        if samples.len() > rounds / 5 && started.elapsed() > Duration::from_millis(500) {
            break;
        }
        let t0 = now_ns();
        crate::sys::eventfd_add(ping.as_fd(), 1).map_err(sys("eventfd write"))?;
        if !crate::sys::wait_readable(pong.as_fd(), STALL).map_err(sys("poll"))? {
            return Err(stalled("eventfd echo"));
        }
        crate::sys::eventfd_read(pong.as_fd()).map_err(sys("eventfd read"))?;
        samples.push((now_ns() - t0) as f64);
    }
    crate::sys::eventfd_add(ping.as_fd(), STOP - 1).map_err(sys("eventfd write"))?;
    fleet.finish(Instant::now() + STALL)?;
    // The first tenth warms both sides up.
    Ok(Summary::of(&samples[(rounds / 10).min(samples.len() / 2)..]).median)
}

/// Round trip (ns) of cache-line ping-pongs with a child process, the two pinned to different
/// CPUs where there are two: the median over batches of [`BATCH`] round trips, so that a batch
/// in which other load preempted either side does not move the figure.
fn cacheline_ping_pong(rounds: u64) -> Result<f64> {
    use std::sync::atomic::Ordering::{Acquire, Release};
    const BATCH: u64 = 32;
    let (fd, lines) = SharedLines::create(1).map_err(sys("creating a shared page"))?;
    let cpus = Cpus::pick();
    let mut fleet = Fleet::new();
    fleet.spawn(Spec {
        name: "cache-line echo".into(),
        role: ROLE,
        args: vec![
            "line".into(),
            process::raw(&fd).to_string(),
            cpus.map_or(-1, |(_, child)| child as i64).to_string(),
        ],
        fds: vec![process::raw(&fd)],
    })?;
    fleet.expect(0, "ready", Instant::now() + STALL)?;
    let pinned = cpus.map(|(parent, _)| Cpus::pin_self(parent));
    let line = &lines.line(0).value;
    let started = Instant::now();
    let warm_until = started + Duration::from_millis(10);
    let budget = Duration::from_millis(500);
    let mut batches = Vec::new();
    let mut batch_start = now_ns();
    let mut outcome = Ok(());
    for k in 0.. {
        // SYNC(ping): Release; pairs with the Acquire load in `child` (line mode).
        line.store(2 * k + 1, Release);
        let deadline = Instant::now() + STALL;
        let mut spins = 0u32;
        // SYNC(pong): Acquire; pairs with the Release store in `child` (line mode).
        while line.load(Acquire) != 2 * k + 2 {
            spin_or_yield(&mut spins);
            if spins % 4096 == 0 && Instant::now() >= deadline {
                outcome = Err(stalled("cache-line echo"));
                break;
            }
        }
        if outcome.is_err() {
            break;
        }
        if k % BATCH == BATCH - 1 {
            let now = now_ns();
            if Instant::now() >= warm_until {
                batches.push((now - batch_start) as f64 / BATCH as f64);
            }
            batch_start = now;
            if batches.len() as u64 * BATCH >= rounds || started.elapsed() >= budget {
                break;
            }
        }
    }
    if let Some(previous) = pinned {
        Cpus::restore(previous);
    }
    outcome?;
    line.store(STOP, Release);
    fleet.finish(Instant::now() + STALL)?;
    Ok(Summary::of(&batches).median)
}

/// CPU placement for the cache-line ping-pong.
struct Cpus;

impl Cpus {
    /// Two different CPUs this process may use (parent's, child's), if it may use two.
    fn pick() -> Option<(usize, usize)> {
        let set = rustix::thread::sched_getaffinity(None).ok()?;
        let mut allowed = (0..rustix::thread::CpuSet::MAX_CPU).filter(|&c| set.is_set(c));
        Some((allowed.next()?, allowed.next()?))
    }

    /// Pins the calling thread to `cpu`; returns the previous set.
    fn pin_self(cpu: usize) -> rustix::thread::CpuSet {
        let previous = rustix::thread::sched_getaffinity(None).unwrap_or_default();
        let mut one = rustix::thread::CpuSet::new();
        one.set(cpu);
        let _ = rustix::thread::sched_setaffinity(None, &one);
        previous
    }

    fn restore(previous: rustix::thread::CpuSet) {
        let _ = rustix::thread::sched_setaffinity(None, &previous);
    }
}

/// Median cost (ns) of an eventfd write that wakes nobody.
fn eventfd_write_cost() -> Result<f64> {
    let fd = crate::sys::eventfd().map_err(sys("eventfd"))?;
    let mut samples = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let t0 = now_ns();
        crate::sys::eventfd_add(fd.as_fd(), 1).map_err(sys("eventfd write"))?;
        samples.push((now_ns() - t0) as f64);
    }
    Ok(Summary::of(&samples).median)
}

/// One step of a busy wait: a spin hint, and every 2^14 steps (about half a millisecond) the
/// CPU handed over, so that two spinners that share a core (other load on the machine) still
/// make progress, while two on their own cores never yield.
fn spin_or_yield(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if *spins % (1 << 14) == 0 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

fn stalled(who: &str) -> BenchError {
    BenchError::Child {
        who: who.into(),
        what: format!("did not answer within {STALL:?}"),
    }
}

/// The child side: `limits-echo eventfd PING_FD PONG_FD` or `limits-echo line PAGE_FD CPU` (CPU
/// -1: not pinned).
pub fn child(args: &[String]) -> Result<()> {
    use std::sync::atomic::Ordering::{Acquire, Release};
    let [mode, a, b] = args else {
        return Err(BenchError::Usage(format!(
            "{ROLE} takes 3 arguments, got {}",
            args.len()
        )));
    };
    match mode.as_str() {
        "eventfd" => {
            let ping = crate::sys::adopt_inherited(process::fd_arg(a)?)
                .map_err(sys("adopting the ping eventfd"))?;
            let pong = crate::sys::adopt_inherited(process::fd_arg(b)?)
                .map_err(sys("adopting the pong eventfd"))?;
            process::say("ready")?;
            loop {
                let value = crate::sys::eventfd_read(ping.as_fd()).map_err(sys("eventfd read"))?;
                if value >= STOP - 1 {
                    return Ok(());
                }
                crate::sys::eventfd_add(pong.as_fd(), 1).map_err(sys("eventfd write"))?;
            }
        }
        "line" => {
            let fd = crate::sys::adopt_inherited(process::fd_arg(a)?)
                .map_err(sys("adopting the shared page"))?;
            let cpu: i64 = process::parse_arg(b)?;
            if let Ok(cpu) = usize::try_from(cpu) {
                Cpus::pin_self(cpu);
            }
            let lines = SharedLines::map(&fd, 1).map_err(sys("mapping the shared page"))?;
            let line = &lines.line(0).value;
            process::say("ready")?;
            let mut seen = 0;
            let mut spins = 0u32;
            loop {
                // SYNC(ping): Acquire; pairs with the Release store in `cacheline_ping_pong`.
                let v = line.load(Acquire);
                if v == STOP {
                    return Ok(());
                }
                if v % 2 == 1 && v != seen {
                    seen = v;
                    spins = 0;
                    // SYNC(pong): Release; pairs with the Acquire load in `cacheline_ping_pong`.
                    line.store(v + 1, Release);
                } else {
                    spin_or_yield(&mut spins);
                }
            }
        }
        other => Err(BenchError::Usage(format!("unknown echo mode {other:?}"))),
    }
}
