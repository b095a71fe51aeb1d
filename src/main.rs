use std::process::ExitCode;

// The wheels carry a static musl binary (scripts/build_release.sh), and musl's own
// allocator is slow: with it that binary parsed and evaluated 1.5x slower than the
// glibc build (scripts/compare_builds.sh). The glibc build keeps glibc's allocator.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tvir_cli::main()
}
