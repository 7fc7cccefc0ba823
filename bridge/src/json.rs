//! A [`BridgeConfig`] read from JSON ([`BridgeConfig::from_json`]): the file's own field names
//! in every error (`max_message`, not the command line's `max-message=`), and for a field that
//! does not exist, the fields that do and the closest one. A field given twice in one object
//! is an error too (JSON parsers keep the last one, silently: a second `topics` list would
//! replace the first).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::{
    BridgeConfig, ConfigError, Direction, EMPTY_DIRECTORY, Reliability, SessionMode, TopicConfig,
};
use crate::endpoint::check_endpoint;
use crate::spec::Given;

/// The fields of the configuration object.
const FIELDS: &[&str] = &[
    "mode",
    "listen",
    "connect",
    "scouting",
    "prefix",
    "directory",
    "topics",
];

/// The fields of a topic object.
const TOPIC_FIELDS: &[&str] = &[
    "topic",
    "direction",
    "reliability",
    "key",
    "bytes",
    "schema",
    "pod",
    "max_message",
    "capacity",
];

impl BridgeConfig {
    /// Reads a JSON configuration: an object with the optional fields `mode` (`"peer"` or
    /// `"client"`), `listen` and `connect` (arrays of endpoints, checked as
    /// [`check_endpoint`] says), `scouting` (boolean), `prefix` (not empty), `directory` (an
    /// absolute path), and
    /// `topics`, an array of objects with `topic`, `direction` (`"export"` or `"import"`) and
    /// optionally `reliability` (`"reliable"` or `"lossy"`), `key`, `bytes` (`true`),
    /// `schema` (`"NAME@VERSION"`), `pod` (`"NAME:SIZE:ALIGN"`), `max_message` and `capacity`
    /// (numbers of bytes), as the options of [`TopicConfig::parse_spec`] (at most one of
    /// `bytes`, `schema` and `pod`). No field may appear twice in one object. Errors name the
    /// file's fields (`topics[1].max_message: ...`).
    ///
    /// ```
    /// use shmcast_zenoh::BridgeConfig;
    ///
    /// let c = BridgeConfig::from_json(r#"{"topics": [{"topic": "t", "direction": "export"}]}"#)?;
    /// assert_eq!(c.topics.len(), 1);
    /// let twice = r#"{"topics": [{"topic": "a", "direction": "export"}], "topics": []}"#;
    /// assert_eq!(
    ///     BridgeConfig::from_json(twice).unwrap_err().to_string(),
    ///     "topics: given twice (the second would replace the first)"
    /// );
    /// # Ok::<(), shmcast_zenoh::ConfigError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<BridgeConfig, ConfigError> {
        let v: Value = serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        if let Some(path) = repeated_field(text) {
            return Err(ConfigError::field_owned(
                &path,
                "given twice (the second would replace the first)",
            ));
        }
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
                "listen" => c.listen = endpoints(value, "listen")?,
                "connect" => c.connect = endpoints(value, "connect")?,
                "scouting" => {
                    c.scouting = value
                        .as_bool()
                        .ok_or_else(|| ConfigError::field("scouting", "true or false"))?
                }
                "prefix" => {
                    let prefix = value
                        .as_str()
                        .ok_or_else(|| ConfigError::field("prefix", "a string: the key prefix"))?;
                    BridgeConfig::check_prefix(prefix)?;
                    c.prefix = prefix.to_owned();
                }
                "directory" => c.directory = Some(directory(value)?),
                "topics" => {
                    let list = value
                        .as_array()
                        .ok_or_else(|| ConfigError::field("topics", "an array of topics"))?;
                    for (i, t) in list.iter().enumerate() {
                        let t = topic(t).map_err(|e| e.within(&format!("topics[{i}]")))?;
                        c.topics.push(t);
                    }
                }
                other => return Err(unknown(other, "the configuration's fields", FIELDS)),
            }
        }
        Ok(c)
    }
}

