use std::process::ExitCode;

fn main() -> ExitCode {
    tvir_eval::cli::main()
}
