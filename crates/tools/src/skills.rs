//! Skills: `DIR/<name>/SKILL.md` files of the SDK's `skillDirectories`, each a front matter
//! (`name`, `description`) and a body the model loads with the `skill` tool
//! (`tools/skill.rs`). A file that cannot be used is a warning naming it; the session goes on
//! without that skill.
//!
//! A session's set is live: a client turns a skill on or off (`session.skills.enable` /
//! `disable`) and reads the directories again (`reload`) while the session runs; the `skill`
//! tool and the next system prompt read the set as it is then. A toggle outlives a reload, as
//! in the runtime, and may name a skill that is not (yet) there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

use turnstile_journal::payload::SkillSummary;

/// The largest `SKILL.md` read; a bigger one is skipped with a warning.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// The most skill names a session's toggles remember (each toggle of a new name is one more).
pub const MAX_SKILL_TOGGLES: usize = 1024;

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
    /// Not named in `disabledSkills`, or turned on since.
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

/// A toggle the set does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToggleError {
    /// The session already remembers [`MAX_SKILL_TOGGLES`] names.
    #[error(
        "the session already remembers toggles of {MAX_SKILL_TOGGLES} skill names; {0:?} is one too many"
    )]
    TooMany(String),
}

/// The skills of a session, in the order they are listed: directories in the order given,
/// each directory's skills by name.
#[derive(Debug, Default)]
pub struct SkillSet {
    /// The directories read, again on a reload.
    dirs: Vec<PathBuf>,
    /// `disabledSkills`: off unless a toggle turned them on.
    disabled: Vec<String>,
    state: RwLock<Loaded>,
}

/// What the directories held at the last read, and the client's toggles since the start.
#[derive(Debug, Default)]
struct Loaded {
    skills: Vec<Skill>,
    toggles: BTreeMap<String, bool>,
}

impl SkillSet {
    /// Reads every `DIR/<name>/SKILL.md` of `dirs`; skills named in `disabled` are listed but
    /// not enabled. A later skill with a name already taken is skipped (the first wins).
    pub fn load(dirs: &[PathBuf], disabled: &[String]) -> (SkillSet, Vec<SkillWarning>) {
        let set = SkillSet {
            dirs: dirs.to_vec(),
            disabled: disabled.to_vec(),
            state: RwLock::default(),
        };
        let warnings = set.reload();
        (set, warnings)
    }

    /// Reads the directories again: skills added since are listed, removed ones are gone, and
    /// the toggles made so far still hold. Returns the files that could not be used.
    pub fn reload(&self) -> Vec<SkillWarning> {
        let (mut skills, warnings) = read_dirs(&self.dirs);
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        for skill in &mut skills {
            skill.enabled = state
                .toggles
                .get(&skill.name)
                .copied()
                .unwrap_or_else(|| !self.disabled.contains(&skill.name));
        }
        state.skills = skills;
        warnings
    }