/// One element of `topics`.
fn topic(v: &Value) -> Result<TopicConfig, ConfigError> {
    let obj: &Map<String, Value> = v.as_object().ok_or_else(|| {
        ConfigError::field(
            "",
            "not an object: each topic is one, such as {\"topic\": \"ticks\", \"direction\": \"export\"}",
        )
    })?;
    for name in obj.keys() {
        if !TOPIC_FIELDS.contains(&name.as_str()) {
            return Err(unknown(name, "a topic's fields", TOPIC_FIELDS));
        }
    }
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
    let mut given = Given::default();
    for (name, value) in obj {
        let text = match (name.as_str(), value) {
            ("bytes", Value::Bool(true)) => None,
            ("bytes", Value::Bool(false)) => {
                return Err(ConfigError::field(
                    "bytes",
                    "false declares nothing: leave the field out (true declares plain bytes)",
                ));
            }
            ("bytes", _) => {
                return Err(ConfigError::field(
                    "bytes",
                    "true (the local topic declares plain bytes), or leave it out",
                ));
            }
            (_, Value::String(s)) => Some(s.clone()),
            (_, Value::Number(n)) => Some(n.to_string()),
            // null, true, an array: what the field takes, as a value of the wrong text says.
            _ => return Err(ConfigError::field_owned(name, expected(name))),
        };
        match name.as_str() {
            "topic" | "direction" => {}
            "reliability" => match text.as_deref().unwrap_or_default() {
                "reliable" => t.reliability = Reliability::Reliable,
                "lossy" => t.reliability = Reliability::Lossy,
                _ => {
                    return Err(ConfigError::field(
                        "reliability",
                        "\"reliable\" or \"lossy\"",
                    ));
                }
            },
            // The command line's option names, reported under the file's.
            _ => t
                .set(&name.replace('_', "-"), text.as_deref(), &mut given)
                .map_err(|e| file_fields(e, name))?,
        }
    }
    t.check().map_err(|e| file_fields(e, ""))?;
    Ok(t)
}

/// What topic field `name` takes, for a value of the wrong JSON type.
fn expected(name: &str) -> &'static str {
    match name {
        "reliability" => "\"reliable\" or \"lossy\"",
        "key" => "a string: the Zenoh key expression",
        "schema" => "a string NAME@VERSION, such as \"app.Tick@2\"",
        "pod" => "a string NAME:SIZE:ALIGN, such as \"Tick:16:8\"",
        "max_message" | "capacity" => "a number of bytes",
        // `topic` and `direction` are read before, `bytes` apart.
        _ => "a string",
    }
}

/// The `directory` field: an absolute path, as `SHMCAST_DIR` must be. A relative one would be
/// resolved against the bridge's working directory, wherever it was started.
fn directory(value: &Value) -> Result<PathBuf, ConfigError> {
    let path = value.as_str().ok_or_else(|| {
        ConfigError::field(
            "directory",
            "a string: the absolute path of the topic directory",
        )
    })?;
    if path.is_empty() {
        return Err(ConfigError::field("directory", EMPTY_DIRECTORY));
    }
    if !Path::new(path).is_absolute() {
        return Err(ConfigError::field_owned(
            "directory",
            &format!(
                "{path:?} is not an absolute path: the bridge would resolve it against its \
                 working directory, and other processes would look for topics elsewhere"
            ),
        ));
    }
    Ok(path.into())
}

/// An error about a topic's option in the file's terms: field `name` (the one being read, if
/// any), `max_message` for `max-message`, and the other field of a pair that excludes each
/// other as the file spells it.
fn file_fields(e: ConfigError, name: &str) -> ConfigError {
    match e {
        ConfigError::Field { field, expected } => ConfigError::Field {
            field: if name.is_empty() {
                field.replace('-', "_")
            } else {
                name.to_owned()
            },
            expected: expected.replace("max-message", "max_message"),
        },
        e => e,
    }
}

