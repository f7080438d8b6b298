//! Waiting for a BPE vocabulary never holds the waiting task's runtime thread. A file of its
//! own, so its process starts without the vocabulary loaded (a vocabulary loads once per
//! process).

use turnstile_loop::prompt::tokenizer::Encoding;
use turnstile_loop::prompt::tokens::Measure;
use turnstile_providers::{ChatMessage, ChatRequest};

#[tokio::test(flavor = "current_thread")]
async fn a_task_waiting_for_the_vocabulary_lets_the_others_on_its_thread_run() {
    // `cl100k_base`: no other test of this process loads it.
    let encoding = Encoding::Cl100k;
    assert!(
        !encoding.ready(),
        "the vocabulary was loaded before the test"
    );
    let waiter = tokio::spawn(encoding.loaded());
    // One thread: this task runs only when the waiter has let go of it. A synchronous wait
    // would load the whole vocabulary first (about 0.1 s), and this task would find it loaded.
    let seen_while_loading = tokio::spawn(async move { encoding.ready() })
        .await
        .expect("the second task ran");
    assert!(
        !seen_while_loading,
        "the waiting task held the runtime's only thread until the vocabulary was loaded"
    );
    waiter.await.expect("the wait ended");
    assert!(encoding.ready());
}

#[tokio::test(flavor = "current_thread")]
async fn a_measure_that_must_be_exact_awaits_the_vocabulary_and_counts_with_it() {
    let request = ChatRequest {
        model: "gpt-4".into(),
        messages: vec![ChatMessage::user("hello there, how are the tokens today")],
        ..Default::default()
    };
    // A threshold the request can reach: the count decides, so it must be the vocabulary's.
    let measure = Measure::new("gpt-4")
        .unless_loading_awaited(&request, 1)
        .await;
    assert!(measure.is_exact());
    assert!(measure.encoding().ready());
    assert_eq!(
        measure.text("hello there"),
        2,
        "cl100k_base counts `hello there` as two tokens"
    );
}
