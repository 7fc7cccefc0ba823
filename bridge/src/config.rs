//! What a bridge does: its Zenoh session (mode, endpoints, scouting, key prefix) and, per
//! topic, the direction and the delivery choice. Built in code, from `shmcast bridge` flags
//! ([`TopicConfig::parse_spec`], in `spec`) or from a JSON file ([`BridgeConfig::from_json`]).
//!
//! [`BridgeConfig::validate`] refuses every configuration that could loop: a topic both
//! exported and imported, an export key that an import key matches, the same key imported
//! twice. Together with the importer's refusal of its own session's publications, a bridge
//! never re-exports what it imported. Its errors name the topics by their place in
//! [`BridgeConfig::topics`], which a caller maps back to its flags or file.

use std::fmt;
use std::path::PathBuf;

use shmcast::{MAX_CAPACITY, MIN_CAPACITY, MessageType, RingConfig};
use zenoh::key_expr::KeyExpr;

use crate::contract;
use crate::endpoint::{check_endpoint, clean};

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
            None => format!("{}/{}", prefix.trim_end_matches('/'), self.topic),
        }
    }

    /// Checks what a topic alone can be checked for: its name (as `shmcast pub` and `echo`
    /// take it), its key, an import's capacity and maximum message against the ring's limits,
    /// and its message type by the rules a publisher's declaration follows (`contract`).
    pub(crate) fn check(&self) -> Result<(), ConfigError> {
        check_topic_name(&self.topic)?;
        if let Some(key) = &self.key {
            check_key(key)?;
        } else if self.topic.contains('/') {
            return Err(ConfigError::field_owned(
                "key",
                &format!(
                    "topic {:?} is a socket path, which is no part of a Zenoh key: give it a \
                     key of its own",
                    self.topic
                ),
            ));
        }
        if self.direction == Direction::Export {
            let option = (self.message.as_ref().map(message_option))
                .or(self.max_message.map(|_| "max-message"))
                .or(self.capacity.map(|_| "capacity"));
            if let Some(option) = option {
                return Err(ConfigError::field(
                    option,
                    "only an import declares a message type, a maximum message or a ring: an \
                     export carries what its local publisher declares",
                ));
            }
        }
        if let Some(c) = self.capacity
            && (!c.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&c))
        {
            return Err(ConfigError::field_owned(
                "capacity",
                &format!(
                    "{c} is not a power of two from {MIN_CAPACITY} to {MAX_CAPACITY} bytes \
                     (such as {})",
                    c.clamp(MIN_CAPACITY, MAX_CAPACITY).next_power_of_two()
                ),
            ));
        }
        if let Some(m) = self.max_message {
            let limit = RingConfig::payload_limit(self.capacity.unwrap_or(MAX_CAPACITY));
            if m == 0 || m as u64 > limit {
                let of = match self.capacity {
                    Some(c) => format!("a {c}-byte ring holds messages up to {limit} bytes"),
                    None => format!("messages are at most {limit} bytes"),
                };
                return Err(ConfigError::field_owned(
                    "max-message",
                    &format!("{m} is not from 1 to {limit}: {of}"),
                ));
            }
        }
        if let Some(m) = &self.message {
            contract::check(m, self.max_message, self.capacity)
                .map_err(|why| ConfigError::field_owned(message_option(m), &why))?;
        }
        Ok(())
    }
}

/// The option that declares `message`.
fn message_option(message: &MessageType) -> &'static str {
    match message {
        MessageType::Schema { .. } => "schema",
        MessageType::Pod { .. } => "pod",
        _ => "bytes",
    }
}

/// A topic as `Publisher::builder` and `Subscriber::builder` take it ([`shmcast::check_topic`]).
fn check_topic_name(topic: &str) -> Result<(), ConfigError> {
    if topic.is_empty() {
        return Err(ConfigError::field("topic", "must not be empty"));
    }
    shmcast::check_topic(topic).map_err(|e| ConfigError::field_owned("topic", &e.to_string()))
}

/// A key one topic can travel on: a Zenoh key expression without wildcards.
fn check_key(key: &str) -> Result<KeyExpr<'static>, ConfigError> {
    // Before Zenoh's own check, whose words for a wildcard it refuses (`a/$*`: "empty chunks
    // are forbidden") do not say what the bridge wants instead.
    if key.contains('*') || key.contains('$') {
        return Err(ConfigError::Key {
            key: key.to_owned(),
            reason: "wildcards (*, **, $*) are refused: one key carries one topic's sequence"
                .into(),
        });
    }
    KeyExpr::try_from(key.to_owned()).map_err(|e| ConfigError::Key {
        key: key.to_owned(),
        reason: format!(
            "not a Zenoh key expression (chunks of characters other than * $ ? # between \
             single slashes): {}",
            clean(&e.to_string())
        ),
    })
}

