//! What a bridge does: its Zenoh session (mode, endpoints, scouting, key prefix) and, per
//! topic, the direction and the delivery choice. Built in code, from `shmcast bridge` flags
//! ([`TopicConfig::parse_spec`]) or from a JSON file ([`BridgeConfig::from_json`]).
//!
//! [`BridgeConfig::validate`] refuses every configuration that could loop: a topic both
//! exported and imported, an export key that an import key matches, the same key imported
//! twice. Together with the importer's refusal of its own session's publications, a bridge
//! never re-exports what it imported.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;
use shmcast::MessageType;
use zenoh::key_expr::KeyExpr;

/// Which way a topic crosses the bridge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Local topic → Zenoh.
    #[default]
    Export,
    /// Zenoh → local topic.
    Import,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Export => "export",
            Direction::Import => "import",
        })
    }
}

/// What a bridged topic guarantees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reliability {
    /// Nothing lost while the path exists: the exporter is a gating subscriber and puts with
    /// Zenoh's blocking congestion control, and waits for a matching Zenoh subscriber before it
    /// reads; the importer waits for local ring space. The local publisher feels the network's
    /// backpressure, bounded by its own stall bound.
    #[default]
    Reliable,
    /// Never slows the local publisher: the exporter is a lossy subscriber and puts with
    /// Zenoh's dropping congestion control; the importer drops a message when its ring is full.
    /// Every loss shows up as a counted gap.
    Lossy,
}

impl fmt::Display for Reliability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reliability::Reliable => "reliable",
            Reliability::Lossy => "lossy",
        })
    }
}

/// How the bridge's Zenoh session joins the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SessionMode {
    /// A peer: talks directly to the peers it connects to or that connect to it.
    #[default]
    Peer,
    /// A client of a Zenoh router (the `connect` endpoints).
    Client,
}

impl fmt::Display for SessionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SessionMode::Peer => "peer",
            SessionMode::Client => "client",
        })
    }
}

/// One bridged topic.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicConfig {
    /// The local topic (a name in the topic directory).
    pub topic: String,
    /// Which way it crosses.
    pub direction: Direction,
    /// What it guarantees.
    pub reliability: Reliability,
    /// The Zenoh key expression (`None`: `<prefix>/<topic>`).
    pub key: Option<String>,
    /// Import: the message type the local topic declares (`None`: the first remote
    /// message's). A remote message of another contract is refused.
    pub message: Option<MessageType>,
    /// Import: the local topic's maximum message (`None`: the first remote message's).
    pub max_message: Option<usize>,
    /// Import: the local ring's capacity in bytes (`None`: 1 MiB, or more for large messages).
    pub capacity: Option<u64>,
}

impl TopicConfig {
    /// `topic` bridged in `direction`, reliable, on the default key.
    pub fn new(topic: impl Into<String>, direction: Direction) -> TopicConfig {
        TopicConfig {
            topic: topic.into(),
            direction,
            reliability: Reliability::Reliable,
            key: None,
            message: None,
            max_message: None,
            capacity: None,
        }
    }

    /// With `reliability`.
    pub fn reliability(mut self, reliability: Reliability) -> TopicConfig {
        self.reliability = reliability;
        self
    }

    /// On the key expression `key`.
    pub fn key(mut self, key: impl Into<String>) -> TopicConfig {
        self.key = Some(key.into());
        self
    }

    /// Import: declaring `message` locally, refusing remote messages of any other type.
    pub fn message(mut self, message: MessageType) -> TopicConfig {
        self.message = Some(message);
        self
    }

    /// Import: with a maximum message of `bytes`.
    pub fn max_message(mut self, bytes: usize) -> TopicConfig {
        self.max_message = Some(bytes);
        self
    }

    /// Import: with a local ring of `bytes`.
    pub fn capacity(mut self, bytes: u64) -> TopicConfig {
        self.capacity = Some(bytes);
        self
    }

    /// The key expression under `prefix`.
    pub fn key_under(&self, prefix: &str) -> String {
        match &self.key {
            Some(k) => k.clone(),
            None if prefix.is_empty() => self.topic.clone(),
            None => format!("{}/{}", prefix.trim_end_matches('/'), self.topic),
        }
    }

