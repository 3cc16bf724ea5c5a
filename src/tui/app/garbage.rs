//! Big replaced views dropped off the UI thread: letting go of a list of 100,000 runs costs
//! milliseconds (a cache miss per run), which the key that replaced the list should not wait
//! for.

use std::sync::OnceLock;
use std::sync::mpsc::{self, Sender, SyncSender};

enum Garbage {
    Value(Box<dyn Send>),
    /// Hand the heap's free pages back to the system.
    GiveBack,
    /// Answered once everything sent before it is dropped.
    Ack(SyncSender<()>),
}

fn dropper() -> Option<&'static Sender<Garbage>> {
    static DROPPER: OnceLock<Option<Sender<Garbage>>> = OnceLock::new();
    DROPPER
        .get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Garbage>();
            std::thread::Builder::new()
                .name("toolcap-drop".into())
                .spawn(move || {
                    for garbage in receiver {
                        match garbage {
                            Garbage::Value(value) => drop(value),
                            Garbage::GiveBack => give_back_freed_memory(),
                            Garbage::Ack(done) => {
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

/// Drops `value` on the dropping thread (here, when that thread could not start).
pub(super) fn drop_elsewhere<T: Send + 'static>(value: T) {
    if let Some(sender) = dropper() {
        let _ = sender.send(Garbage::Value(Box::new(value)));
    }
}

/// After a big load, on the dropping thread: the allocator keeps the pages that parsing
/// and settling freed, and the TUI lives on for hours.
pub(super) fn give_back_freed_memory_elsewhere() {
    #[cfg(test)]
    GIVEN_BACK.with(|given| given.set(given.get() + 1));
    match dropper() {
        Some(sender) => {
            let _ = sender.send(Garbage::GiveBack);
        }
        None => give_back_freed_memory(),
    }
}

#[cfg(test)]
thread_local! {
    /// Times this thread asked for memory to be given back (tests run on their own threads).
    pub(super) static GIVEN_BACK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn give_back_freed_memory() {
    crate::system::release_free_heap_pages();
}

/// Waits until everything handed to [`drop_elsewhere`] so far is dropped: before the store
/// changes a run in place, no replaced list may still share it (a shared run is copied).
pub(super) fn wait_until_dropped() {
    let Some(sender) = dropper() else {
        return;
    };
    let (done, dropped) = mpsc::sync_channel(1);
    if sender.send(Garbage::Ack(done)).is_ok() {
        let _ = dropped.recv();
    }
}
