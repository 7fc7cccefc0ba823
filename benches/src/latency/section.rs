//! What the scenario hands back: per group, the percentile table, the ratios to every socket
//! transport, where shmcast stands against its targets and the machine's limits, the JSON and
//! the chart.

use serde_json::json;

use super::group::Group;
use super::transport::Transport;
use crate::limits::Limits;
use crate::options::Options;
use crate::report::Section;
use crate::stats::Summary;
use crate::svg;
use crate::table::Table;

/// The scenario's section: every group's tables and chart, and the JSON of them all.
pub(super) fn report(
    o: &Options,
    groups: &[Group],
    limits: Option<&Limits>,
    cores: usize,
) -> Section {
    let mut text = String::new();
    let mut results = Vec::new();
    let mut charts = Vec::new();
    for g in groups {
        text.push_str(&format!(
            "== latency: 8-byte timestamp every {} µs to {} listener(s), {} messages per trial \
             ({} warm-up dropped), {} repetition(s) merged\n\n",
            o.interval.as_micros(),
            g.listeners,
            o.messages,
            o.messages / 10,
            o.reps
        ));
        let mut table = Table::new(&[
            "transport",
            "listener",
            "p50 µs",
            "p90",
            "p99",
            "p99.9",
            "max",
            "p50 / best socket",
            "cpu µs/msg",
            "pub syscalls/msg",
        ]);
        let best: Vec<Option<Transport>> = (0..g.listeners).map(|l| g.best_socket(l)).collect();
        for &t in &g.transports {
            let cpu = g.per_msg(t, |x| x.cpu_ns, o.messages) / 1000.0;
            let cpu_life = g.per_msg(t, |x| x.cpu_lifetime_ns, o.messages) / 1000.0;
            let syscalls = g.per_msg(t, |x| x.publisher_syscalls, o.messages);
            let mut listeners = Vec::new();
            for (l, &best_l) in best.iter().enumerate() {
                let p = g.percentiles(t, l);
                let rep_p50 = Summary::of(&g.rep_p50s(t, l));
                let vs_best = best_l.map(|b| Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(b, l)));
                let vs_each: serde_json::Map<String, serde_json::Value> = g
                    .transports
                    .iter()
                    .filter(|a| a.socket())
                    .map(|&a| {
                        (
                            a.name().to_owned(),
                            Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(a, l)).json(1.0),
                        )
                    })
                    .collect();
                table.row(vec![
                    if l == 0 {
                        t.name().into()
                    } else {
                        String::new()
                    },
                    (l + 1).to_string(),
                    format!("{:.1}", p.p50),
                    format!("{:.1}", p.p90),
                    format!("{:.1}", p.p99),
                    format!("{:.1}", p.p999),
                    format!("{:.1}", p.max),
                    vs_best.map_or("-".into(), |r| {
                        format!("{} {}", r.show(1.0, 2), best_l.map_or("", |b| b.name()))
                    }),
                    if l == 0 {
                        format!("{cpu:.1}")
                    } else {
                        String::new()
                    },
                    if l == 0 {
                        format!("{syscalls:.2}")
                    } else {
                        String::new()
                    },
                ]);
                let received: u64 = g.outcomes(t).iter().map(|x| x.received[l]).sum();
                listeners.push(json!({
                    "p50_us": p.p50,
                    "p90_us": p.p90,
                    "p99_us": p.p99,
                    "p999_us": p.p999,
                    "max_us": p.max,
                    "samples": p.count,
                    "received": received,
                    "p50_us_reps": rep_p50.json(1.0),
                    "p50_ratio_vs_best_socket": vs_best.map(|r| r.json(1.0)),
                    "best_socket": best_l.map(|b| b.name()),
                    "p50_ratio_vs": vs_each,
                    "p50_ratio_vs_shmcast": g.transports.contains(&Transport::Shmcast).then(|| {
                        Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(Transport::Shmcast, l))
                            .json(1.0)
                    }),
                }));
            }
            let sent = (o.messages * g.outcomes(t).len()) as u64;
            results.push(json!({
                "transport": t.name(),
                "listener_count": g.listeners,
                "listeners": listeners,
                "cpu_us_per_msg": cpu,
                "cpu_us_per_msg_lifetime": cpu_life,
                "publisher_syscalls_per_msg": syscalls,
                "publisher_space_wait_syscalls_per_msg": g.per_msg(t, |x| x.publisher_space_syscalls, o.messages),
                "messages_sent": sent,
                "spinning_listeners_ge_cores": t.spins() && g.listeners >= cores,
            }));
        }
        text.push_str(&table.render());
        text.push_str(
            "  p50 / best socket: median (min..max) of per-repetition ratios of this listener's \
             p50 to the socket transport with the lowest p50 for it\n  cpu = publisher + \
             listeners (+ relay) per message, measured window; pub syscalls = the publisher's \
             sends or wake writes per message\n",
        );
        if g.listeners >= cores {
            text.push_str(&format!(
                "  WARNING: {} busy-polling listeners on {cores} cores: spinning rows measure \
                 starvation, not the transport\n",
                g.listeners
            ));
        }
        text.push_str(&alternatives_table(g));
        text.push_str(&targets(g, limits, o.messages));
        text.push('\n');
        charts.push((
            format!("latency-{}-listeners.svg", g.listeners),
            chart(o, g),
        ));
    }
    Section {
        text,
        json: json!({
            "scenario": "latency",
            "params": {
                "interval_us": o.interval.as_micros() as u64,
                "listeners": o.listeners,
                "listener_groups": groups.iter().map(|g| g.listeners).collect::<Vec<_>>(),
                "messages": o.messages,
                "warmup_dropped": o.messages / 10,
                "reps": o.reps,
                "message_bytes": 8,
                "machine": crate::report::machine(),
            },
            "results": results,
        }),
        charts,
    }
}