/// The first field that appears twice in one object of `text` (valid JSON), as a path:
/// `topics`, `topics[1].key`.
fn repeated_field(text: &str) -> Option<String> {
    enum Frame {
        Object {
            keys: Vec<String>,
            expect_key: bool,
            at: String,
        },
        Array {
            index: usize,
            at: String,
        },
    }
    /// The path of what starts next inside `frames`.
    fn here(frames: &[Frame]) -> String {
        match frames.last() {
            Some(Frame::Object { keys, at, .. }) => match keys.last() {
                Some(k) if at.is_empty() => k.clone(),
                Some(k) => format!("{at}.{k}"),
                None => at.clone(),
            },
            Some(Frame::Array { index, at }) => format!("{at}[{index}]"),
            None => String::new(),
        }
    }
    let mut frames: Vec<Frame> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                let at = here(&frames);
                frames.push(Frame::Object {
                    keys: Vec::new(),
                    expect_key: true,
                    at,
                });
            }
            b'[' => {
                let at = here(&frames);
                frames.push(Frame::Array { index: 0, at });
            }
            b'}' | b']' => {
                frames.pop();
            }
            b',' => match frames.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = frames.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object {
                    keys,
                    expect_key: true,
                    at,
                }) = frames.last_mut()
                {
                    let key: String = serde_json::from_str(&text[start..=i]).ok()?;
                    if keys.contains(&key) {
                        return Some(if at.is_empty() {
                            key
                        } else {
                            format!("{at}.{key}")
                        });
                    }
                    keys.push(key);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn endpoints(v: &Value, field: &'static str) -> Result<Vec<String>, ConfigError> {
    let list: Vec<String> = v
        .as_array()
        .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_owned)).collect())
        .ok_or_else(|| ConfigError::field(field, "an array of endpoint strings"))?;
    for (i, e) in list.iter().enumerate() {
        check_endpoint(e).map_err(|why| ConfigError::Field {
            field: field.to_owned(),
            expected: format!("{e:?}: {why}"),
        })?;
        if field == "listen" && list[..i].contains(e) {
            return Err(ConfigError::Field {
                field: field.to_owned(),
                expected: format!("{e:?} is given twice: one endpoint is listened on once"),
            });
        }
    }
    Ok(list)
}

