//! How `echo` prints a message and how `pub --hex` reads one: text, hex, JSON lines.

use clap::ValueEnum;
use serde_json::json;

/// How `echo` prints each message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text when the payload is printable UTF-8 (tabs allowed), otherwise hex.
    Auto,
    /// Lowercase hex, one message a line (what `pub --hex` reads back).
    Hex,
    /// The payload as UTF-8 text, invalid bytes replaced.
    Text,
    /// One JSON object a line: sequence number, size, and the payload as `text` when it is
    /// UTF-8 text (tabs and line breaks allowed, no other control character, as `auto` judges
    /// it), or `hex` (anything else, such as binary that happens to be valid UTF-8).
    Json,
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

/// The line `echo` prints for message `seq` with `payload`.
pub fn render(format: Format, seq: u64, payload: &[u8]) -> String {
    match format {
        Format::Auto if is_text(payload) => String::from_utf8_lossy(payload).into_owned(),
        Format::Auto | Format::Hex => hex(payload),
        Format::Text => String::from_utf8_lossy(payload).into_owned(),
        Format::Json => match text(payload, true) {
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
            let v: serde_json::Value = serde_json::from_str(&render(Format::Json, 7, p)).unwrap();
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
        assert_eq!(render(Format::Auto, 0, b"a\tb"), "a\tb");
        assert_eq!(render(Format::Auto, 0, b"a\nb"), "610a62");
        assert_eq!(render(Format::Auto, 0, &[0xff]), "ff");
        assert_eq!(
            render(Format::Json, 7, &[0xff]),
            r#"{"hex":"ff","len":1,"seq":7}"#
        );
    }
}
