//! The topic contract: what a topic's messages are, as its publisher declares them and as a
//! subscriber expects them.
//!
//! A publisher declares one [`MessageType`] when it binds (nothing declared: [`MessageType::Bytes`],
//! bytes of no stated meaning); the topic's maximum message size is the ring's own. The
//! declaration travels in the WELCOME of the handshake, so every subscriber can read it
//! ([`Subscriber::contract`](crate::Subscriber::contract)). A subscriber that states an
//! [`Expectation`] compares it with the declaration right after the handshake and, on any
//! difference, drops the connection and its shared memory and fails with
//! [`ConnectError::ContractMismatch`](crate::ConnectError::ContractMismatch), which names both
//! sides. The publisher is told nothing: it sees a subscriber that left at once.
//!
//! # Names
//!
//! A Pod type is named, by default, by its Rust type name without module paths
//! (`Tick` for `app::msg::Tick`, `Pair<Tick>` for `app::Pair<app::msg::Tick>`): the same
//! struct compiled into two programs, or declared in C, then has the same name, while the full
//! path would differ between crates (and [`std::any::type_name`] promises no stable form across
//! compiler versions). Where two types of one name could meet on a topic, or to version a
//! type, choose the name yourself (`pod_named`). Every name is 1 to [`MAX_CONTRACT_NAME`] bytes of UTF-8
//! without control characters, and names compare exactly.

use std::fmt;

/// Longest type or schema name, in bytes of UTF-8.
pub const MAX_CONTRACT_NAME: usize = 128;

/// Largest Pod alignment: every payload starts 16-byte aligned.
const MAX_ALIGN: usize = 16;

/// What each message of a topic is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageType {
    /// Bytes of no declared meaning: what a publisher that declares nothing carries.
    Bytes,
    /// Bytes in a named schema (a serialisation format and its message type, say
    /// `"proto:app.Tick"`) at a version; both must match exactly.
    Schema {
        /// The schema's name.
        name: String,
        /// Its version.
        version: u32,
    },
    /// One `bytemuck::Pod` value per message: its name, size and alignment must all match.
    Pod {
        /// The type's name (see "Names" in the module docs).
        name: String,
        /// `size_of` the type: the length of every message.
        size: usize,
        /// `align_of` the type: a power of two up to 16.
        align: usize,
    },
}

impl MessageType {
    /// The declaration of `T` under its default name: the type name without module paths.
    pub fn pod<T: bytemuck::Pod>() -> MessageType {
        MessageType::pod_named::<T>(short_type_name(std::any::type_name::<T>()))
    }

    /// The declaration of `T` under `name`.
    pub fn pod_named<T: bytemuck::Pod>(name: impl Into<String>) -> MessageType {
        MessageType::Pod {
            name: name.into(),
            size: size_of::<T>(),
            align: align_of::<T>(),
        }
    }

    /// Bytes in schema `name` at `version`.
    pub fn schema(name: impl Into<String>, version: u32) -> MessageType {
        MessageType::Schema {
            name: name.into(),
            version,
        }
    }

    /// Checks that a publisher may declare this: a valid name and a possible alignment.
    pub(crate) fn validate(&self) -> Result<(), InvalidContract> {
        match self {
            MessageType::Bytes => Ok(()),
            MessageType::Schema { name, .. } => check_name(name),
            MessageType::Pod { name, align, .. } => {
                check_name(name)?;
                if align.is_power_of_two() && *align <= MAX_ALIGN {
                    Ok(())
                } else {
                    Err(InvalidContract::Align(*align))
                }
            }
        }
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessageType::Bytes => f.write_str("bytes with no declared type or schema"),
            MessageType::Schema { name, version } => {
                write!(f, "schema {name:?} version {version}")
            }
            MessageType::Pod { name, size, align } => {
                write!(f, "pod {name:?} ({size} bytes, align {align})")
            }
        }
    }
}

/// What a topic carries, as its publisher declared it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Contract {
    /// What each message is.
    pub message: MessageType,
    /// The largest message the publisher may send, in bytes.
    pub max_message: usize,
}

impl Contract {
    /// The contract of a topic carrying `message` in messages of up to `max_message` bytes.
    pub(crate) fn new(message: MessageType, max_message: usize) -> Contract {
        Contract {
            message,
            max_message,
        }
    }

