//! The contract an import is configured with, checked before anything starts by shmcast's own
//! rules: what a publisher may declare (a type or schema name of 1 to 128 bytes without control
//! characters, a Pod alignment that is a power of two up to 16, a Pod type that fits the
//! maximum message and the ring). A contract no publisher may declare would never bind: the
//! import would refuse every message it hears.

use shmcast::{ConfigError, Contract, MAX_CAPACITY, MessageType, RingConfig};

/// Checks that a publisher may declare `message` in a topic of messages up to `max_message`
/// bytes (`None`: what the message type needs) and a ring of `capacity` bytes (`None`: any).
/// The error says why, in a sentence.
pub(crate) fn check(
    message: &MessageType,
    max_message: Option<usize>,
    capacity: Option<u64>,
) -> Result<(), String> {
    let size = match message {
        MessageType::Pod { size: 0, .. } => {
            return Err("a Pod type of 0 bytes: none of its messages would carry anything".into());
        }
        MessageType::Pod { size, .. } => *size,
        _ => 1,
    };
    let max = max_message.unwrap_or(size).max(1);
    let ring = capacity.unwrap_or(MAX_CAPACITY);
    // The library's own checks, in the order binding runs them: the ring, then the contract.
    match RingConfig::new(ring, max as u64) {
        Ok(_) => {}
        Err(ConfigError::MaxPayload { limit, .. }) => {
            let what = match message {
                MessageType::Pod { .. } => "a pod",
                _ => "a message",
            };
            return Err(format!(
                "{what} of {max} bytes does not fit a {ring}-byte ring, which holds messages up \
                 to {limit} bytes"
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    Contract::declare(message.clone(), max)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(size: usize, align: usize) -> MessageType {
        MessageType::Pod {
            name: "T".into(),
            size,
            align,
        }
    }

    #[test]
    fn what_a_publisher_may_declare_passes_and_nothing_else() {
        check(&MessageType::Bytes, None, None).unwrap();
        check(&MessageType::schema("app.Tick", 1), Some(64), Some(4096)).unwrap();
        check(&pod(16, 8), None, None).unwrap();
        check(&pod(16, 8), Some(16), None).unwrap();
        assert!(
            check(&pod(16, 3), None, None)
                .unwrap_err()
                .contains("alignment 3")
        );
        assert!(
            check(&pod(0, 1), None, None)
                .unwrap_err()
                .contains("0 bytes")
        );
        assert!(
            check(&pod(17, 1), Some(16), None)
                .unwrap_err()
                .contains("larger")
        );
        assert!(
            check(&pod(4096, 8), None, Some(4096))
                .unwrap_err()
                .contains("ring")
        );
        assert!(
            check(&MessageType::schema("", 1), None, None)
                .unwrap_err()
                .contains("is empty")
        );
    }
}
