use std::process::ExitCode;

// The wheels carry a static musl binary (scripts/build_release.sh), and musl's own
// allocator is slow: with it that binary parsed and evaluated 1.5x slower than the
// glibc build (scripts/compare_builds.sh). The glibc build keeps glibc's allocator.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// glibc's allocator gives each thread that allocates concurrently an arena of its own,
// up to 8 per core; with the judge pool's tasks, the blocking pool and rayon, freed
// memory stays spread over many half-used arenas. Two arenas: peak RSS of `tvir eval`
// on 100 corpus reports 534-691 MiB -> 373 MiB at the same wall time (heaptrack: 317
// MiB peak heap; benches/scale.rs, issue 35). Declared here rather than through a
// crate: one glibc call, made before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_malloc_arenas() {
    const M_ARENA_MAX: i32 = -8;
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    // An explicit MALLOC_ARENA_MAX in the environment wins.
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a tunable of glibc's allocator; no thread has
        // started yet, and a refused value leaves the default.
        unsafe {
            mallopt(M_ARENA_MAX, 2);
        }
    }
}

fn main() -> ExitCode {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    limit_malloc_arenas();
    tvir_cli::main()
}
