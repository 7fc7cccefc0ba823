//! The bridge's Zenoh session, configured from a [`BridgeConfig`]: mode, endpoints, scouting;
//! and the watch on its `connect` endpoints ([`watch`]).
//!
//! Zenoh retries a `connect` endpoint it cannot reach by itself, silently (its only trace is a
//! debug log), and its API tells which peers are connected, not which endpoint failed. So the
//! watch looks at what it can see: while the session has no peer or router at all for
//! [`GRACE`], none of the endpoints has been reached, and it reports
//! [`Event::Unreachable`] once; when a peer or router connects it reports
//! [`Event::Reached`], and a later loss is reported once more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use zenoh::Wait;

use crate::config::{BridgeConfig, SessionMode};
use crate::endpoint::{clean, unresolvable};
use crate::event::{Event, Sink};

/// How long the session may have no peer before the watch reports its endpoints unreachable:
/// longer than a refused or a working connection takes, so that a bridge started a moment
/// before its peer says nothing.
pub(crate) const GRACE: Duration = Duration::from_secs(3);
/// How often the watch looks.
const TICK: Duration = Duration::from_millis(100);

/// Opens the session `config` describes (already validated: its endpoints are well formed).
pub(crate) fn open(config: &BridgeConfig) -> Result<zenoh::Session, String> {
    // A `connect` endpoint that does not resolve is retried like one that does not answer (and
    // reported by the watch); a `listen` endpoint that does not resolve ends the start, named.
    for endpoint in &config.listen {
        if let Some(why) = unresolvable(endpoint) {
            return Err(format!("cannot listen on {endpoint}: {why}"));
        }
    }
    let mut z = zenoh::Config::default();
    let json = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
    let scouting = if config.scouting { "true" } else { "false" };
    let settings = [
        ("mode", format!("{:?}", config.mode.to_string())),
        ("listen/endpoints", json(&config.listen)),
        ("connect/endpoints", json(&config.connect)),
        ("scouting/multicast/enabled", scouting.to_owned()),
        ("scouting/gossip/enabled", scouting.to_owned()),
    ];
    for (path, value) in settings {
        z.insert_json5(path, &value)
            .map_err(|e| format!("Zenoh refused {path} = {value}: {}", json5_message(&e)))?;
    }
    zenoh::open(z).wait().map_err(|e| {
        let e = clean(&e.to_string());
        if config.mode == SessionMode::Client && e.starts_with("Unable to connect") {
            format!(
                "client mode: no router can be reached at {} (start the router first)",
                config.connect.join(", ")
            )
        } else if let Some((endpoint, reason)) = listener_failure(&e) {
            format!("cannot listen on {endpoint}: {reason}")
        } else {
            format!("opening the Zenoh session: {e}")
        }
    })
}

/// The endpoint and the system's reason in Zenoh's "Can not create a new TCP listener bound
/// to ENDPOINT: [ADDRESS: REASON]".
fn listener_failure(e: &str) -> Option<(&str, &str)> {
    let rest = e.strip_prefix("Can not create a new TCP listener bound to ")?;
    let (endpoint, inner) = rest.split_once(": [")?;
    let inner = inner.strip_suffix(']')?;
    let reason = inner
        .split_once(": ")
        .map_or(inner, |(_address, reason)| reason);
    Some((endpoint, reason))
}

/// The message inside Zenoh's configuration error, which displays as a `Debug` dump.
fn json5_message(e: &impl std::fmt::Display) -> String {
    let text = e.to_string();
    let inner = text
        .split_once("msg: \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map_or(text.as_str(), |(msg, _)| msg);
    clean(inner)
}

/// Watches whether the session reaches any of the `connect` endpoints, until `stop`; `None`
/// when there are none to watch.
pub(crate) fn watch(
    session: &zenoh::Session,
    connect: &[String],
    stop: Arc<AtomicBool>,
    sink: Sink,
) -> Result<Option<JoinHandle<()>>, String> {
    if connect.is_empty() {
        return Ok(None);
    }
    let session = session.clone();
    let endpoints = connect.to_vec();
    std::thread::Builder::new()
        .name("connect-watch".into())
        .spawn(move || {
            let connected = || {
                let info = session.info();
                info.peers_zid().wait().next().is_some()
                    || info.routers_zid().wait().next().is_some()
            };
            // Since when nothing is connected, and whether that was reported.
            let mut alone = Some(Instant::now());
            let mut reported = false;
            while !stop.load(Ordering::Relaxed) {
                if connected() {
                    if reported {
                        sink(Event::Reached {
                            endpoints: endpoints.clone(),
                        });
                    }
                    alone = None;
                    reported = false;
                } else {
                    let since = *alone.get_or_insert_with(Instant::now);
                    if !reported && since.elapsed() >= GRACE {
                        sink(Event::Unreachable {
                            endpoints: endpoints.clone(),
                        });
                        reported = true;
                    }
                }
                std::thread::sleep(TICK);
            }
        })
        .map(Some)
        .map_err(|e| format!("starting the connection watch: {e}"))
}
