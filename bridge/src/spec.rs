//! A topic's options as the command line gives them (`TOPIC[,OPTION...]`,
//! [`TopicConfig::parse_spec`]) and as a file's topic object does (`json`): each option at most
//! once, none against another (`reliable` with `lossy`, two message types), a value where one
//! is needed and none where none is.

use shmcast::MessageType;

use crate::config::{ConfigError, Direction, Reliability, TopicConfig};

/// The options, for the error that names an unknown one.
const OPTIONS: &str = "reliable, lossy, key=, bytes, schema=, pod=, max-message=, capacity=";

/// The options given so far to one topic, so that none is given twice and none contradicts
/// another.
#[derive(Debug, Default)]
pub(crate) struct Given {
    /// Each option given, with what it decides (options that decide the same thing exclude
    /// each other).
    options: Vec<(&'static str, String)>,
}

impl Given {
    /// Records option `name`, which decides `what`; an error if `what` is decided already.
    fn take(&mut self, name: &str, what: &'static str) -> Result<(), ConfigError> {
        if let Some((_, before)) = self.options.iter().find(|(w, _)| *w == what) {
            let why = if before == name {
                "given twice".to_owned()
            } else {
                format!("{before} is given too, and a topic has one {what}: give one of them")
            };
            return Err(ConfigError::field_owned(name, &why));
        }
        self.options.push((what, name.to_owned()));
        Ok(())
    }
}

impl TopicConfig {
    /// Parses a command-line topic: `TOPIC[,OPTION...]` with the options `reliable`, `lossy`,
    /// `key=KEYEXPR`, `bytes`, `schema=NAME@VERSION`, `pod=NAME:SIZE:ALIGN`,
    /// `max-message=BYTES`, `capacity=BYTES`, each at most once, and checks the topic as
    /// [`BridgeConfig::validate`](crate::BridgeConfig::validate) does on its own.
    ///
    /// ```
    /// use shmcast_zenoh::{Direction, Reliability, TopicConfig};
    ///
    /// let t = TopicConfig::parse_spec("ticks,lossy,schema=app.Tick@2", Direction::Import)?;
    /// assert_eq!(t.reliability, Reliability::Lossy);
    /// for bad in ["ticks,lossy=false", "ticks,reliable,lossy", "ticks,", "ticks,pod=T:8:3"] {
    ///     assert!(TopicConfig::parse_spec(bad, Direction::Import).is_err(), "{bad}");
    /// }
    /// # Ok::<(), shmcast_zenoh::ConfigError>(())
    /// ```
    pub fn parse_spec(spec: &str, direction: Direction) -> Result<TopicConfig, ConfigError> {
        let mut parts = spec.split(',');
        let topic = parts.next().unwrap_or_default();
        let mut t = TopicConfig::new(topic, direction);
        let mut given = Given::default();
        for part in parts {
            match part.split_once('=') {
                Some((name, value)) => t.set(name, Some(value), &mut given)?,
                None => t.set(part, None, &mut given)?,
            }
        }
        t.check()?;
        Ok(t)
    }

