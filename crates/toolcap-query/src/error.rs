//! What a query can fail at: parsing. Evaluating a parsed query cannot fail.

/// A query that failed to parse; `position` is a char index into the query text, and
/// `message` says what was expected there (the `--filter` caret line prints it alone).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at {}: {message}", .position + 1)]
pub struct QueryError {
    pub position: usize,
    pub message: String,
}

impl QueryError {
    pub(crate) fn new(position: usize, message: impl Into<String>) -> Self {
        QueryError {
            position,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::query::Query;

    #[test]
    fn a_parse_error_counts_its_position_from_one() {
        let error = Query::parse("name:\"open").unwrap_err();
        assert_eq!(error.position, 5);
        assert_eq!(error.to_string(), "at 6: unclosed quote");
    }
}
