//! Line-oriented input files (the flows and demand CSVs).

/// The lines of `text` that hold data, numbered from 1 and trimmed: blank lines and `#`
/// comment lines left out, and a UTF-8 byte-order mark before the first line (spreadsheets
/// write one) dropped.
pub fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_and_comments_are_not_data() {
        let text = "\u{feff}src,dst,rate\n\n# a comment\n host0/gpu0,host1/gpu0,1Gbps \n";
        let lines: Vec<_> = data_lines(text).collect();
        assert_eq!(
            lines,
            [(1, "src,dst,rate"), (4, "host0/gpu0,host1/gpu0,1Gbps")]
        );
    }
}
