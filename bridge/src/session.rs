//! The bridge's Zenoh session, configured from a [`BridgeConfig`]: mode, endpoints, scouting.

use zenoh::Wait;

use crate::config::BridgeConfig;

/// Opens the session `config` describes.
pub(crate) fn open(config: &BridgeConfig) -> Result<zenoh::Session, String> {
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
            .map_err(|e| format!("Zenoh setting {path} = {value}: {e}"))?;
    }
    zenoh::open(z)
        .wait()
        .map_err(|e| format!("opening the Zenoh session: {e}"))
}
