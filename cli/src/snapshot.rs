//! How a topic's snapshot is shown: as JSON (`--json`) and as text cells, shared by `list` and
//! `stat`.

use serde_json::{Value, json};
use shmcast::{Contract, MessageType, Mode, ProcessInfo, SubscriberRow, TopicInfo};

/// A subscriber's mode as shown: gating, lossy, or demoted (a gating one made lossy).
pub fn mode(row: &SubscriberRow) -> &'static str {
    match row.mode {
        _ if row.demoted() => "demoted",
        Mode::Gating => "gating",
        _ => "lossy",
    }
}

/// The contract in a few words: `bytes`, `schema NAME vN`, `pod NAME (S bytes)`.
pub fn contract(c: &Contract) -> String {
    match &c.message {
        MessageType::Bytes => "bytes".into(),
        MessageType::Schema { name, version } => format!("schema {name} v{version}"),
        MessageType::Pod { name, size, .. } => format!("pod {name} ({size} B)"),
        other => other.to_string(),
    }
}

pub fn contract_json(c: &Contract) -> Value {
    let mut v = match &c.message {
        MessageType::Bytes => json!({"message": "bytes"}),
        MessageType::Schema { name, version } => {
            json!({"message": "schema", "name": name, "version": version})
        }
        MessageType::Pod { name, size, align } => {
            json!({"message": "pod", "name": name, "size": size, "align": align})
        }
        other => json!({"message": other.to_string()}),
    };
    v["max_message"] = json!(c.max_message);
    v
}

pub fn process_json(p: &ProcessInfo) -> Value {
    json!({
        "pid": p.pid,
        "uid": p.uid,
        "exe": p.exe.as_ref().map(|e| e.display().to_string()),
    })
}

/// Where the topic's messages come from, as shown: `imported` (a bridge's import, say) or
/// `local`.
pub fn origin(info: &TopicInfo) -> &'static str {
    if info.imported { "imported" } else { "local" }
}

/// The pid as shown (`-` outside our pid namespace).
pub fn pid(p: &ProcessInfo) -> String {
    p.pid.map_or("-".into(), |p| p.to_string())
}

/// The executable's file name as shown in tables (`-` when unknown).
pub fn exe(p: &ProcessInfo) -> String {
    p.exe
        .as_ref()
        .and_then(|e| e.file_name())
        .map_or("-".into(), |n| n.to_string_lossy().into_owned())
}

/// What a subscriber is doing: `parked` in a wait for messages, `stopped` (its process
/// stopped by a signal or a debugger, as this machine's /proc says), else `busy`.
pub fn state(r: &SubscriberRow) -> &'static str {
    if r.parked {
        "parked"
    } else if r.process.pid.is_some_and(crate::peer::stopped) {
        "stopped"
    } else {
        "busy"
    }
}

pub fn row_json(r: &SubscriberRow) -> Value {
    let mut v = process_json(&r.process);
    let extra = json!({
        "id": r.id,
        "mode": mode(r),
        "requested": if r.requested == Mode::Gating { "gating" } else { "lossy" },
        "parked": r.parked,
        "state": state(r),
        "lag_messages": r.lag_messages,
        "lag_bytes": r.lag_bytes,
        "received": r.received,
        "lagged": r.lagged,
        "cursor": r.cursor,
    });
    if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    v
}

/// The whole snapshot of `topic` as JSON.
pub fn info_json(topic: &str, info: &TopicInfo) -> Value {
    let c = &info.counters;
    json!({
        "topic": topic,
        "publisher": process_json(&info.publisher),
        "uptime_s": info.uptime.as_secs_f64(),
        "contract": contract_json(&info.contract),
        "capacity": info.capacity,
        "messages": c.messages,
        "wake_syscalls": c.wake_syscalls,
        "full": c.full,
        "demotions": c.demotions,
        "admitted": c.admitted,
        "refused": c.refused,
        "departed": c.departed,
        "upstream_lost": c.upstream_lost,
        "early_wraps": c.early_wraps,
        "imported": info.imported,
        "subscriber_count": info.subscriber_count,
        "subscribers": info.subscribers.iter().map(row_json).collect::<Vec<_>>(),
    })
}