    /// Sets option `name` (as the command line spells it) to `value` (`None`: the option came
    /// without `=`).
    pub(crate) fn set(
        &mut self,
        name: &str,
        value: Option<&str>,
        given: &mut Given,
    ) -> Result<(), ConfigError> {
        let what = match name {
            "" => {
                return Err(ConfigError::field(
                    "",
                    "an empty option (a comma with nothing after it): remove the comma",
                ));
            }
            "reliable" | "lossy" => "reliability",
            "bytes" | "schema" | "pod" => "message type",
            "key" => "key",
            "max-message" => "maximum message",
            "capacity" => "capacity",
            _ => {
                return Err(ConfigError::field_owned(
                    name,
                    &format!("unknown option ({OPTIONS})"),
                ));
            }
        };
        given.take(name, what)?;
        if matches!(name, "reliable" | "lossy" | "bytes") {
            if value.is_some() {
                return Err(ConfigError::field_owned(
                    name,
                    &format!("takes no value: give {name} alone, or leave it out"),
                ));
            }
        } else if value.is_none_or(str::is_empty) {
            let form = match name {
                "key" => "KEYEXPR",
                "schema" => "NAME@VERSION",
                "pod" => "NAME:SIZE:ALIGN",
                _ => "BYTES",
            };
            return Err(ConfigError::field_owned(
                name,
                &format!("needs a value: {name}={form}"),
            ));
        }
        let value = value.unwrap_or_default();
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
            _ => self.capacity = Some(number("capacity")?),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(spec: &str) -> Result<TopicConfig, String> {
        TopicConfig::parse_spec(spec, Direction::Import).map_err(|e| e.to_string())
    }

    #[test]
    fn specs_parse() {
        let t = import("ticks,lossy,key=a/b,schema=proto:Tick@3,max-message=64").unwrap();
        assert_eq!(t.reliability, Reliability::Lossy);
        assert_eq!(t.key.as_deref(), Some("a/b"));
        assert_eq!(t.message, Some(MessageType::schema("proto:Tick", 3)));
        assert_eq!(t.max_message, Some(64));
        let p = import("x,pod=Tick:16:8").unwrap();
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
            "bad name",
            ".hidden",
            "a\u{e9}",
            "/tmp/dir/",
            "/tmp/sock",
            "x,key=/k",
            "x,key=k/*",
            "x,capacity=1000",
            "x,capacity=32",
            "x,capacity=2199023255552",
            "x,max-message=0",
            "x,capacity=1024,max-message=497",
        ] {
            assert!(import(bad).is_err(), "{bad}");
        }
        assert!(TopicConfig::parse_spec("x,schema=a@1", Direction::Export).is_err());
        for good in [
            "a.b_c-1",
            "/tmp/sock,key=k/sock",
            "x,capacity=64",
            "x,capacity=1024,max-message=496",
            "x,bytes,max-message=64",
        ] {
            import(good).unwrap();
        }
    }

    #[test]
    fn values_that_would_be_ignored_are_errors() {
        for (bad, want) in [
            ("ticks,lossy=false", "lossy: takes no value"),
            ("ticks,reliable=yes", "reliable: takes no value"),
            ("ticks,bytes=1", "bytes: takes no value"),
            ("ticks,key", "key: needs a value: key=KEYEXPR"),
            (
                "ticks,schema=",
                "schema: needs a value: schema=NAME@VERSION",
            ),
            (
                "ticks,reliable,lossy",
                "lossy: reliable is given too, and a topic has one reliability",
            ),
            ("ticks,lossy,lossy", "lossy: given twice"),
            (
                "ticks,schema=a@1,pod=T:8:8",
                "pod: schema is given too, and a topic has one message type",
            ),
            ("ticks,bytes,schema=a@1", "schema: bytes is given too"),
            ("ticks,key=a,key=b", "key: given twice"),
            (
                "ticks,max-message=8,max-message=9",
                "max-message: given twice",
            ),
            ("ticks,", "an empty option (a comma with nothing after it)"),
            ("ticks,,lossy", "an empty option"),
        ] {
            let e = import(bad).unwrap_err();
            assert!(e.starts_with(want), "{bad}: {e}");
        }
    }

    #[test]
    fn contracts_follow_the_librarys_rules() {
        for (bad, want) in [
            ("t,pod=T:0:1", "pod: a Pod type of 0 bytes"),
            ("t,pod=T:8:3", "pod: pod alignment 3 is not a power of two"),
            ("t,pod=T:8:32", "pod: pod alignment 32"),
            (
                "t,schema=@1",
                "schema: contract name \"\" (0 bytes) is empty",
            ),
            ("t,pod=:8:8", "pod: contract name \"\""),
            (
                "t,pod=T:128:8,max-message=64",
                "pod: pod of 128 bytes is larger than the maximum message of 64 bytes",
            ),
            ("t,pod=T:8:3,max-message=64", "pod: pod alignment 3"),
            (
                "t,pod=T:4096:8,capacity=4096",
                "pod: a pod of 4096 bytes does not fit a 4096-byte ring",
            ),
        ] {
            let e = import(bad).unwrap_err();
            assert!(e.starts_with(want), "{bad}: {e}");
        }
        let long = format!("t,schema={}@1", "n".repeat(129));
        assert!(import(&long).unwrap_err().contains("is too long"));
        for good in [
            "t,pod=T:8:8",
            "t,pod=T:64:16,max-message=64",
            "t,schema=app.Tick@0",
            "t,pod=T:2032:8,capacity=4096",
        ] {
            import(good).unwrap();
        }
    }
}
