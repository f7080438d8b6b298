//! Whatever a client attaches, preparing never panics, stays within its limits, records only
//! schema-valid attachments and assets, and renders the same message from the record alone.

use std::path::Path;
use std::sync::OnceLock;

use base64::Engine as _;
use jsonschema::Validator;
use proptest::prelude::*;
use serde_json::{Value, json};
use turnstile_loop::prompt::attachments::{
    Asset, MAX_ATTACHMENTS, Position, SelectionRange, model_content, prepare,
};
use turnstile_loop::prompt::{Attachment, ContentPart};

fn validator(definition: &str) -> Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/schema/session-events.schema.json");
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    schema["$ref"] = json!(format!("#/definitions/{definition}"));
    jsonschema::draft7::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

fn attachment_schema() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| validator("Attachment"))
}

fn asset_schema() -> &'static Validator {
    static V: OnceLock<Validator> = OnceLock::new();
    V.get_or_init(|| validator("BinaryAssetData"))
}

/// Paths that exist, do not, climb out, are absolute elsewhere, or are odd.
fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("notes.txt".to_owned()),
        Just("sub".to_owned()),
        Just("dot.png".to_owned()),
        Just("../../etc/passwd".to_owned()),
        Just("/etc/hostname".to_owned()),
        Just(String::new()),
        "[a-z./]{0,12}",
        any::<String>(),
    ]
}

fn attachment() -> impl Strategy<Value = Attachment> {
    let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nrest");
    prop_oneof![
        (
            path(),
            proptest::option::of(any::<String>()),
            proptest::option::of((1u64..5, 1u64..5))
        )
            .prop_map(|(path, display_name, range)| Attachment::File {
                path,
                display_name,
                line_range: range.map(|(a, b)| turnstile_loop::prompt::attachments::LineRange {
                    start: a.min(b),
                    end: a.max(b),
                }),
            }),
        (path(), proptest::option::of(any::<String>()))
            .prop_map(|(path, display_name)| Attachment::Directory { path, display_name }),
        (
            path(),
            any::<String>(),
            proptest::option::of(any::<String>()),
            0u64..100,
            0u64..100
        )
            .prop_map(
                |(file_path, display_name, text, a, b)| Attachment::Selection {
                    file_path,
                    display_name,
                    selection: Some(SelectionRange {
                        start: Position {
                            line: a,
                            character: 0
                        },
                        end: Position {
                            line: b,
                            character: 3
                        },
                    }),
                    text,
                }
            ),
        (
            prop_oneof![Just(png), "[A-Za-z0-9+/=]{0,40}", any::<String>()],
            prop_oneof![
                Just("image/png".to_owned()),
                Just("text/plain".to_owned()),
                Just("application/pdf".to_owned()),
                any::<String>()
            ],
            proptest::option::of(any::<String>())
        )
            .prop_map(|(data, mime_type, display_name)| Attachment::Blob {
                data,
                mime_type,
                display_name,
            }),
        (1u64..1000, any::<String>(), any::<String>()).prop_map(|(number, title, url)| {
            Attachment::GithubReference {
                number,
                title,
                reference_type: "issue".into(),
                state: "open".into(),
                url,
            }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prepared_attachments_are_bounded_valid_and_render_from_the_record(
        attachments in proptest::collection::vec(attachment(), 0..(MAX_ATTACHMENTS + 8)),
        prompt in any::<String>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "a\nb\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("dot.png"), b"\x89PNG\r\n\x1a\nrest").unwrap();

        let p = prepare(&attachments, dir.path(), false);
        prop_assert_eq!(p.recorded.len(), attachments.len().min(MAX_ATTACHMENTS));
        for r in &p.recorded {
            prop_assert!(attachment_schema().is_valid(r), "not schema-valid: {}", r);
            prop_assert!(r.get("data").is_none(), "bytes in the record: {}", r);
        }
        for a in &p.assets {
            let v = serde_json::to_value(a).unwrap();
            prop_assert!(asset_schema().is_valid(&v), "asset not schema-valid: {}", v);
        }
        // Nothing outside the working directory was counted.
        for r in &p.recorded {
            if let Some(entry) = r.get("taggedFilesEntry").and_then(Value::as_str)
                && entry.contains("/etc/")
            {
                prop_assert!(entry.contains("(error: "), "{}", entry);
            }
        }
        let transformed = p.transform(&prompt);
        let lookup = |id: &str| {
            p.assets.iter().find(|a| a.asset_id == id).map(|a| Asset {
                mime_type: &a.mime_type,
                data: &a.data,
            })
        };
        let (text, parts) = model_content(&transformed, &p.recorded, lookup);
        prop_assert!(text.contains(&prompt));
        // The record alone gives the same message again (a resume, a later call).
        let recorded: Vec<Value> =
            serde_json::from_str(&serde_json::to_string(&p.recorded).unwrap()).unwrap();
        let (again, parts_again) = model_content(&transformed, &recorded, lookup);
        prop_assert_eq!(&again, &text);
        prop_assert_eq!(&parts_again, &parts);
        let images = parts.iter().filter(|x| matches!(x, ContentPart::ImageUrl(_))).count();
        prop_assert_eq!(images > 0, !p.after_prompt.is_empty());
    }
}
