//! The user settings the Copilot CLI 1.0.81-0 knows (`user.settings.get` lists every one, in
//! this order, with its default), and the shape of each as its `user.settings.set` checks it.
//! The table was taken from the CLI: its `get` on an empty home for the keys and defaults,
//! and its `set` of `true`, `7`, `"x"`, `[]` and `{}` for each key for the shapes. A key the
//! CLI accepted every one of those for is [`Kind::Any`]; nested fields are not checked beyond
//! what the CLI refused of `{}` (`statusLine.command`).

use serde_json::Value;

use crate::json_type::json_type_name;

/// What a setting's value may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `true` or `false`.
    Boolean,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object holding at least these fields.
    Object(&'static [&'static str]),
    /// `true`, `false` or an object (`sidebar`).
    BooleanOrObject,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// Anything the CLI's check let through.
    Any,
}

/// One known setting.
#[derive(Debug, Clone, Copy)]
pub(super) struct Known {
    /// Its key in the file.
    pub(super) key: &'static str,
    /// What its value may be.
    pub(super) kind: Kind,
    /// Its default as JSON text; `None` when it has none (listed as `null`).
    pub(super) default: Option<&'static str>,
}

impl Known {
    /// The default value (`null` when none).
    pub(super) fn default_value(&self) -> Value {
        self.default
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or(Value::Null)
    }
}

/// The known setting `key`.
pub(super) fn known(key: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.key == key)
}

/// Whether `value` fits `kind`; the CLI's words when not (`KEY: Expected boolean, received
/// string`), the key first.
pub(super) fn check(key: &str, kind: Kind, value: &Value) -> Result<(), String> {
    let received = json_type_name(value);
    let fits = match kind {
        Kind::Any => true,
        Kind::Boolean => value.is_boolean(),
        Kind::String => value.is_string(),
        Kind::Array => value.is_array(),
        Kind::BooleanOrObject => value.is_boolean() || value.is_object(),
        Kind::Object(required) => {
            let Some(fields) = value.as_object() else {
                return Err(format!("{key}: Expected object, received {received}"));
            };
            if let Some(missing) = required.iter().find(|f| !fields.contains_key(**f)) {
                return Err(format!("{key}.{missing}: Required"));
            }
            true
        }
        Kind::OneOf(options) => {
            let listed = options
                .iter()
                .map(|o| format!("'{o}'"))
                .collect::<Vec<_>>()
                .join(" | ");
            return match value.as_str() {
                Some(s) if options.contains(&s) => Ok(()),
                Some(s) => Err(format!(
                    "{key}: Invalid enum value. Expected {listed}, received '{s}'"
                )),
                None => Err(format!("{key}: Expected {listed}, received {received}")),
            };
        }
    };
    if fits {
        return Ok(());
    }
    let expected = match kind {
        Kind::Boolean => "boolean",
        Kind::String => "string",
        Kind::Array => "array",
        _ => "object",
    };
    Err(format!("{key}: Expected {expected}, received {received}"))
}

/// Every setting `user.settings.get` lists, in the CLI's order.
pub(super) const KNOWN: &[Known] = &[
    Known {
        key: "mouse",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "askUser",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "autoUpdate",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "bashEnv",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "powershellFlags",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "autoUpdatesChannel",
        kind: Kind::OneOf(&["stable", "prerelease"]),
        default: None,
    },
    Known {
        key: "banner",
        kind: Kind::OneOf(&["always", "once", "never"]),
        default: None,
    },
    Known {
        key: "showTipsOnStartup",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "beep",
        kind: Kind::Boolean,
        default: Some(r#"false"#),
    },
    Known {
        key: "beepOnSchedule",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "notifications",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "keepAlive",
        kind: Kind::OneOf(&["on", "off", "busy"]),
        default: Some(r#""off""#),
    },
    Known {
        key: "includeCoAuthoredBy",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "compactPaste",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "copyOnSelect",
        kind: Kind::Boolean,
        default: Some(r#"false"#),
    },
    Known {
        key: "commandHistoryMaxSize",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "worktreeBaseRef",
        kind: Kind::OneOf(&["head", "defaultBranch"]),
        default: Some(r#""head""#),
    },
    Known {
        key: "respectGitignore",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "proxyKerberosServicePrincipal",
        kind: Kind::String,
        default: None,
    },
    Known {
        key: "proxyUrl",
        kind: Kind::String,
        default: None,
    },
    Known {
        key: "builtInAgents",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "memory",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "toolSearch",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "model",
        kind: Kind::String,
        default: None,
    },
    Known {
        key: "effortLevel",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "contextTier",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "planModel",
        kind: Kind::String,
        default: None,
    },
    Known {
        key: "planEffortLevel",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "planContextTier",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "subagents",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "continueOnAutoMode",
        kind: Kind::Boolean,
        default: Some(r#"false"#),
    },
    Known {
        key: "stayInAutopilot",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "renderMarkdown",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "renderHexColors",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "inlineImages",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "inlineImageLiveWindow",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "scrollbar",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "pinnedPrompts",
        kind: Kind::Boolean,
        default: Some(r#"false"#),
    },
    Known {
        key: "sidebar",
        kind: Kind::BooleanOrObject,
        default: Some(
            r#"{"enabled":true,"showResumableSessions":true,"showHeaderButtons":true,"showCloseButton":false,"hoverFocus":false,"coloredHints":true,"accentActiveSession":true}"#,
        ),
    },
    Known {
        key: "remoteExport",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "statusLine",
        kind: Kind::Object(&["command"]),
        default: None,
    },
    Known {
        key: "screenReader",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "theme",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "allowedUrls",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "deniedUrls",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "storeTokenPlaintext",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "stream",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "streamerMode",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "footer",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "tabs",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "updateTerminalTitle",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "terminalProgress",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "mergeStrategy",
        kind: Kind::OneOf(&["rebase", "merge"]),
        default: None,
    },
    Known {
        key: "customAgents",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "ide",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "companyAnnouncements",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "enabledFeatureFlags",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "feature_flags",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "skillDirectories",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "disabledSkills",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "disabledMcpServers",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "enabledMcpServers",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "githubMcpToolsets",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "githubMcpTools",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "enableAllGithubMcpTools",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "githubMcpInsiders",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "dynamicRetrieval",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "sandbox",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "extensions",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "enabledPlugins",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "extraKnownMarketplaces",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "strictKnownMarketplaces",
        kind: Kind::Any,
        default: None,
    },
    Known {
        key: "voice",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "permissions",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "copilotUrl",
        kind: Kind::String,
        default: None,
    },
    Known {
        key: "showReasoning",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "showTimestamps",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "showToolDurations",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
    Known {
        key: "disableAllHooks",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "hooks",
        kind: Kind::Object(&[]),
        default: None,
    },
    Known {
        key: "disabledHooks",
        kind: Kind::Array,
        default: None,
    },
    Known {
        key: "remoteSessions",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "experimental",
        kind: Kind::Boolean,
        default: None,
    },
    Known {
        key: "logLevel",
        kind: Kind::OneOf(&[
            "none", "error", "warning", "info", "debug", "all", "default",
        ]),
        default: None,
    },
    Known {
        key: "shellShortcut",
        kind: Kind::Boolean,
        default: Some(r#"true"#),
    },
];
