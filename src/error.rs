//! What the commands' arguments and the TUI's configuration can fail at. Errors of the layers
//! below pass through unchanged; each message is the one printed or shown as a warning.

use crate::commands::TOKEN_ENV;

/// An error of the commands and the TUI.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Command-line arguments and the environment.
    #[error("{text:?}: expected a number of seconds above 0")]
    NotSeconds { text: String },
    #[error("a token cannot be empty or blank")]
    BlankToken,
    #[error("--token-file: {0}")]
    TokenFile(std::io::Error),
    #[error("{TOKEN_ENV} is set but empty or blank: give it a token, or unset it")]
    BlankTokenEnv,
    #[error("{TOKEN_ENV} is not UTF-8")]
    TokenEnvNotUtf8,
    #[error("--align {given:?}: expected edit, position or name")]
    UnknownAlignment { given: String },
    #[error(transparent)]
    Sources(#[from] toolcap_sources::Error),
    #[error(transparent)]
    Gold(#[from] toolcap_gold::Error),

    // The TUI's terminal and configuration.
    /// `missing` says which of stdin and stdout is not a terminal.
    #[error(
        "toolcap-tui: the TUI needs a terminal ({missing}); for text or JSON use `toolcap-tui dump SOURCE...`"
    )]
    NoTerminal { missing: &'static str },
    #[error("unknown key {text:?}")]
    UnknownKey { text: String },
    #[error("unknown colour {word:?}")]
    UnknownColour { word: String },
    #[error("unknown action {name:?}")]
    UnknownAction { name: String },
}

#[cfg(test)]
mod tests {
    use crate::tui::keymap::KeySpec;
    use crate::tui::theme::parse_style;

    #[test]
    fn an_unknown_key_or_colour_is_quoted_back() {
        assert_eq!(
            KeySpec::parse("<hyper-x>").unwrap_err().to_string(),
            "unknown key \"<hyper-x>\""
        );
        assert_eq!(
            parse_style("bold mauve-ish").unwrap_err().to_string(),
            "unknown colour \"mauve-ish\""
        );
    }
}
