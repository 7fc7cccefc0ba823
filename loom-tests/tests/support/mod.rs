//! How the models run: loom's bounds for each shape.

/// Preemptions per execution for models of three threads. Their state space grows about
/// tenfold with each further preemption (the two-reader models took minutes each at 2); one
/// preemption still finds every broken ordering the models were shown to catch
/// (`docs/architecture.md`, "Loom models"). `SHMCAST_LOOM_DEEP=1` runs them at loom's own bound
/// (`LOOM_MAX_PREEMPTIONS`) instead.
const THREE_THREAD_PREEMPTIONS: usize = 1;

/// Runs `f` as a loom model of three threads.
pub fn three_threads(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("SHMCAST_LOOM_DEEP").is_none() {
        builder.preemption_bound = Some(
            builder
                .preemption_bound
                .map_or(THREE_THREAD_PREEMPTIONS, |b| {
                    b.min(THREE_THREAD_PREEMPTIONS)
                }),
        );
    }
    builder.check(f);
}