    /// The contract a publisher declares, checked as binding checks it: `message` must be
    /// valid (a name of 1 to 128 bytes of UTF-8 without control characters, a Pod alignment
    /// that is a power of two up to 16), and a Pod type must fit `max_message`. For programs
    /// that check a configuration before anything starts; the ring's own limits are
    /// [`RingConfig::new`](crate::RingConfig::new)'s.
    ///
    /// ```
    /// use shmcast::{Contract, MessageType};
    /// assert!(Contract::declare(MessageType::schema("app.Tick", 2), 4096).is_ok());
    /// let pod = MessageType::Pod { name: "T".into(), size: 8, align: 3 };
    /// assert!(Contract::declare(pod, 64).is_err());
    /// ```
    pub fn declare(message: MessageType, max_message: usize) -> Result<Contract, InvalidContract> {
        message.validate()?;
        if let MessageType::Pod { size, .. } = message
            && size > max_message
        {
            return Err(InvalidContract::Size { size, max_message });
        }
        Ok(Contract::new(message, max_message))
    }
}

impl fmt::Display for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, messages up to {} bytes",
            self.message, self.max_message
        )
    }
}

/// What a subscriber requires of a topic's [`Contract`]; the default requires nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Expectation {
    /// The message type the topic must declare, exactly (`None`: any).
    pub message: Option<MessageType>,
    /// The least maximum message size the topic must allow (`None`: any).
    pub max_message_at_least: Option<usize>,
}

impl Expectation {
    /// Whether `contract` meets this expectation.
    pub fn is_met_by(&self, contract: &Contract) -> bool {
        self.message.as_ref().is_none_or(|m| *m == contract.message)
            && self
                .max_message_at_least
                .is_none_or(|n| contract.max_message >= n)
    }

    /// Whether anything is expected at all.
    pub fn is_empty(&self) -> bool {
        self.message.is_none() && self.max_message_at_least.is_none()
    }

    /// Checks that a publisher could ever meet this (the message type is one it may declare).
    pub(crate) fn validate(&self) -> Result<(), InvalidContract> {
        self.message.as_ref().map_or(Ok(()), MessageType::validate)
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.message, self.max_message_at_least) {
            (None, None) => f.write_str("anything"),
            (Some(m), None) => m.fmt(f),
            (None, Some(n)) => write!(f, "a maximum message of at least {n} bytes"),
            (Some(m), Some(n)) => write!(f, "{m} and a maximum message of at least {n} bytes"),
        }
    }
}

/// Why a declared or expected contract is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidContract {
    /// A type or schema name that is empty, longer than [`MAX_CONTRACT_NAME`] bytes, or holds a control
    /// character.
    Name {
        /// The name (shortened when shown).
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A Pod alignment that is not a power of two up to 16, the alignment of every payload.
    Align(usize),
    /// A Pod type larger than the topic's maximum message.
    Size {
        /// The type's size in bytes.
        size: usize,
        /// The topic's maximum message in bytes.
        max_message: usize,
    },
}

impl fmt::Display for InvalidContract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidContract::Name { name, reason } => {
                let shown: String = name.chars().take(48).collect();
                let more = if shown.len() < name.len() { "..." } else { "" };
                write!(
                    f,
                    "contract name {shown:?}{more} ({} bytes) {reason}; names are 1-{MAX_CONTRACT_NAME} bytes of UTF-8 without control characters",
                    name.len()
                )
            }
            InvalidContract::Align(align) => write!(
                f,
                "pod alignment {align} is not a power of two up to {MAX_ALIGN} (the alignment of every payload)"
            ),
            InvalidContract::Size { size, max_message } => write!(
                f,
                "pod of {size} bytes is larger than the maximum message of {max_message} bytes"
            ),
        }
    }
}

impl std::error::Error for InvalidContract {}

