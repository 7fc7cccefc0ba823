//! The `source` of an exported topic ([`wire`](crate::wire)): which stream of sequence numbers
//! its messages belong to, the same for every exporter of that topic on that host, whether
//! it runs now or after a restart, and different for the same topic name on another host.
//!
//! It is a hash of the host (its machine id and its name) and of the topic's socket path, so
//! two hosts exporting one topic name to one key are two sources, and a restarted exporter
//! goes on with the source of the one before it. The hash is FNV-1a: stable across builds and
//! versions, which the standard library's hasher does not promise.

use std::path::{Path, PathBuf};

/// The source of `topic` (a name, or a socket path with a `/`) resolved in `directory` (`None`:
/// the environment's topic directory), on this host.
pub(crate) fn of(topic: &str, directory: Option<&Path>) -> u64 {
    let host = host_identity();
    let path = socket_path(topic, directory);
    let mut h = Fnv::new();
    h.write(host.as_bytes());
    h.write(&[0]);
    h.write(path.as_os_str().as_encoded_bytes());
    h.finish()
}

/// The machine id and the host name, as far as this host says them.
fn host_identity() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    };
    let mut id = read("/etc/machine-id");
    if id.is_empty() {
        id = read("/var/lib/dbus/machine-id");
    }
    format!("{id}\n{}", read("/proc/sys/kernel/hostname"))
}

/// Where `topic`'s socket lives, as a publisher of it binds it.
fn socket_path(topic: &str, directory: Option<&Path>) -> PathBuf {
    if topic.contains('/') {
        return std::path::absolute(topic).unwrap_or_else(|_| PathBuf::from(topic));
    }
    let dir = match directory {
        Some(d) => d.to_owned(),
        None => shmcast::TopicDir::from_env()
            .map(|d| d.path)
            .unwrap_or_default(),
    };
    std::path::absolute(&dir).unwrap_or(dir).join(topic)
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_topic_one_source_and_another_directory_another() {
        let a = Path::new("/tmp/host-a");
        assert_eq!(of("t", Some(a)), of("t", Some(a)));
        assert_ne!(of("t", Some(a)), of("t", Some(Path::new("/tmp/host-b"))));
        assert_ne!(of("t", Some(a)), of("u", Some(a)));
        assert_eq!(of("/tmp/host-a/t", None), of("t", Some(a)));
    }

    #[test]
    fn fnv_matches_its_reference_values() {
        let hash = |s: &str| {
            let mut h = Fnv::new();
            h.write(s.as_bytes());
            h.finish()
        };
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x8594_4171_f739_67e8);
    }
}
