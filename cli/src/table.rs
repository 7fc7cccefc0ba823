//! Aligned text tables for the human-readable output of `list` and `stat`.

/// Renders `rows` under `header`, each column as wide as its widest cell, left-aligned, two
/// spaces apart; the last column is not padded.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 < widths.len() {
                out.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            } else {
                out.push_str(cell);
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = line(&mut header.iter().copied());
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align() {
        let t = super::render(
            &["A", "BB", "C"],
            &[vec!["xyz".into(), "1".into(), "last".into()]],
        );
        assert_eq!(t, "A    BB  C\nxyz  1   last\n");
    }
}
