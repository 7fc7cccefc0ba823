//! How `echo` prints a message and how `pub --hex` reads one: text, hex, JSON lines.
//!
//! `auto` and `json` print a payload as text or as hex. On a topic whose publisher declared a
//! Pod type every message is binary, so every one is hex, even one whose bytes happen to read
//! as text. A schema may be text (JSON, CSV) or binary (Protocol Buffers) and the command
//! cannot tell which, so on a schema topic, as on one of plain bytes, each message is judged
//! by its bytes; `hex` or `text` prints them all one way.

use clap::ValueEnum;
use serde_json::json;
use shmcast::MessageType;

/// How `echo` prints each message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text when the payload is printable UTF-8 (tabs allowed), otherwise hex; always hex on
    /// a topic that declares a Pod type. On a schema topic each message is judged by its
    /// bytes (`hex` or `text` prints them all one way).
    Auto,
    /// Lowercase hex, one message a line (what `pub --hex` reads back).
    Hex,
    /// The payload as UTF-8 text, invalid bytes replaced.
    Text,
    /// One JSON object a line: sequence number, size, and the payload as `text` when it is
    /// UTF-8 text (tabs and line breaks allowed, no other control character, as `auto` judges
    /// it), or `hex` (anything else, and every message of a topic that declares a Pod type).
    Json,
}

/// What a topic's declared message type says about its payloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payloads {
    /// Binary whatever their bytes (a Pod value): hex in `auto` and `json`.
    Binary,
    /// Text or binary, each judged by its bytes (plain bytes, or a schema).
    Judged,
}

impl Payloads {
    /// What `message`, a topic's declaration, says.
    pub fn of(message: &MessageType) -> Payloads {
        match message {
            MessageType::Pod { .. } => Payloads::Binary,
            _ => Payloads::Judged,
        }
    }
}

/// Whether `payload` reads as one line of text.
pub fn is_text(payload: &[u8]) -> bool {
    text(payload, false).is_some()
}

/// `payload` as text: UTF-8 whose only control characters are tabs, and line breaks where
/// `lines` allows them.
fn text(payload: &[u8], lines: bool) -> Option<&str> {
    std::str::from_utf8(payload).ok().filter(|s| {
        s.chars()
            .all(|c| c == '\t' || (lines && matches!(c, '\n' | '\r')) || !c.is_control())
    })
}

/// `payload` in lowercase hex.
pub fn hex(payload: &[u8]) -> String {
    let mut out = String::with_capacity(payload.len() * 2);
    for b in payload {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The bytes a hex line stands for (whitespace between digit pairs allowed).
pub fn parse_hex(line: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = line.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err(format!("odd number of hex digits in {line:?}"));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).map_err(|_| format!("not hex: {line:?}"))?;
            u8::from_str_radix(s, 16).map_err(|_| format!("not hex: {line:?}"))
        })
        .collect()
}

/// The line `echo` prints for message `seq` with `payload`, of a topic whose payloads are
/// `kind`.
pub fn render(format: Format, kind: Payloads, seq: u64, payload: &[u8]) -> String {
    let judged = kind == Payloads::Judged;
    match format {
        Format::Auto if judged && is_text(payload) => String::from_utf8_lossy(payload).into_owned(),
        Format::Auto | Format::Hex => hex(payload),
        Format::Text => String::from_utf8_lossy(payload).into_owned(),
        Format::Json => match text(payload, true).filter(|_| judged) {
            Some(text) => json!({"seq": seq, "len": payload.len(), "text": text}).to_string(),
            None => json!({"seq": seq, "len": payload.len(), "hex": hex(payload)}).to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse_hex(&hex(&all)), Ok(all));
        assert_eq!(parse_hex("00 ff\t0a"), Ok(vec![0, 0xff, 0x0a]));
        assert!(parse_hex("abc").is_err());
        assert!(parse_hex("zz").is_err());
    }

    #[test]
    fn json_carries_text_as_text_and_binary_as_hex() {
        let field = |p: &[u8], key: &str| {
            let v: serde_json::Value =
                serde_json::from_str(&render(Format::Json, Payloads::Judged, 7, p)).unwrap();
            v[key].as_str().map(str::to_owned)
        };
        assert_eq!(field(b"a\tb\r\nc", "text").as_deref(), Some("a\tb\r\nc"));
        assert_eq!(field(&[0; 4], "hex").as_deref(), Some("00000000"));
        assert_eq!(field(&[0x1b, b'x'], "hex").as_deref(), Some("1b78"));
        assert_eq!(field(&[0xff], "hex").as_deref(), Some("ff"));
        assert_eq!(field(b"", "text").as_deref(), Some(""));
    }

    #[test]
    fn auto_prints_text_as_text_and_the_rest_as_hex() {
        let judged = |format, p: &[u8]| render(format, Payloads::Judged, 7, p);
        assert_eq!(judged(Format::Auto, b"a\tb"), "a\tb");
        assert_eq!(judged(Format::Auto, b"a\nb"), "610a62");
        assert_eq!(judged(Format::Auto, &[0xff]), "ff");
        assert_eq!(
            judged(Format::Json, &[0xff]),
            r#"{"hex":"ff","len":1,"seq":7}"#
        );
    }

    #[test]
    fn a_pod_topic_is_binary_whatever_the_bytes() {
        let pod = |format| render(format, Payloads::Binary, 1, b"ABCD");
        assert_eq!(pod(Format::Auto), "41424344");
        assert_eq!(pod(Format::Json), r#"{"hex":"41424344","len":4,"seq":1}"#);
        assert_eq!(pod(Format::Hex), "41424344");
        assert_eq!(pod(Format::Text), "ABCD");
        let declared = |m: &MessageType| Payloads::of(m);
        assert_eq!(declared(&MessageType::pod::<[u8; 16]>()), Payloads::Binary);
        assert_eq!(
            declared(&MessageType::schema("app.Tick", 1)),
            Payloads::Judged
        );
        assert_eq!(declared(&MessageType::Bytes), Payloads::Judged);
    }
}