/// A field named `name` that is not among `fields`.
fn unknown(name: &str, what: &str, fields: &[&str]) -> ConfigError {
    let closest = fields
        .iter()
        .map(|f| (distance(name, f), *f))
        .min()
        .filter(|(d, f)| *d <= 2.max(f.len() / 4));
    let hint = match closest {
        Some((_, f)) => format!(" (did you mean {f:?}?)"),
        None => String::new(),
    };
    ConfigError::Field {
        field: name.to_owned(),
        expected: format!("unknown field; {what} are {}{hint}", fields.join(", ")),
    }
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn errors_name_the_files_fields() {
        let err = |text: &str| BridgeConfig::from_json(text).unwrap_err().to_string();
        let e = err(r#"{"topics":[{"topic":"a","direction":"export","reliabilty":"lossy"}]}"#);
        assert!(e.starts_with("topics[0].reliabilty: unknown field;"), "{e}");
        assert!(
            e.contains("max_message") && !e.contains("max-message="),
            "{e}"
        );
        assert!(e.contains("did you mean \"reliability\"?"), "{e}");
        let e = err(r#"{"topics":[{"topic":"a","direction":"import","max_message":"x"}]}"#);
        assert!(e.starts_with("topics[0].max_message:"), "{e}");
        let e = err(
            r#"{"topics":[{"topic":"a","direction":"import","max_message":4096,"capacity":4096}]}"#,
        );
        assert!(
            e.starts_with("topics[0].max_message: 4096 is not from 1 to 2032"),
            "{e}"
        );
        let e = err(r#"{"topics":[{"topic":"a","direction":"export","reliability":"fast"}]}"#);
        assert!(e.contains("reliability: \"reliable\" or \"lossy\""), "{e}");
        let e = err(r#"{"conect": []}"#);
        assert!(e.contains("did you mean \"connect\"?"), "{e}");
        assert!(!err(r#"{"zzzzzz": 1}"#).contains("did you mean"));
        let e = err(r#"{"listen": ["127.0.0.1:7447"]}"#);
        assert!(
            e.starts_with("listen: \"127.0.0.1:7447\": not an endpoint"),
            "{e}"
        );
        let e = err(r#"{"prefix": ""}"#);
        assert!(e.starts_with("prefix: must not be empty"), "{e}");
    }

    #[test]
    fn what_a_parser_would_drop_or_ignore_is_an_error() {
        let err = |text: &str| BridgeConfig::from_json(text).unwrap_err().to_string();
        let e = err(r#"{"topics": [{"topic": "a", "direction": "export"}], "topics": []}"#);
        assert_eq!(
            e,
            "topics: given twice (the second would replace the first)"
        );
        let e = err(r#"{"topics": [{"topic": "a", "direction": "export"},
                           {"topic": "b", "direction": "import", "key": "x", "key": "y"}]}"#);
        assert!(e.starts_with("topics[1].key: given twice"), "{e}");
        // Escapes and nesting do not confuse the search; the same name in two objects is fine.
        BridgeConfig::from_json(
            r#"{"prefix": "a\"b{[", "topics": [{"topic": "a", "direction": "export"},
                                                {"topic": "b", "direction": "export"}]}"#,
        )
        .unwrap();
        BridgeConfig::from_json(
            r#"{"topics": [{"topic": "a", "direction": "export", "key": "k/\"x"},
                           {"topic": "b", "direction": "export"}]}"#,
        )
        .unwrap();
        let e = err(r#"{"topics": [{"topic": "a", "direction": "import", "bytes": false}]}"#);
        assert!(
            e.starts_with("topics[0].bytes: false declares nothing"),
            "{e}"
        );
        let e = err(r#"{"topics": [{"topic": "a", "direction": "import", "bytes": ""}]}"#);
        assert!(e.starts_with("topics[0].bytes: true"), "{e}");
        let c = BridgeConfig::from_json(
            r#"{"topics": [{"topic": "a", "direction": "import", "bytes": true}]}"#,
        )
        .unwrap();
        assert_eq!(c.topics[0].message, Some(shmcast::MessageType::Bytes));
        let e = err(
            r#"{"topics": [{"topic": "a", "direction": "import", "schema": "s@1", "pod": "T:8:8"}]}"#,
        );
        assert!(
            e.starts_with("topics[0].pod: schema is given too")
                || e.starts_with("topics[0].schema: pod is given too"),
            "{e}"
        );
        let e = err(r#"{"topics": ["ticks"]}"#);
        assert!(e.starts_with("topics[0]: not an object"), "{e}");
        let e = err(r#"{"topics": [{"topic": "a", "direction": "export", "schema": "s@1"}]}"#);
        assert!(
            e.starts_with("topics[0].schema: only an import declares"),
            "{e}"
        );
        let e = err(r#"{"topics": [{"topic": "a", "direction": "export", "max_message": 64}]}"#);
        assert!(
            e.starts_with("topics[0].max_message: only an import"),
            "{e}"
        );
        let e = err(r#"{"topics": [{"topic": "a", "direction": "import", "pod": "T:8:3"}]}"#);
        assert!(e.starts_with("topics[0].pod: pod alignment 3"), "{e}");
        let e = err(r#"{"listen": ["tcp/127.0.0.1:7447", "tcp/127.0.0.1:7447"]}"#);
        assert!(
            e.starts_with("listen: \"tcp/127.0.0.1:7447\" is given twice"),
            "{e}"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_told_what_its_field_takes() {
        let err = |field: &str, value: &str| {
            let text = format!(
                r#"{{"topics": [{{"topic": "a", "direction": "import", "{field}": {value}}}]}}"#
            );
            BridgeConfig::from_json(&text).unwrap_err().to_string()
        };
        for value in ["null", "true", "[]", "{}"] {
            for (field, want) in [
                ("reliability", r#""reliable" or "lossy""#),
                ("key", "a string: the Zenoh key expression"),
                ("schema", "a string NAME@VERSION, such as \"app.Tick@2\""),
                ("pod", "a string NAME:SIZE:ALIGN, such as \"Tick:16:8\""),
                ("max_message", "a number of bytes"),
                ("capacity", "a number of bytes"),
            ] {
                let e = err(field, value);
                assert_eq!(e, format!("topics[0].{field}: {want}"), "{field}: {value}");
            }
        }
        // A wrong value of the right type says the same.
        assert_eq!(
            err("reliability", "5"),
            r#"topics[0].reliability: "reliable" or "lossy""#
        );
        let e = BridgeConfig::from_json(r#"{"prefix": null}"#).unwrap_err();
        assert_eq!(e.to_string(), "prefix: a string: the key prefix");
    }

    #[test]
    fn a_directory_is_an_absolute_path() {
        let err = |value: &str| {
            BridgeConfig::from_json(&format!(r#"{{"directory": {value}}}"#))
                .unwrap_err()
                .to_string()
        };
        let e = err(r#""rel""#);
        assert!(
            e.starts_with(r#"directory: "rel" is not an absolute path"#),
            "{e}"
        );
        assert!(err(r#""./rel""#).contains("not an absolute path"));
        assert!(err(r#""""#).starts_with("directory: must not be empty"));
        assert!(err("null").starts_with("directory: a string: the absolute path"));
        let c = BridgeConfig::from_json(r#"{"directory": "/run/shmcast"}"#).unwrap();
        assert_eq!(c.directory, Some(PathBuf::from("/run/shmcast")));
    }

    #[test]
    fn distances() {
        assert_eq!(distance("reliabilty", "reliability"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