/// Whether `c` must not reach a terminal as it is: a control character (C0 with ESC, DEL, C1:
/// [`char::is_control`]) or a bidirectional override or isolate (U+202A..U+202E,
/// U+2066..U+2069), which would reorder how the rest of the line displays. No contract name
/// holds one; text from a peer shows it escaped ([`printable`](crate::handshake::printable)).
pub(crate) fn unsafe_to_show(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Checks a type or schema name: 1 to [`MAX_CONTRACT_NAME`] bytes, nothing
/// [`unsafe_to_show`].
pub(crate) fn check_name(name: &str) -> Result<(), InvalidContract> {
    let reason = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_CONTRACT_NAME {
        "is too long"
    } else if name.chars().any(unsafe_to_show) {
        "holds a control or direction-override character"
    } else {
        return Ok(());
    };
    Err(InvalidContract::Name {
        name: name.to_owned(),
        reason,
    })
}

/// A type name without its module paths: `Pair<Tick>` for `app::Pair<app::msg::Tick>`.
pub(crate) fn short_type_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    // Where the path segment being copied starts in `out`: a `::` drops it.
    let mut segment = 0;
    let mut rest = full;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("::") {
            out.truncate(segment);
            rest = after;
            continue;
        }
        out.push(c);
        if !(c.is_alphanumeric() || c == '_') {
            segment = out.len();
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_drop_every_module_path() {
        for (full, short) in [
            ("app::msg::Tick", "Tick"),
            ("Tick", "Tick"),
            ("u64", "u64"),
            ("app::Pair<app::msg::Tick>", "Pair<Tick>"),
            ("[app::Tick; 4]", "[Tick; 4]"),
            ("(u64, core::num::Wrapping<u8>)", "(u64, Wrapping<u8>)"),
            ("a::B<c::D, e::F<g::H>>", "B<D, F<H>>"),
        ] {
            assert_eq!(short_type_name(full), short, "{full}");
        }
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(C)]
        struct Tick {
            seq: u64,
            price: f64,
        }
        assert_eq!(
            MessageType::pod::<Tick>(),
            MessageType::Pod {
                name: "Tick".into(),
                size: 16,
                align: 8
            }
        );
        assert_eq!(
            MessageType::pod::<[Tick; 2]>().to_string(),
            "pod \"[Tick; 2]\" (32 bytes, align 8)"
        );
    }

    #[test]
    fn names_and_alignments_are_checked() {
        assert!(check_name("x").is_ok());
        assert!(check_name(&"é".repeat(64)).is_ok());
        for (bad, reason) in [
            ("", "is empty"),
            (&*"x".repeat(MAX_CONTRACT_NAME + 1), "is too long"),
            ("a\nb", "holds a control or direction-override character"),
        ] {
            let e = check_name(bad).unwrap_err();
            assert!(matches!(e, InvalidContract::Name { reason: r, .. } if r == reason));
        }
        for align in [0, 3, 32] {
            let pod = MessageType::Pod {
                name: "T".into(),
                size: 8,
                align,
            };
            assert_eq!(pod.validate(), Err(InvalidContract::Align(align)));
        }
        let long = InvalidContract::Name {
            name: "y".repeat(300),
            reason: "is too long",
        };
        assert!(long.to_string().len() < 200, "{long}");
    }

    #[test]
    fn expectations_compare_every_field() {
        let tick = MessageType::pod_named::<[u64; 2]>("Tick");
        let topic = Contract::new(tick.clone(), 1024);
        let expect = |message, at_least| Expectation {
            message,
            max_message_at_least: at_least,
        };
        assert!(Expectation::default().is_met_by(&topic));
        assert!(expect(Some(tick.clone()), Some(1024)).is_met_by(&topic));
        assert!(!expect(None, Some(1025)).is_met_by(&topic));
        for other in [
            MessageType::pod_named::<[u64; 2]>("Quote"),
            MessageType::pod_named::<[u64; 3]>("Tick"),
            MessageType::pod_named::<[u32; 4]>("Tick"),
            MessageType::schema("Tick", 1),
            MessageType::Bytes,
        ] {
            assert!(!expect(Some(other), None).is_met_by(&topic));
        }
        let schema = Contract::new(MessageType::schema("app.Tick", 2), 64);
        assert!(expect(Some(MessageType::schema("app.Tick", 2)), None).is_met_by(&schema));
        assert!(!expect(Some(MessageType::schema("app.Tick", 3)), None).is_met_by(&schema));
        assert!(!expect(Some(MessageType::schema("app.Tock", 2)), None).is_met_by(&schema));
    }
}
