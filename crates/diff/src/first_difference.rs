//! The first leaf where two JSON values differ, named by its path (`data.result.content`,
//! `data.toolRequests[0].arguments.path`).

use serde_json::Value;

/// Where two values differ first, and the value on each side there (`None`: absent there).
#[derive(Debug, Clone, PartialEq)]
pub struct LeafDiff {
    /// The path, e.g. `data.result.content`.
    pub path: String,
    /// A's value there.
    pub a: Option<Value>,
    /// B's value there.
    pub b: Option<Value>,
}

/// The first leaf under `path` where `a` and `b` differ: objects key by key (A's keys in A's
/// order, then the keys only B has), arrays element by element; `None` when they are equal.
pub fn first_difference(path: &str, a: &Value, b: &Value) -> Option<LeafDiff> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, left) in x {
                let sub = join(path, key);
                match y.get(key) {
                    Some(right) => {
                        if let Some(d) = first_difference(&sub, left, right) {
                            return Some(d);
                        }
                    }
                    None => {
                        return Some(LeafDiff {
                            path: sub,
                            a: Some(left.clone()),
                            b: None,
                        });
                    }
                }
            }
            y.iter()
                .find(|(key, _)| !x.contains_key(*key))
                .map(|(key, right)| LeafDiff {
                    path: join(path, key),
                    a: None,
                    b: Some(right.clone()),
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let sub = format!("{path}[{i}]");
                match (x.get(i), y.get(i)) {
                    (Some(left), Some(right)) => {
                        if let Some(d) = first_difference(&sub, left, right) {
                            return Some(d);
                        }
                    }
                    (left, right) => {
                        return Some(LeafDiff {
                            path: sub,
                            a: left.cloned(),
                            b: right.cloned(),
                        });
                    }
                }
            }
            None
        }
        (x, y) if x != y => Some(LeafDiff {
            path: path.to_owned(),
            a: Some(x.clone()),
            b: Some(y.clone()),
        }),
        _ => None,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_first_differing_leaf() {
        let d = first_difference(
            "",
            &json!({"data": {"a": 1, "list": [1, {"x": "p"}], "gone": true}}),
            &json!({"data": {"list": [1, {"x": "q"}, 3], "a": 1}}),
        )
        .expect("a difference");
        assert_eq!(d.path, "data.list[1].x");
        assert_eq!((d.a, d.b), (Some(json!("p")), Some(json!("q"))));
        let d = first_difference("", &json!({"a": 1}), &json!({"a": 1, "b": 2})).unwrap();
        assert_eq!((d.path.as_str(), d.a, d.b), ("b", None, Some(json!(2))));
        assert_eq!(
            first_difference("", &json!({"a": [1]}), &json!({"a": [1]})),
            None
        );
    }
}
