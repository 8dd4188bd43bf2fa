//! The `dynrec` command.

mod cli;

/// mimalloc: a reconcile allocates many small maps and strings, which it serves faster
/// than the system allocator (see benches/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
