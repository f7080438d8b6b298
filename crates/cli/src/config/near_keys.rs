//! Keys of a settings file that look like a misspelt setting (`"modle"`): warned about,
//! naming the key, the file and the setting meant. The Copilot CLI keeps its own keys in the
//! same files (`theme`, `banner`, ...), so an unknown key far from every setting is theirs
//! and said nothing about.

use std::path::Path;

/// The top-level keys turnstile reads (`turnstile_home::settings::FileSettings`, and
/// `disabledMcpServers` read by `turnstile_home::mcp_config`).
pub const KNOWN: &[&str] = &[
    "model",
    "provider",
    "trustedFolders",
    "trusted_folders",
    "allowedTools",
    "deniedTools",
    "durability",
    "mcpServers",
    "sandbox",
    "modelTimeout",
    "modelIdleTimeout",
    "maxToolCalls",
    "maxParallelTools",
    "maxParallelAgents",
    "disabledMcpServers",
];

/// One line per top-level key of `text` (the file at `path`) that is no setting but within two
/// edits of one.
pub fn warnings(path: &Path, text: &str) -> Vec<String> {
    let stripped = turnstile_home::jsonc::strip_comments(text);
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(&stripped) else {
        return Vec::new();
    };
    map.keys()
        .filter(|key| !KNOWN.contains(&key.as_str()))
        .filter_map(|key| {
            let near = KNOWN
                .iter()
                .map(|known| {
                    (
                        distance(&key.to_ascii_lowercase(), &known.to_ascii_lowercase()),
                        known,
                    )
                })
                .filter(|(d, _)| *d <= 2)
                .min_by_key(|(d, _)| *d)?;
            Some(format!(
                "{}: unknown setting {key:?} is ignored; did you mean {:?}?",
                path.display(),
                near.1
            ))
        })
        .collect()
}

/// Edit distance (insertions, deletions, substitutions, and a swap of two neighbours).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_key_is_named_with_the_setting_meant_and_a_far_one_is_left_alone() {
        let text = r#"{"modle": "x", "theme": "dark", "model": "y", "sandBox": false, // c
            "maxToolCall": 3}"#;
        let got = warnings(Path::new("/h/settings.json"), text);
        assert_eq!(
            got,
            [
                "/h/settings.json: unknown setting \"modle\" is ignored; did you mean \"model\"?",
                "/h/settings.json: unknown setting \"sandBox\" is ignored; did you mean \"sandbox\"?",
                "/h/settings.json: unknown setting \"maxToolCall\" is ignored; did you mean \"maxToolCalls\"?",
            ]
        );
        assert_eq!(distance("modle", "model"), 1);
    }
}
