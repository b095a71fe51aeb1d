use std::process::ExitCode;

fn main() -> ExitCode {
    tvir_cli::main()
}