/// Why an empty `directory` is refused.
pub(crate) const EMPTY_DIRECTORY: &str = "must not be empty: give the topic directory's absolute \
     path, or leave it out (topics then resolve as in every shmcast program)";

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
    /// The key prefix of topics without a key of their own (not empty).
    pub prefix: String,
    /// The local topic directory (`None`: as every shmcast program resolves it; not empty).
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
    /// Checks a key prefix: not empty, and a Zenoh key expression without wildcards (a
    /// trailing `/` is dropped).
    pub fn check_prefix(prefix: &str) -> Result<(), ConfigError> {
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.is_empty() {
            return Err(ConfigError::field(
                "prefix",
                "must not be empty: topics travel on PREFIX/TOPIC (give a topic its own key \
                 to put it elsewhere)",
            ));
        }
        check_key(trimmed).map(drop).map_err(|e| match e {
            ConfigError::Key { reason, .. } => {
                ConfigError::field_owned("prefix", &format!("not a key prefix: {reason}"))
            }
            e => e,
        })
    }

    /// Checks the endpoints (as [`check_endpoint`] says), that a client has a router to join,
    /// that the directory, if given, is not empty, the topics and their keys, and that nothing
    /// can loop: no topic both exported and imported, no import key that matches an export
    /// key, no key or topic bridged twice the same way.
    pub fn validate(&self) -> Result<(), ConfigError> {
        BridgeConfig::check_prefix(&self.prefix)?;
        for (field, list) in [("listen", &self.listen), ("connect", &self.connect)] {
            for e in list {
                check_endpoint(e).map_err(|why| ConfigError::Field {
                    field: field.to_owned(),
                    expected: format!("{e:?}: {why}"),
                })?;
            }
        }
        if let Some(e) = repeated(&self.listen) {
            return Err(ConfigError::Field {
                field: "listen".into(),
                expected: format!("{e:?} is given twice: one endpoint is listened on once"),
            });
        }
        if self
            .directory
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(ConfigError::field("directory", EMPTY_DIRECTORY));
        }
        if self.mode == SessionMode::Client && self.connect.is_empty() && !self.scouting {
            return Err(ConfigError::field(
                "mode",
                "a client joins through a router: give the router's endpoint to connect to \
                 (or turn scouting on to find one)",
            ));
        }
        let mut keys = Vec::new();
        for (i, t) in self.topics.iter().enumerate() {
            t.check().map_err(|e| e.within(&format!("topics[{i}]")))?;
            let ke = check_key(&t.key_under(&self.prefix))?;
            keys.push((t, ke));
        }
        for (i, (a, ka)) in keys.iter().enumerate() {
            for (j, (b, kb)) in keys.iter().enumerate().skip(i + 1) {
                let topics = [i, j];
                if a.topic == b.topic {
                    return Err(if a.direction == b.direction {
                        ConfigError::Duplicate {
                            what: format!("topic {:?}", a.topic),
                            topics,
                        }
                    } else {
                        ConfigError::Loop {
                            why: format!(
                                "topic {:?} is both exported and imported: what it imports \
                                 would go out again",
                                a.topic
                            ),
                            topics,
                        }
                    });
                }
                if ka.intersects(kb) {
                    return Err(if a.direction == b.direction {
                        ConfigError::Duplicate {
                            what: format!("key {ka}"),
                            topics,
                        }
                    } else {
                        ConfigError::Loop {
                            why: format!(
                                "key {ka} ({} {:?}) meets key {kb} ({} {:?}): this bridge \
                                 would import its own exports",
                                a.direction, a.topic, b.direction, b.topic
                            ),
                            topics,
                        }
                    });
                }
            }
        }
        Ok(())
    }
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
        /// The two topics involved, by their index in [`BridgeConfig::topics`].
        topics: [usize; 2],
    },
    /// The same topic or key bridged twice in one direction.
    Duplicate {
        /// Which.
        what: String,
        /// The two topics involved, by their index in [`BridgeConfig::topics`].
        topics: [usize; 2],
    },
}

impl ConfigError {
    pub(crate) fn field(field: &'static str, expected: &'static str) -> ConfigError {
        ConfigError::field_owned(field, expected)
    }

    pub(crate) fn field_owned(field: &str, expected: &str) -> ConfigError {
        ConfigError::Field {
            field: field.to_owned(),
            expected: expected.to_owned(),
        }
    }

    /// The same error, its field inside `outer` (`topics[2]`).
    pub(crate) fn within(self, outer: &str) -> ConfigError {
        match self {
            ConfigError::Field { field, expected } if field.is_empty() => ConfigError::Field {
                field: outer.to_owned(),
                expected,
            },
            ConfigError::Field { field, expected } => ConfigError::Field {
                field: format!("{outer}.{field}"),
                expected,
            },
            e => e,
        }
    }

    /// The two topics a loop or a duplicate involves, by their index in
    /// [`BridgeConfig::topics`], for a caller to name them as its user gave them.
    pub fn topics(&self) -> Option<[usize; 2]> {
        match self {
            ConfigError::Loop { topics, .. } | ConfigError::Duplicate { topics, .. } => {
                Some(*topics)
            }
            _ => None,
        }
    }

