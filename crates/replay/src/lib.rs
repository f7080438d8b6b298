//! Folds journals back into session state.
pub mod synth;
