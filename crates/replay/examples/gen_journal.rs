//! Writes a synthetic, adversarial session journal (for benchmarks).
use std::io::BufWriter;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb: u64 = args[2].parse().unwrap();
    let out = &args[4];
    let cfg = turnstile_replay::synth::SynthConfig { target_bytes: mb << 20, seed: 42, ..Default::default() };
    let f = std::fs::File::create(out).unwrap();
    let s = turnstile_replay::synth::write_session(&cfg, BufWriter::with_capacity(1<<20, f)).unwrap();
    eprintln!("{s:?}");
}