    /// Parses a command-line topic: `TOPIC[,OPTION...]` with the options `reliable`, `lossy`,
    /// `key=KEYEXPR`, `bytes`, `schema=NAME@VERSION`, `pod=NAME:SIZE:ALIGN`,
    /// `max-message=BYTES`, `capacity=BYTES`.
    pub fn parse_spec(spec: &str, direction: Direction) -> Result<TopicConfig, ConfigError> {
        let mut parts = spec.split(',');
        let topic = parts.next().unwrap_or_default();
        let mut t = TopicConfig::new(topic, direction);
        for part in parts {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            t.set(name, value)?;
        }
        t.check()?;
        Ok(t)
    }

    fn from_json(v: &Value) -> Result<TopicConfig, ConfigError> {
        let obj = v
            .as_object()
            .ok_or_else(|| ConfigError::field("topics[]", "each topic is an object"))?;
        let topic = obj
            .get("topic")
            .and_then(Value::as_str)
            .ok_or_else(|| ConfigError::field("topic", "a string naming the local topic"))?;
        let direction = match obj.get("direction").and_then(Value::as_str) {
            Some("export") => Direction::Export,
            Some("import") => Direction::Import,
            _ => return Err(ConfigError::field("direction", "\"export\" or \"import\"")),
        };
        let mut t = TopicConfig::new(topic, direction);
        for (name, value) in obj {
            if name == "topic" || name == "direction" {
                continue;
            }
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(ConfigError::field_owned(name, "a string or a number")),
            };
            let name = name.replace('_', "-");
            if name == "reliability" {
                t.set(&text, "")?;
            } else {
                t.set(&name, &text)?;
            }
        }
        t.check()?;
        Ok(t)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let number = |field: &'static str| {
            value
                .parse::<u64>()
                .map_err(|_| ConfigError::field(field, "a number of bytes"))
        };
        match name {
            "reliable" => self.reliability = Reliability::Reliable,
            "lossy" => self.reliability = Reliability::Lossy,
            "key" => self.key = Some(value.to_owned()),
            "bytes" => self.message = Some(MessageType::Bytes),
            "schema" => {
                let (n, v) = value
                    .rsplit_once('@')
                    .and_then(|(n, v)| Some((n, v.parse::<u32>().ok()?)))
                    .ok_or_else(|| ConfigError::field("schema", "NAME@VERSION"))?;
                self.message = Some(MessageType::schema(n, v));
            }
            "pod" => {
                let mut it = value.rsplitn(3, ':');
                let (align, size, n) = (it.next(), it.next(), it.next());
                let parsed = (|| {
                    Some(MessageType::Pod {
                        name: n?.to_owned(),
                        size: size?.parse().ok()?,
                        align: align?.parse().ok()?,
                    })
                })();
                self.message =
                    Some(parsed.ok_or_else(|| ConfigError::field("pod", "NAME:SIZE:ALIGN"))?);
            }
            "max-message" => self.max_message = Some(number("max-message")? as usize),
            "capacity" => self.capacity = Some(number("capacity")?),
            _ => {
                return Err(ConfigError::field_owned(
                    name,
                    "unknown option (reliable, lossy, key=, bytes, schema=, pod=, \
                     max-message=, capacity=)",
                ));
            }
        }
        Ok(())
    }

    fn check(&self) -> Result<(), ConfigError> {
        if self.topic.is_empty() {
            return Err(ConfigError::field("topic", "must not be empty"));
        }
        if self.direction == Direction::Export
            && (self.message.is_some() || self.max_message.is_some() || self.capacity.is_some())
        {
            return Err(ConfigError::field(
                "export",
                "the contract and capacity are the local publisher's: set them only on imports",
            ));
        }
        Ok(())
    }
}

/// Everything a bridge does.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeConfig {
    /// Peer or client.
    pub mode: SessionMode,
    /// Zenoh endpoints to listen on (`tcp/HOST:PORT`).
    pub listen: Vec<String>,
    /// Zenoh endpoints to connect to.
    pub connect: Vec<String>,
    /// Whether Zenoh's multicast and gossip scouting find peers (off: only the endpoints).
    pub scouting: bool,
    /// The key prefix of topics without a key of their own.
    pub prefix: String,
    /// The local topic directory (`None`: as every shmcast program resolves it).
    pub directory: Option<PathBuf>,
    /// The bridged topics.
    pub topics: Vec<TopicConfig>,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        BridgeConfig {
            mode: SessionMode::Peer,
            listen: Vec::new(),
            connect: Vec::new(),
            scouting: false,
            prefix: "shmcast".to_owned(),
            directory: None,
            topics: Vec::new(),
        }
    }
}

