use clap::Parser;

fn main() {
    let cli = toolcap::commands::Cli::parse();
    std::process::exit(toolcap::commands::run(cli));
}
