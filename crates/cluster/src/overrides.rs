//! `--set KEY=VALUE`: one scenario key changed without copying the file.
//!
//! The key is a dotted path into the scenario's TOML: `routing.policy`, `fabric.preset`,
//! `output.trace_ranks`. A job is named by its `name`: `job.llama3-8b.llm.tp` is the key `llm.tp`
//! of the `[[job]]` whose name is `llama3-8b`. The value is read as a TOML value (`4`, `true`,
//! `["racks=4"]`, `"x"`); anything that is not one is a string, so `routing.policy=eecmp` needs
//! no quotes. Tables on the way that the file lacks are created; a key the scenario does not know
//! is refused when the scenario is read, as in a file.

use toml::{Table, Value};

/// One `KEY=VALUE` override.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub key: String,
    pub value: Value,
}

impl Override {
    /// Reads `KEY=VALUE`.
    pub fn parse(arg: &str) -> Result<Override, String> {
        let (key, text) = arg
            .split_once('=')
            .ok_or_else(|| format!("--set {arg}: expected KEY=VALUE"))?;
        let key = key.trim();
        if key.is_empty() || key.split('.').any(str::is_empty) {
            return Err(format!(
                "--set {arg}: expected a dotted key such as routing.policy"
            ));
        }
        let text = text.trim();
        // A TOML value, or else the text as a string.
        let value = format!("v = {text}")
            .parse::<Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| Value::String(text.to_string()));
        Ok(Override {
            key: key.to_string(),
            value,
        })
    }

    /// Sets the key in the scenario's table.
    pub fn apply(&self, root: &mut Table) -> Result<(), String> {
        let err = |what: String| format!("--set {}: {what}", self.key);
        let parts: Vec<&str> = self.key.split('.').collect();
        let (last, path) = parts.split_last().expect("a key has a part");
        let mut table = root;
        let mut i = 0;
        while i < path.len() {
            let part = path[i];
            if part == "job" {
                let name = parts
                    .get(i + 1)
                    .filter(|_| i + 1 < path.len())
                    .ok_or_else(|| err("expected job.NAME.KEY".into()))?;
                table = job_named(table, name).map_err(err)?;
                i += 2;
                continue;
            }
            let next = table
                .entry(part.to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            table = match next {
                Value::Table(t) => t,
                _ => return Err(err(format!("`{part}` is a value, not a table"))),
            };
            i += 1;
        }
        if *last == "job" {
            return Err(err("expected job.NAME.KEY".into()));
        }
        table.insert(last.to_string(), self.value.clone());
        Ok(())
    }
}

/// The `[[job]]` table named `name`.
fn job_named<'a>(root: &'a mut Table, name: &str) -> Result<&'a mut Table, String> {
    let jobs = match root.get_mut("job") {
        Some(Value::Array(jobs)) => jobs,
        _ => return Err("the scenario has no [[job]]".into()),
    };
    let names: Vec<String> = jobs
        .iter()
        .filter_map(|j| j.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    jobs.iter_mut()
        .filter_map(Value::as_table_mut)
        .find(|j| j.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| {
            format!(
                "no job named `{name}`: expected one of {}",
                names.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[fabric]
preset = "meta-ai-zone"

[[job]]
name = "a"
[job.llm]
tp = 8

[[job]]
name = "b.c"
"#;

    fn set(arg: &str) -> Result<Table, String> {
        let mut t: Table = TEXT.parse().unwrap();
        Override::parse(arg)?.apply(&mut t)?;
        Ok(t)
    }

    #[test]
    fn values_are_toml_or_else_strings() {
        let t = set("routing.policy=eecmp").unwrap();
        assert_eq!(t["routing"]["policy"].as_str(), Some("eecmp"));
        let t = set("job.a.llm.tp=4").unwrap();
        assert_eq!(t["job"][0]["llm"]["tp"].as_integer(), Some(4));
        let t = set("fabric.set=[\"racks=4\"]").unwrap();
        assert_eq!(t["fabric"]["set"][0].as_str(), Some("racks=4"));
    }

    #[test]
    fn bad_keys_are_named() {
        let e = set("job.z.llm.tp=4").unwrap_err();
        assert!(
            e.contains("no job named `z`: expected one of a, b.c"),
            "{e}"
        );
        let e = set("fabric.preset.x=1").unwrap_err();
        assert!(e.contains("`preset` is a value, not a table"), "{e}");
        assert!(set("routing.policy")
            .unwrap_err()
            .contains("expected KEY=VALUE"));
        assert!(set("routing..policy=x").unwrap_err().contains("dotted key"));
        assert!(set("job.a=1").unwrap_err().contains("job.NAME.KEY"));
    }
}
