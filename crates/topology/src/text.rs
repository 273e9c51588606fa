//! Line-oriented input files (the flows and demand CSVs).

/// The lines of `text` that hold data, numbered from 1 and trimmed: blank lines and `#`
/// comment lines left out.
pub fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}
