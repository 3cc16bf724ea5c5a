//! Where a span was read from, the service that ran it (OTLP's `service.name`) and the format it
//! was read as: the same for every span of one resource in one parse, so one shared block holds
//! them and a span pays one word, rather than a word each for the origin and the service and
//! a byte for the format.

use std::cell::RefCell;
use std::sync::Arc;

use super::{ArcStr, FormatName, Origin, Span};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub origin: Option<Arc<Origin>>,
    pub service: Option<ArcStr>,
    /// Registry name of the format (`otlp-json`, `openai-agents`, …).
    pub format: FormatName,
}

thread_local! {
    /// The block made last on this thread: a parser asks again and again for the same origin
    /// and service (interned, so the same allocation), and gets the same block.
    static LAST_MADE: RefCell<Option<Arc<Provenance>>> = const { RefCell::new(None) };
}

impl Provenance {
    /// The shared block naming `origin`, `service` and `format`; none when all are absent.
    pub fn shared(
        origin: Option<&Arc<Origin>>,
        service: Option<&ArcStr>,
        format: FormatName,
    ) -> Option<Arc<Provenance>> {
        if origin.is_none() && service.is_none() && format == FormatName::default() {
            return None;
        }
        let same = |last: &Provenance| {
            same_allocation(last.origin.as_ref(), origin, Arc::ptr_eq)
                && same_allocation(last.service.as_ref(), service, ArcStr::ptr_eq)
                && last.format == format
        };
        LAST_MADE.with(|last| {
            let mut last = last.borrow_mut();
            if let Some(made) = last.as_ref().filter(|made| same(made)) {
                return Some(made.clone());
            }
            let made = Arc::new(Provenance {
                origin: origin.cloned(),
                service: service.cloned(),
                format,
            });
            *last = Some(made.clone());
            Some(made)
        })
    }
}

/// Both absent, or both the one allocation (the cached block holds its own, so an address is
/// never reused while it is compared).
fn same_allocation<T>(
    held: Option<&T>,
    asked: Option<&T>,
    ptr_eq: impl Fn(&T, &T) -> bool,
) -> bool {
    match (held, asked) {
        (None, None) => true,
        (Some(held), Some(asked)) => ptr_eq(held, asked),
        _ => false,
    }
}

impl Span {
    /// The file or endpoint it was read from.
    pub fn origin(&self) -> Option<&Origin> {
        self.provenance.as_deref()?.origin.as_deref()
    }
    /// The service that ran it.
    pub fn service(&self) -> Option<&ArcStr> {
        self.provenance.as_deref()?.service.as_ref()
    }
    /// The format it was read as (the empty name when none was said).
    pub fn format(&self) -> FormatName {
        self.provenance
            .as_deref()
            .map(|p| p.format)
            .unwrap_or_default()
    }
    /// Names the service, keeping the origin and the format.
    pub fn set_service(&mut self, service: Option<ArcStr>) {
        let origin = self.provenance.as_deref().and_then(|p| p.origin.clone());
        self.provenance = Provenance::shared(origin.as_ref(), service.as_ref(), self.format());
    }
    /// Names the origin, keeping the service and the format.
    pub fn set_origin(&mut self, origin: Option<Arc<Origin>>) {
        let service = self.service().cloned();
        self.provenance = Provenance::shared(origin.as_ref(), service.as_ref(), self.format());
    }
    /// Names the format, keeping the origin and the service.
    pub fn set_format(&mut self, format: FormatName) {
        let origin = self.provenance.as_deref().and_then(|p| p.origin.clone());
        let service = self.service().cloned();
        self.provenance = Provenance::shared(origin.as_ref(), service.as_ref(), format);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_origin_and_service_share_one_block_and_others_get_their_own() {
        let file = Arc::new(Origin::endpoint("otlp://test"));
        let service = ArcStr::from("checkout");
        let first = Provenance::shared(Some(&file), Some(&service), FormatName::default()).unwrap();
        let again = Provenance::shared(Some(&file), Some(&service), FormatName::default()).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other_service = ArcStr::from("payments");
        let other =
            Provenance::shared(Some(&file), Some(&other_service), FormatName::default()).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.service.as_deref(), Some("payments"));
        // An equal text in another allocation is another block, equal in content.
        let copy = ArcStr::from("checkout");
        let equal = Provenance::shared(Some(&file), Some(&copy), FormatName::default()).unwrap();
        assert_eq!(*equal, *first);
        let other_format =
            Provenance::shared(Some(&file), Some(&copy), "otlp-json".into()).unwrap();
        assert_ne!(*other_format, *first);
        assert_eq!(Provenance::shared(None, None, FormatName::default()), None);
    }

    #[test]
    fn a_span_reads_and_changes_its_origin_service_and_format_apart() {
        let mut span = Span::default();
        assert_eq!((span.origin(), span.service()), (None, None));
        assert_eq!(span.format(), FormatName::default());
        span.set_service(Some("checkout".into()));
        let origin = Arc::new(Origin::endpoint("otlp://test"));
        span.set_origin(Some(origin.clone()));
        span.set_format("otlp-json".into());
        assert_eq!(span.origin(), Some(&*origin));
        assert_eq!(span.service().map(|s| s.as_str()), Some("checkout"));
        assert_eq!(span.format(), "otlp-json");
        span.set_service(None);
        assert_eq!(span.origin(), Some(&*origin));
        assert_eq!(span.service(), None);
        assert_eq!(span.format(), "otlp-json");
        span.set_origin(None);
        span.set_format(FormatName::default());
        assert!(span.provenance.is_none(), "nothing named, no block");
    }
}
