//! `--name VALUE` options of the bench examples, taken out of the argument list wherever they
//! stand (the examples' positional arguments are what is left).

use std::fmt::Display;
use std::str::FromStr;

/// Removes `name` and its value from `args`; `None` when `name` is absent.
pub fn take<T>(args: &mut Vec<String>, name: &str) -> Result<Option<T>, String>
where
    T: FromStr,
    T::Err: Display,
{
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    let value = args
        .get(i + 1)
        .ok_or_else(|| format!("{name} needs a value"))?
        .parse()
        .map_err(|e| format!("{name}: {e}"))?;
    args.drain(i..i + 2);
    Ok(Some(value))
}
