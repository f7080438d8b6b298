//! The leaves where two JSON values differ, named by their path (`data.result.content`,
//! `data.toolRequests[0].arguments.path`).

use serde_json::Value;

/// One difference: a path, and the value on each side (`None`: absent on that side).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Where, e.g. `data.result.content`.
    pub path: String,
    /// The recorded value.
    pub recorded: Option<Value>,
    /// The replayed value.
    pub replayed: Option<Value>,
}

/// Appends to `out` every leaf where `recorded` and `replayed` differ, under `path`. Objects
/// are compared key by key (order does not matter), arrays element by element.
pub fn diff_values(path: &str, recorded: &Value, replayed: &Value, out: &mut Vec<FieldDiff>) {
    match (recorded, replayed) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, left) in a {
                let sub = format!("{path}.{key}");
                match b.get(key) {
                    Some(right) => diff_values(&sub, left, right, out),
                    None => out.push(FieldDiff {
                        path: sub,
                        recorded: Some(left.clone()),
                        replayed: None,
                    }),
                }
            }
            for (key, right) in b {
                if !a.contains_key(key) {
                    out.push(FieldDiff {
                        path: format!("{path}.{key}"),
                        recorded: None,
                        replayed: Some(right.clone()),
                    });
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let sub = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(left), Some(right)) => diff_values(&sub, left, right, out),
                    (left, right) => out.push(FieldDiff {
                        path: sub,
                        recorded: left.cloned(),
                        replayed: right.cloned(),
                    }),
                }
            }
        }
        (a, b) if a != b => out.push(FieldDiff {
            path: path.to_owned(),
            recorded: Some(a.clone()),
            replayed: Some(b.clone()),
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_each_differing_leaf() {
        let mut out = Vec::new();
        diff_values(
            "data",
            &json!({"a": 1, "list": [1, {"x": "p"}], "gone": true}),
            &json!({"list": [1, {"x": "q"}, 3], "a": 1, "new": null}),
            &mut out,
        );
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["data.list[1].x", "data.list[2]", "data.gone", "data.new"]
        );
        assert_eq!(out[0].recorded, Some(json!("p")));
        assert_eq!(out[1].recorded, None);
        assert_eq!(out[2].replayed, None);
    }
}