impl BridgeConfig {
    /// Reads a JSON configuration: an object with the optional fields `mode` (`"peer"` or
    /// `"client"`), `listen` and `connect` (arrays of endpoints), `scouting` (boolean),
    /// `prefix`, `directory`, and `topics`, an array of objects with `topic`, `direction`
    /// (`"export"` or `"import"`) and the options of [`TopicConfig::parse_spec`] as fields
    /// (`"reliability": "lossy"`, `"key": "..."`, `"schema": "NAME@VERSION"`,
    /// `"max_message": 4096`, ...).
    pub fn from_json(text: &str) -> Result<BridgeConfig, ConfigError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let obj = v
            .as_object()
            .ok_or_else(|| ConfigError::field("configuration", "a JSON object"))?;
        let mut c = BridgeConfig::default();
        for (name, value) in obj {
            match name.as_str() {
                "mode" => {
                    c.mode = match value.as_str() {
                        Some("peer") => SessionMode::Peer,
                        Some("client") => SessionMode::Client,
                        _ => return Err(ConfigError::field("mode", "\"peer\" or \"client\"")),
                    }
                }
                "listen" => c.listen = strings(value, "listen")?,
                "connect" => c.connect = strings(value, "connect")?,
                "scouting" => {
                    c.scouting = value
                        .as_bool()
                        .ok_or_else(|| ConfigError::field("scouting", "true or false"))?
                }
                "prefix" => {
                    c.prefix = value
                        .as_str()
                        .ok_or_else(|| ConfigError::field("prefix", "a string"))?
                        .to_owned()
                }
                "directory" => {
                    c.directory = Some(
                        value
                            .as_str()
                            .ok_or_else(|| ConfigError::field("directory", "a path"))?
                            .into(),
                    )
                }
                "topics" => {
                    let list = value
                        .as_array()
                        .ok_or_else(|| ConfigError::field("topics", "an array of topics"))?;
                    for t in list {
                        c.topics.push(TopicConfig::from_json(t)?);
                    }
                }
                other => return Err(ConfigError::field_owned(other, "unknown field")),
            }
        }
        Ok(c)
    }

    /// Checks the keys and that nothing can loop: no topic both exported and imported, no
    /// import key that matches an export key, no key or topic bridged twice the same way.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut keys = Vec::new();
        for t in &self.topics {
            let key = t.key_under(&self.prefix);
            let ke = KeyExpr::try_from(key.clone()).map_err(|e| ConfigError::Key {
                key: key.clone(),
                reason: e.to_string(),
            })?;
            if key.contains('*') || key.contains('$') {
                return Err(ConfigError::Key {
                    key,
                    reason: "wildcards are refused: one key carries one topic's sequence".into(),
                });
            }
            keys.push((t, ke));
        }
        for (i, (a, ka)) in keys.iter().enumerate() {
            for (b, kb) in &keys[i + 1..] {
                if a.topic == b.topic {
                    return Err(if a.direction == b.direction {
                        ConfigError::Duplicate {
                            what: format!("topic {:?}", a.topic),
                        }
                    } else {
                        ConfigError::Loop {
                            why: format!(
                                "topic {:?} is both exported and imported: what it imports \
                                 would go out again",
                                a.topic
                            ),
                        }
                    });
                }
                if ka.intersects(kb) {
                    return Err(if a.direction == b.direction {
                        ConfigError::Duplicate {
                            what: format!("key {ka}"),
                        }
                    } else {
                        ConfigError::Loop {
                            why: format!(
                                "key {ka} ({} {:?}) meets key {kb} ({} {:?}): this bridge \
                                 would import its own exports",
                                a.direction, a.topic, b.direction, b.topic
                            ),
                        }
                    });
                }
            }
        }
        Ok(())
    }
}

fn strings(v: &Value, field: &'static str) -> Result<Vec<String>, ConfigError> {
    v.as_array()
        .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_owned)).collect())
        .ok_or_else(|| ConfigError::field(field, "an array of endpoint strings"))
}

/// Why a configuration is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file is not JSON.
    Json(String),
    /// A field or option with a value of the wrong form.
    Field {
        /// The field or option.
        field: String,
        /// What it must be.
        expected: String,
    },
    /// A key that is not a Zenoh key expression the bridge accepts.
    Key {
        /// The key.
        key: String,
        /// Why.
        reason: String,
    },
    /// A configuration that could send imported messages out again.
    Loop {
        /// How.
        why: String,
    },
    /// The same topic or key bridged twice in one direction.
    Duplicate {
        /// Which.
        what: String,
    },
}

