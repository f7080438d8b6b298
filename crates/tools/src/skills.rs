//! Skills: `DIR/<name>/SKILL.md` files of the SDK's `skillDirectories`, each a front matter
//! (`name`, `description`) and a body the model loads with the `skill` tool
//! (`tools/skill.rs`). A file that cannot be used is a warning naming it; the session goes on
//! without that skill.

use std::path::{Path, PathBuf};

use turnstile_journal::payload::SkillSummary;

/// The largest `SKILL.md` read; a bigger one is skipped with a warning.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// The `source` of a skill from a configured directory (the runtime's word).
pub const CUSTOM_SOURCE: &str = "custom";

/// One skill found in a skill directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Front matter `name`.
    pub name: String,
    /// Front matter `description`.
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    /// The text after the front matter (leading empty lines left out).
    pub body: String,
    /// Not named in `disabledSkills`.
    pub enabled: bool,
}

impl Skill {
    /// The directory holding the skill's `SKILL.md` (its base directory for the model).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(&self.path)
    }

    /// The `<skill-context>` block the model reads after loading the skill (the runtime's).
    pub fn context(&self) -> String {
        format!(
            "<skill-context name=\"{}\">\nBase directory for this skill: {}\n\n{}\n</skill-context>",
            self.name,
            self.dir().display(),
            self.body
        )
    }
}

/// A skill file that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("skill file {} not loaded: {reason}", path.display())]
pub struct SkillWarning {
    /// The file (or directory) at fault.
    pub path: PathBuf,
    /// What is wrong with it and what to do.
    pub reason: String,
}

/// The skills of a session, in the order they are listed: directories in the order given,
/// each directory's skills by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    skills: Vec<Skill>,
}

impl SkillSet {
    /// Reads every `DIR/<name>/SKILL.md` of `dirs`; skills named in `disabled` are listed but
    /// not enabled. A later skill with a name already taken is skipped (the first wins).
    pub fn load(dirs: &[PathBuf], disabled: &[String]) -> (SkillSet, Vec<SkillWarning>) {
        let mut set = SkillSet::default();
        let mut warnings = Vec::new();
        for dir in dirs {
            let entries = match std::fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(e) => {
                    warnings.push(SkillWarning {
                        path: dir.clone(),
                        reason: format!("the skill directory cannot be read ({e})"),
                    });
                    continue;
                }
            };
            let mut files: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("SKILL.md"))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for path in files {
                match read_skill(&path) {
                    Ok((name, description, body)) => {
                        if set.skills.iter().any(|s| s.name == name) {
                            warnings.push(SkillWarning {
                                path,
                                reason: format!("a skill named {name:?} was already loaded"),
                            });
                            continue;
                        }
                        let enabled = !disabled.contains(&name);
                        set.skills.push(Skill {
                            name,
                            description,
                            path,
                            body,
                            enabled,
                        });
                    }
                    Err(reason) => warnings.push(SkillWarning { path, reason }),
                }
            }
        }
        (set, warnings)
    }

    /// Every skill, enabled or not.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The enabled skill called `name`.
    pub fn enabled(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.enabled && s.name == name)
    }

    /// Whether any skill is enabled (the `skill` tool is offered only then, as the runtime).
    pub fn any_enabled(&self) -> bool {
        self.skills.iter().any(|s| s.enabled)
    }

    /// The names of the enabled skills, in order.
    pub fn enabled_names(&self) -> Vec<&str> {
        self.skills
            .iter()
            .filter(|s| s.enabled)
            .map(|s| s.name.as_str())
            .collect()
    }

    /// The skills as `session.skills_loaded` lists them.
    pub fn summaries(&self) -> Vec<SkillSummary> {
        self.skills
            .iter()
            .map(|s| SkillSummary {
                name: s.name.clone(),
                command_name: Some(s.name.clone()),
                description: s.description.clone(),
                source: CUSTOM_SOURCE.into(),
                user_invocable: true,
                enabled: s.enabled,
                path: Some(s.path.display().to_string()),
                argument_hint: None,
            })
            .collect()
    }
}