/// p50 ratios of every non-socket transport against every socket transport, per listener.
fn alternatives_table(g: &Group) -> String {
    let sockets: Vec<Transport> = g
        .transports
        .iter()
        .copied()
        .filter(|t| t.socket())
        .collect();
    let mut header = vec!["p50 ratio (per listener)".to_owned()];
    header.extend(sockets.iter().map(|s| format!("vs {}", s.name())));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new(&header_refs);
    for &t in g.transports.iter().filter(|t| !t.socket()) {
        let mut row = vec![t.name().to_owned()];
        for &s in &sockets {
            let cells: Vec<String> = (0..g.listeners)
                .map(|l| {
                    format!(
                        "{:.2}",
                        Summary::ratio(&g.rep_p50s(t, l), &g.rep_p50s(s, l)).median
                    )
                })
                .collect();
            row.push(cells.join(" / "));
        }
        table.row(row);
    }
    format!("\n{}", table.render())
}

/// Where the group stands against the latency targets.
fn targets(g: &Group, limits: Option<&Limits>, messages: usize) -> String {
    let mut out = String::new();
    let has = |t: Transport| g.transports.contains(&t) && !g.outcomes(t).is_empty();
    for t in [Transport::Shmcast, Transport::ShmcastPoll] {
        if g.listeners < 2 || !has(t) {
            continue;
        }
        let ratios: Vec<f64> = (0..g.listeners)
            .filter_map(|l| {
                let b = g.best_socket(l)?;
                Some(g.percentiles(t, l).p50 / g.percentiles(b, l).p50)
            })
            .collect();
        let worst = ratios.iter().copied().fold(0.0, f64::max);
        let verdict = if worst <= 0.5 {
            "meets the 0.5x aim"
        } else if worst < 1.0 {
            "meets the target"
        } else {
            "BELOW the target"
        };
        let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        out.push_str(&format!(
            "  target: {} listeners, {} p50 / best socket p50 per listener = {} ({verdict}; \
             target < 1, aim <= 0.5)\n",
            g.listeners,
            t.name(),
            shown.join(" / ")
        ));
    }
    if has(Transport::ShmcastTokio) && has(Transport::Shmcast) {
        let ratios: Vec<Summary> = (0..g.listeners)
            .map(|l| {
                Summary::ratio(
                    &g.rep_p50s(Transport::ShmcastTokio, l),
                    &g.rep_p50s(Transport::Shmcast, l),
                )
            })
            .collect();
        let worst = ratios.iter().map(|r| r.median).fold(0.0, f64::max);
        let shown: Vec<String> = ratios.iter().map(|r| r.show(1.0, 2)).collect();
        out.push_str(&format!(
            "  target: {} listener(s), shmcast-tokio p50 / shmcast p50 per listener = {} \
             (target <= 1.3: {})\n",
            g.listeners,
            shown.join(" / "),
            if worst <= 1.3 { "met" } else { "NOT met" }
        ));
    }
    if has(Transport::Shmcast) {
        let s = g.per_msg(Transport::Shmcast, |x| x.publisher_syscalls, messages);
        let waits = g.per_msg(Transport::Shmcast, |x| x.publisher_space_syscalls, messages);
        out.push_str(&format!(
            "  target: publisher syscalls/msg with every listener parked (shmcast) = {s:.3}{} \
             (target <= 1: {})\n",
            space_note(waits),
            if s <= 1.0 { "met" } else { "NOT met" }
        ));
    }
    if has(Transport::ShmcastPoll) {
        let s = g.per_msg(Transport::ShmcastPoll, |x| x.publisher_syscalls, messages);
        out.push_str(&format!(
            "  note: shmcast-poll makes {s:.3} publisher syscalls/msg: one doorbell per listener \
             waiting in an event loop (the <= 1 target is for listeners blocked in recv)\n"
        ));
    }
    if has(Transport::ShmcastSpin) {
        let s = g.per_msg(Transport::ShmcastSpin, |x| x.publisher_syscalls, messages);
        let waits = g.per_msg(
            Transport::ShmcastSpin,
            |x| x.publisher_space_syscalls,
            messages,
        );
        out.push_str(&format!(
            "  target: publisher syscalls/msg with no listener parked (shmcast-spin) = {s:.4}{} \
             (target 0: {})\n",
            space_note(waits),
            if s == 0.0 { "met" } else { "NOT met" }
        ));
        if g.listeners == 1 {
            let p = g.percentiles(Transport::ShmcastSpin, 0).p50;
            out.push_str(&format!(
                "  target: shmcast-spin, 1 listener, p50 = {p:.2} µs (target < 1 µs: {})\n",
                if p < 1.0 { "met" } else { "NOT met" }
            ));
        }
    }
    if let Some(l) = limits {
        if has(Transport::Shmcast) {
            let p = g.percentiles(Transport::Shmcast, 0).p50;
            out.push_str(&format!(
                "  limits: shmcast listener 1 p50 = {:.1}x a one-way eventfd wake (half the \
                 ping-pong round trip, {:.2} µs)\n",
                p * 1000.0 / (l.eventfd_rtt_ns / 2.0),
                l.eventfd_rtt_ns / 2000.0
            ));
        }
        if has(Transport::ShmcastSpin) && g.listeners < l.cores {
            let p = g.percentiles(Transport::ShmcastSpin, 0).p50;
            out.push_str(&format!(
                "  limits: shmcast-spin listener 1 p50 = {:.1}x a one-way cache-line transfer \
                 ({:.0} ns)\n",
                p * 1000.0 / (l.cacheline_rtt_ns / 2.0),
                l.cacheline_rtt_ns / 2.0
            ));
        }
    }
    out
}

/// ", of which N waits for ring space" when there were any.
fn space_note(per_msg: f64) -> String {
    if per_msg > 0.0 {
        format!(", of which {per_msg:.4} waiting for ring space")
    } else {
        String::new()
    }
}

fn chart(o: &Options, g: &Group) -> String {
    let groups: Vec<String> = g.transports.iter().map(|t| t.name().to_owned()).collect();
    let series: Vec<svg::Series<Option<svg::Bar>>> = (0..g.listeners)
        .map(|l| svg::Series {
            name: format!("listener {}", l + 1),
            values: g
                .transports
                .iter()
                .map(|&t| {
                    let p = g.percentiles(t, l);
                    Some(svg::Bar {
                        value: p.p50,
                        lo: p.p50,
                        hi: p.p99,
                    })
                })
                .collect(),
        })
        .collect();
    svg::bar_chart(
        &format!(
            "latency: 8-byte timestamp every {} µs, {} listener(s); bar p50, whisker to p99",
            o.interval.as_micros(),
            g.listeners
        ),
        "µs (log scale)",
        true,
        &groups,
        &series,
    )
}