impl ConfigError {
    fn field(field: &'static str, expected: &'static str) -> ConfigError {
        ConfigError::field_owned(field, expected)
    }

    fn field_owned(field: &str, expected: &str) -> ConfigError {
        ConfigError::Field {
            field: field.to_owned(),
            expected: expected.to_owned(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Json(e) => write!(f, "configuration is not valid JSON: {e}"),
            ConfigError::Field { field, expected } => write!(f, "{field}: {expected}"),
            ConfigError::Key { key, reason } => write!(f, "key {key:?}: {reason}"),
            ConfigError::Loop { why } => write!(f, "refused, it could loop: {why}"),
            ConfigError::Duplicate { what } => write!(f, "{what} is bridged twice"),
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge(topics: Vec<TopicConfig>) -> BridgeConfig {
        BridgeConfig {
            topics,
            ..BridgeConfig::default()
        }
    }

    #[test]
    fn specs_parse() {
        let t = TopicConfig::parse_spec(
            "ticks,lossy,key=a/b,schema=proto:Tick@3,max-message=64",
            Direction::Import,
        )
        .unwrap();
        assert_eq!(t.reliability, Reliability::Lossy);
        assert_eq!(t.key.as_deref(), Some("a/b"));
        assert_eq!(t.message, Some(MessageType::schema("proto:Tick", 3)));
        assert_eq!(t.max_message, Some(64));
        let p = TopicConfig::parse_spec("x,pod=Tick:16:8", Direction::Import).unwrap();
        assert_eq!(
            p.message,
            Some(MessageType::Pod {
                name: "Tick".into(),
                size: 16,
                align: 8
            })
        );
        for bad in [
            "",
            "x,nope",
            "x,schema=abc",
            "x,pod=T:1",
            "x,max-message=lots",
        ] {
            assert!(
                TopicConfig::parse_spec(bad, Direction::Import).is_err(),
                "{bad}"
            );
        }
        assert!(TopicConfig::parse_spec("x,schema=a@1", Direction::Export).is_err());
    }

    #[test]
    fn loops_are_refused() {
        let both = bridge(vec![
            TopicConfig::new("t", Direction::Export),
            TopicConfig::new("t", Direction::Import).key("other/t"),
        ]);
        assert!(matches!(both.validate(), Err(ConfigError::Loop { .. })));
        let same_key = bridge(vec![
            TopicConfig::new("a", Direction::Export).key("k/x"),
            TopicConfig::new("b", Direction::Import).key("k/x"),
        ]);
        assert!(matches!(same_key.validate(), Err(ConfigError::Loop { .. })));
        let twice = bridge(vec![
            TopicConfig::new("a", Direction::Import).key("k/x"),
            TopicConfig::new("b", Direction::Import).key("k/x"),
        ]);
        assert!(matches!(
            twice.validate(),
            Err(ConfigError::Duplicate { .. })
        ));
        let wild = bridge(vec![TopicConfig::new("a", Direction::Import).key("k/*")]);
        assert!(matches!(wild.validate(), Err(ConfigError::Key { .. })));
        let fine = bridge(vec![
            TopicConfig::new("a", Direction::Export),
            TopicConfig::new("b", Direction::Import),
        ]);
        fine.validate().unwrap();
    }

    #[test]
    fn json_reads() {
        let c = BridgeConfig::from_json(
            r#"{"mode": "client", "connect": ["tcp/127.0.0.1:7447"], "scouting": false,
                "prefix": "site", "topics": [
                  {"topic": "a", "direction": "export", "reliability": "lossy"},
                  {"topic": "b", "direction": "import", "schema": "s@2", "max_message": 128}]}"#,
        )
        .unwrap();
        assert_eq!(c.mode, SessionMode::Client);
        assert_eq!(c.topics[0].reliability, Reliability::Lossy);
        assert_eq!(c.topics[1].max_message, Some(128));
        assert_eq!(c.topics[1].key_under(&c.prefix), "site/b");
        assert!(BridgeConfig::from_json("{\"bogus\": 1}").is_err());
        assert!(BridgeConfig::from_json("[").is_err());
    }
}
