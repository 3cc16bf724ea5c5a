use clap::Parser;

fn main() {
    let cli = toolcap::cli::Cli::parse();
    std::process::exit(toolcap::cli::run(cli));
}