/// Reads one `SKILL.md`: its name, description and body, or why it cannot be used.
fn read_skill(path: &Path) -> Result<(String, String, String), String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot be read ({e})"))?
        .len();
    if size > MAX_SKILL_FILE_BYTES {
        return Err(format!(
            "it is {size} bytes, more than the {MAX_SKILL_FILE_BYTES} a skill may have"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot be read ({e})"))?;
    parse_skill(&text)
}

/// Splits a skill file into front matter fields and body.
fn parse_skill(text: &str) -> Result<(String, String, String), String> {
    const NO_FRONT_MATTER: &str = "it has no front matter: start it with a line `---`, then `name:` and `description:` lines, then `---`";
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(NO_FRONT_MATTER)?;
    let mut name = None;
    let mut description = None;
    let mut body = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" {
            body = Some(&rest[offset..]);
            break;
        }
        if let Some((key, value)) = trimmed.split_once(':') {
            let value = unquote(value.trim());
            match key.trim() {
                "name" => name = Some(value),
                "description" => description = Some(value),
                _ => {}
            }
        }
    }
    let body = body.ok_or("its front matter is not closed by a line `---`")?;
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or("its front matter has no `name`")?;
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or("its front matter has no `description`")?;
    let body = body.trim_start_matches(['\n', '\r']).to_owned();
    Ok((name, description, body))
}

/// A front matter value without the quotes YAML allows around it.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner.to_owned();
        }
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn front_matter_and_body() {
        let (name, description, body) =
            parse_skill("---\nname: demo\ndescription: \"A demo\"\nother: x\n---\n\nBody\n")
                .unwrap();
        assert_eq!(
            (name.as_str(), description.as_str(), body.as_str()),
            ("demo", "A demo", "Body\n")
        );
        assert!(
            parse_skill("No front matter")
                .unwrap_err()
                .contains("no front matter")
        );
        assert!(
            parse_skill("---\nname: x\n")
                .unwrap_err()
                .contains("not closed")
        );
        assert!(
            parse_skill("---\ndescription: d\n---\n")
                .unwrap_err()
                .contains("`name`")
        );
        assert!(
            parse_skill("---\nname: n\n---\n")
                .unwrap_err()
                .contains("`description`")
        );
    }

    #[test]
    fn loads_directories_with_warnings_for_bad_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("skills");
        write(
            &dir,
            "demo",
            "---\nname: demo\ndescription: A demo skill\n---\n\nSay DEMO.\n",
        );
        write(
            &dir,
            "off",
            "---\nname: off\ndescription: Off\n---\nNever.\n",
        );
        write(&dir, "bad", "No front matter here.\n");
        write(
            &dir,
            "twin",
            "---\nname: demo\ndescription: Again\n---\nx\n",
        );
        let big = format!(
            "---\nname: big\ndescription: Big\n---\n{}",
            "x".repeat(MAX_SKILL_FILE_BYTES as usize)
        );
        write(&dir, "big", &big);
        let missing = tmp.path().join("missing");
        let (set, warnings) = SkillSet::load(&[dir.clone(), missing.clone()], &["off".into()]);
        let names: Vec<_> = set
            .all()
            .iter()
            .map(|s| (s.name.as_str(), s.enabled))
            .collect();
        assert_eq!(names, vec![("demo", true), ("off", false)]);
        assert_eq!(set.enabled_names(), vec!["demo"]);
        assert!(set.enabled("off").is_none());
        let paths: Vec<_> = warnings.iter().map(|w| w.path.clone()).collect();
        assert_eq!(
            paths,
            vec![
                dir.join("bad/SKILL.md"),
                dir.join("big/SKILL.md"),
                dir.join("twin/SKILL.md"),
                missing
            ]
        );
        assert!(
            warnings[1].to_string().contains("more than"),
            "{}",
            warnings[1]
        );
        let demo = set.enabled("demo").unwrap();
        assert_eq!(
            demo.context(),
            format!(
                "<skill-context name=\"demo\">\nBase directory for this skill: {}\n\nSay DEMO.\n\n</skill-context>",
                dir.join("demo").display()
            )
        );
        let summary = &set.summaries()[1];
        assert_eq!(
            (summary.source.as_str(), summary.enabled),
            ("custom", false)
        );
    }
}