    /// Turns the skill `name` on or off for the rest of the session (a name no skill has yet
    /// holds for a skill of that name a reload finds).
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), ToggleError> {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        if !state.toggles.contains_key(name) && state.toggles.len() >= MAX_SKILL_TOGGLES {
            return Err(ToggleError::TooMany(name.to_owned()));
        }
        state.toggles.insert(name.to_owned(), enabled);
        for skill in state.skills.iter_mut().filter(|s| s.name == name) {
            skill.enabled = enabled;
        }
        Ok(())
    }

    /// Whether the session was given skill directories (the `skill` tool is registered then).
    pub fn configured(&self) -> bool {
        !self.dirs.is_empty()
    }

    fn read<T>(&self, f: impl FnOnce(&[Skill]) -> T) -> T {
        f(&self
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .skills)
    }

    /// Every skill, enabled or not.
    pub fn all(&self) -> Vec<Skill> {
        self.read(<[Skill]>::to_vec)
    }

    /// Whether the directories held no skill at the last read.
    pub fn is_empty(&self) -> bool {
        self.read(<[Skill]>::is_empty)
    }

    /// The enabled skill called `name`.
    pub fn enabled(&self, name: &str) -> Option<Skill> {
        self.read(|skills| skills.iter().find(|s| s.enabled && s.name == name).cloned())
    }

    /// Whether any skill is enabled (the `skill` tool is offered only then, as the runtime).
    pub fn any_enabled(&self) -> bool {
        self.read(|skills| skills.iter().any(|s| s.enabled))
    }

    /// The names of the enabled skills, in order.
    pub fn enabled_names(&self) -> Vec<String> {
        self.read(|skills| {
            skills
                .iter()
                .filter(|s| s.enabled)
                .map(|s| s.name.clone())
                .collect()
        })
    }

    /// The enabled skills as (name, description), in order (the system prompt's list).
    pub fn enabled_descriptions(&self) -> Vec<(String, String)> {
        self.read(|skills| {
            skills
                .iter()
                .filter(|s| s.enabled)
                .map(|s| (s.name.clone(), s.description.clone()))
                .collect()
        })
    }

    /// The skills as `session.skills_loaded` (and `session.skills.list`) list them.
    pub fn summaries(&self) -> Vec<SkillSummary> {
        self.read(|skills| {
            skills
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
        })
    }
}

/// Reads every `DIR/<name>/SKILL.md` of `dirs`, all enabled; the first skill of a name wins.
fn read_dirs(dirs: &[PathBuf]) -> (Vec<Skill>, Vec<SkillWarning>) {
    let mut skills: Vec<Skill> = Vec::new();
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
                    if skills.iter().any(|s| s.name == name) {
                        warnings.push(SkillWarning {
                            path,
                            reason: format!("a skill named {name:?} was already loaded"),
                        });
                        continue;
                    }
                    skills.push(Skill {
                        name,
                        description,
                        path,
                        body,
                        enabled: true,
                    });
                }
                Err(reason) => warnings.push(SkillWarning { path, reason }),
            }
        }
    }
    (skills, warnings)
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

    fn states(set: &SkillSet) -> Vec<(String, bool)> {
        set.all().into_iter().map(|s| (s.name, s.enabled)).collect()
    }

    #[test]
    fn toggles_hold_across_reloads_and_name_skills_to_come() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("skills");
        write(&dir, "a", "---\nname: a\ndescription: A\n---\nA\n");
        write(&dir, "b", "---\nname: b\ndescription: B\n---\nB\n");
        let (set, _) = SkillSet::load(std::slice::from_ref(&dir), &["b".into()]);
        set.set_enabled("b", true).unwrap();
        set.set_enabled("a", false).unwrap();
        set.set_enabled("c", false).unwrap();
        assert_eq!(states(&set), vec![("a".into(), false), ("b".into(), true)]);
        assert_eq!(set.enabled("b").map(|s| s.body), Some("B\n".into()));
        assert!(set.enabled("a").is_none());
        write(&dir, "c", "---\nname: c\ndescription: C\n---\nC\n");
        write(&dir, "d", "---\nname: d\ndescription: D\n---\nD\n");
        std::fs::remove_dir_all(dir.join("a")).unwrap();
        assert!(set.reload().is_empty());
        assert_eq!(
            states(&set),
            vec![("b".into(), true), ("c".into(), false), ("d".into(), true)]
        );
        assert_eq!(
            set.enabled_descriptions(),
            vec![("b".into(), "B".into()), ("d".into(), "D".into())]
        );
    }

    #[test]
    fn toggles_of_new_names_are_bounded() {
        let set = SkillSet::default();
        for i in 0..MAX_SKILL_TOGGLES {
            set.set_enabled(&format!("s{i}"), true).unwrap();
        }
        // A name already remembered may still change.
        set.set_enabled("s0", false).unwrap();
        assert_eq!(
            set.set_enabled("one-more", true),
            Err(ToggleError::TooMany("one-more".into()))
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
        assert_eq!(
            states(&set),
            vec![("demo".into(), true), ("off".into(), false)]
        );
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