    /// The error without the topics' indices (those of a loop or a duplicate), for a caller
    /// that names them itself ([`ConfigError::topics`]).
    pub fn without_topics(&self) -> String {
        match self {
            ConfigError::Loop { why, .. } => format!("refused, it could loop: {why}"),
            ConfigError::Duplicate { what, .. } => format!("{what} is bridged twice"),
            e => e.to_string(),
        }
    }
}

/// The first endpoint of `list` that appears in it twice.
fn repeated(list: &[String]) -> Option<&String> {
    list.iter()
        .enumerate()
        .find(|(i, e)| list[..*i].contains(e))
        .map(|(_, e)| e)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Json(e) => write!(f, "configuration is not valid JSON: {e}"),
            ConfigError::Field { field, expected } if field.is_empty() => f.write_str(expected),
            ConfigError::Field { field, expected } => write!(f, "{field}: {expected}"),
            ConfigError::Key { key, reason } => write!(f, "key {key:?}: {reason}"),
            ConfigError::Loop { .. } | ConfigError::Duplicate { .. } => {
                let [a, b] = self.topics().unwrap_or_default();
                write!(f, "topics[{a}] and topics[{b}]: {}", self.without_topics())
            }
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
    fn prefixes_are_checked() {
        assert!(BridgeConfig::check_prefix("").is_err());
        assert!(BridgeConfig::check_prefix("/").is_err());
        assert!(BridgeConfig::check_prefix("a*").is_err());
        BridgeConfig::check_prefix("site/one/").unwrap();
    }

    #[test]
    fn keys_say_why_they_are_refused() {
        for (key, want) in [
            ("a/$*", "wildcards"),
            ("a/*", "wildcards"),
            ("a/**", "wildcards"),
            ("a//b", "not a Zenoh key expression"),
            ("/a", "not a Zenoh key expression"),
            ("a/b?c", "not a Zenoh key expression"),
        ] {
            let e = check_key(key).unwrap_err().to_string();
            assert!(e.contains(want), "{key}: {e}");
        }
        check_key("a/b.c-d_e").unwrap();
    }

    #[test]
    fn an_export_names_the_option_it_may_not_have() {
        for (t, want) in [
            (
                TopicConfig::new("t", Direction::Export).message(MessageType::schema("s", 1)),
                "schema: only an import declares",
            ),
            (
                TopicConfig::new("t", Direction::Export).max_message(64),
                "max-message: only an import",
            ),
            (
                TopicConfig::new("t", Direction::Export).capacity(4096),
                "capacity: only an import",
            ),
        ] {
            let e = t.check().unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
        }
    }

    #[test]
    fn a_listen_endpoint_given_twice_is_refused() {
        let twice = BridgeConfig {
            listen: vec!["tcp/127.0.0.1:7447".into(), "tcp/127.0.0.1:7447".into()],
            ..bridge(vec![TopicConfig::new("a", Direction::Export)])
        };
        let e = twice.validate().unwrap_err().to_string();
        assert!(e.contains("is given twice"), "{e}");
    }

    #[test]
    fn an_empty_directory_is_refused() {
        let empty = BridgeConfig {
            directory: Some(PathBuf::new()),
            ..bridge(vec![TopicConfig::new("a", Direction::Export)])
        };
        let e = empty.validate().unwrap_err().to_string();
        assert!(e.starts_with("directory: must not be empty"), "{e}");
    }

    #[test]
    fn loops_are_refused() {
        let both = bridge(vec![
            TopicConfig::new("t", Direction::Export),
            TopicConfig::new("t", Direction::Import).key("other/t"),
        ]);
        assert!(matches!(
            both.validate(),
            Err(ConfigError::Loop { topics: [0, 1], .. })
        ));
        assert!(
            both.validate()
                .unwrap_err()
                .to_string()
                .starts_with("topics[0] and topics[1]: ")
        );
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
        let client = BridgeConfig {
            mode: SessionMode::Client,
            ..bridge(vec![TopicConfig::new("a", Direction::Export)])
        };
        assert!(matches!(client.validate(), Err(ConfigError::Field { .. })));
        let bad_endpoint = BridgeConfig {
            listen: vec!["127.0.0.1:7447".into()],
            ..bridge(vec![TopicConfig::new("a", Direction::Export)])
        };
        assert!(bad_endpoint.validate().is_err());
        let empty_prefix = BridgeConfig {
            prefix: String::new(),
            ..bridge(vec![TopicConfig::new("a", Direction::Export)])
        };
        assert!(empty_prefix.validate().is_err());
        let fine = bridge(vec![
            TopicConfig::new("a", Direction::Export),
            TopicConfig::new("b", Direction::Import),
        ]);
        fine.validate().unwrap();
    }
}
