//! One HTML page: a title, sections of prose, tables and inline SVG charts, and the run's
//! parameters. Self-contained: its style is inline and it names nothing to fetch.

/// `text` with HTML's special characters escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}\
table{border-collapse:collapse;margin:0.5em 0;font-size:0.9em}\
td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\
p.note{color:#555;font-size:0.9em}svg{max-width:100%;height:auto}";

/// A page being written.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    pub fn new(title: &str) -> Page {
        Page {
            title: title.to_string(),
            body: String::new(),
        }
    }

    /// A section: a heading, then `html` (already escaped: tables, charts, notes).
    pub fn section(&mut self, heading: &str, html: &str) {
        self.body += &format!("<h2>{}</h2>\n{html}\n", escape(heading));
    }

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n{}\
<p class=\"note\">Written by fabricsim {}.</p>\n</body></html>\n",
            self.body,
            env!("CARGO_PKG_VERSION"),
            t = escape(&self.title),
        )
    }
}

/// A table: `head` cells, then `rows` (cell text, escaped here).
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><tr>");
    for h in head {
        out += &format!("<th>{}</th>", escape(h));
    }
    out += "</tr>\n";
    for row in rows {
        out += "<tr>";
        for cell in row {
            out += &format!("<td>{}</td>", escape(cell));
        }
        out += "</tr>\n";
    }
    out + "</table>"
}

/// A note under a chart or table.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", escape(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_break_out_of_the_page() {
        assert_eq!(
            escape("<script>alert('x')</script>&\u{1b}"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;\u{FFFD}"
        );
        let mut p = Page::new("a <b>");
        p.section("s", &table(&["k"], &[vec!["<i>".into()]]));
        let html = p.finish();
        assert!(html.contains("<title>a &lt;b&gt;</title>"));
        assert!(html.contains("<td>&lt;i&gt;</td>"));
    }
}
