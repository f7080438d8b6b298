//! Skipping a wrapper's own options to find the command it runs, and the option tables of the
//! wrappers that have many (`xargs`, `sudo`).

use crate::shell::Word;

/// `xargs` options that take a value.
pub(super) const XARGS_WITH_ARG: &[&str] = &[
    "-a",
    "-d",
    "-E",
    "-I",
    "-L",
    "-n",
    "-P",
    "-s",
    "--arg-file",
    "--delimiter",
    "--eof",
    "--replace",
    "--max-lines",
    "--max-args",
    "--max-procs",
    "--max-chars",
    "--process-slot-var",
];

/// `xargs` options that take none.
pub(super) const XARGS_FLAGS: &[&str] = &[
    "-0",
    "-o",
    "-p",
    "-r",
    "-t",
    "-x",
    "--null",
    "--interactive",
    "--no-run-if-empty",
    "--verbose",
    "--exit",
    "--open-tty",
    "-i",
    "-l",
    "-e",
];

/// `sudo` (and `doas`) options that take a value.
pub(super) const SUDO_WITH_ARG: &[&str] = &[
    "-u",
    "-g",
    "-h",
    "-C",
    "-D",
    "-p",
    "-r",
    "-t",
    "-U",
    "-T",
    "-R",
    "--user",
    "--group",
    "--host",
    "--prompt",
    "--chdir",
    "--role",
    "--type",
    "--other-user",
    "--close-from",
    "--command-timeout",
    "--chroot",
];

/// `sudo` (and `doas`) options that take none.
pub(super) const SUDO_FLAGS: &[&str] = &[
    "-A",
    "-b",
    "-E",
    "-H",
    "-i",
    "-k",
    "-K",
    "-l",
    "-n",
    "-P",
    "-S",
    "-s",
    "-v",
    "-V",
    "-L",
    "--",
    "--askpass",
    "--background",
    "--preserve-env",
    "--set-home",
    "--login",
    "--non-interactive",
    "--stdin",
    "--shell",
    "--reset-timestamp",
    "--remove-timestamp",
    "--list",
    "--preserve-groups",
];

/// Skips a wrapper's options: `with_arg` take the next word (or `=value`/attached), `flags`
/// take none; `--` ends them. `None` when an option is not known (the analysis gives up).
pub(super) fn skip_options<'a>(
    args: &'a [Word],
    with_arg: &[&str],
    flags: &[&str],
) -> Option<&'a [Word]> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let v = a.value.as_str();
        if v == "--" {
            return Some(&args[i + 1..]);
        }
        if !v.starts_with('-') || v == "-" {
            break;
        }
        if flags.contains(&v) {
            i += 1;
        } else if with_arg.contains(&v) {
            i += 2;
        } else if with_arg.iter().any(|o| {
            v.starts_with(o)
                && (o.starts_with("--") && v[o.len()..].starts_with('=') || !o.starts_with("--"))
        }) || flags.iter().any(|f| {
            !f.starts_with("--")
                && f.len() == 2
                && v.starts_with(f)
                && v.len() > 2
                && matches!(*f, "-i" | "-l" | "-e")
        }) {
            // `-uroot`, `--user=root`, xargs `-i{}` / `-l1`.
            i += 1;
        } else if v.len() > 2
            && !v.starts_with("--")
            && v[1..]
                .chars()
                .all(|c| flags.contains(&format!("-{c}").as_str()))
        {
            // A cluster of flags: `-ks`.
            i += 1;
        } else {
            return None;
        }
    }
    Some(args.get(i..).unwrap_or(&[]))
}

/// Skips `nice`'s options (`-n N`, `-N`, `--adjustment=N`).
pub(super) fn skip_nice(args: &[Word]) -> Option<&[Word]> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let v = a.value.as_str();
        if v == "--" {
            return Some(&args[i + 1..]);
        }
        if v == "-n" || v == "--adjustment" {
            i += 2;
        } else if v.starts_with("--adjustment=")
            || (v.starts_with("-n") && v.len() > 2)
            || (v.len() > 1 && v.starts_with('-') && v[1..].parse::<i64>().is_ok())
        {
            i += 1;
        } else if v.starts_with('-') && v.len() > 1 {
            return None;
        } else {
            break;
        }
    }
    Some(args.get(i..).unwrap_or(&[]))
}
