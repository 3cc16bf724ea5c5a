//! Memory released off the UI thread, on one background thread: big replaced views are dropped
//! there (letting go of a list of 100,000 runs costs a cache miss per run, which the key that
//! replaced the list should not wait for), and the heap's free pages are handed back there.

use std::sync::OnceLock;
use std::sync::mpsc::{self, Sender, SyncSender};

/// A job for the releasing thread.
enum Release {
    /// Drop this value.
    Drop(Box<dyn Send>),
    /// Hand the heap's free pages back to the system.
    FreePages,
    /// Answered once everything sent before it is dropped.
    Ack(SyncSender<()>),
}

fn releasing_thread() -> Option<&'static Sender<Release>> {
    static RELEASING_THREAD: OnceLock<Option<Sender<Release>>> = OnceLock::new();
    RELEASING_THREAD
        .get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Release>();
            std::thread::Builder::new()
                .name("toolcap-drop".into())
                .spawn(move || {
                    for job in receiver {
                        match job {
                            Release::Drop(value) => drop(value),
                            Release::FreePages => crate::system::release_free_heap_pages(),
                            Release::Ack(done) => {
                                let _ = done.send(());
                            }
                        }
                    }
                })
                .ok()
                .map(|_| sender)
        })
        .as_ref()
}

/// Drops `value` on the releasing thread (here, when that thread could not start).
pub(super) fn drop_in_background<T: Send + 'static>(value: T) {
    if let Some(sender) = releasing_thread() {
        let _ = sender.send(Release::Drop(Box::new(value)));
    }
}

/// After a big load, on the releasing thread: the allocator keeps the pages that parsing
/// and settling freed, and the TUI lives on for hours.
pub(super) fn release_memory_in_background() {
    #[cfg(test)]
    RELEASES_ASKED.with(|asked| asked.set(asked.get() + 1));
    match releasing_thread() {
        Some(sender) => {
            let _ = sender.send(Release::FreePages);
        }
        None => crate::system::release_free_heap_pages(),
    }
}

#[cfg(test)]
thread_local! {
    /// Times this thread asked for memory to be released (tests run on their own threads).
    pub(super) static RELEASES_ASKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Waits until everything handed to [`drop_in_background`] so far is dropped: before the store
/// changes a run in place, no replaced list may still share it (a shared run is copied).
pub(super) fn wait_until_dropped() {
    let Some(sender) = releasing_thread() else {
        return;
    };
    let (done, dropped) = mpsc::sync_channel(1);
    if sender.send(Release::Ack(done)).is_ok() {
        let _ = dropped.recv();
    }
}
