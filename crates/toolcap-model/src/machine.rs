//! What the machine offers the process, asked once, and the one way work is spread over its
//! cores.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError, mpsc};

/// The cores this process may use (at least one). Asked of the system once: each asking reads
/// the process's CPU affinity and its cgroup's quota files, and a load asks for every piece
/// parsed and every settle.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// Maps every item on every core; the results come back in the items' order.
pub fn map_all<I: Send, R: Send>(
    items: impl Iterator<Item = I> + Send,
    map: impl Fn(I) -> R + Sync,
) -> Vec<R> {
    let mut results = Vec::new();
    let sunk = map_in_order(items, usize::MAX, map, |result| {
        results.push(result);
        Ok::<(), std::convert::Infallible>(())
    });
    let Ok(()) = sunk;
    results
}

/// Maps `items` with `map` on one thread per core and hands each result to `sink`, on the
/// calling thread, in the items' order. At most `ahead` items are taken and not yet sunk, which
/// bounds what is in memory when results are big or `sink` is slow (a pipe whose reader lags).
/// The threads advance `items` in turn, so an iterator that reads a file reads while the other
/// threads map. An error from `sink` stops the work (no further item is taken) and is
/// returned; a panic in `items` or `map` stops it too and resumes on the calling thread.
pub fn map_in_order<I: Send, R: Send, E>(
    items: impl Iterator<Item = I> + Send,
    ahead: usize,
    map: impl Fn(I) -> R + Sync,
    mut sink: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let threads = cores();
    if threads < 2 {
        return items.map(map).try_for_each(sink);
    }
    let ahead = ahead.max(1);
    let taking = Mutex::new(Taking {
        items,
        taken: 0,
        sunk: 0,
        stopped: false,
    });
    let room = Condvar::new();
    let stop = || {
        lock(&taking).stopped = true;
        room.notify_all();
    };
    let (done_sender, done) = mpsc::channel::<(usize, std::thread::Result<R>)>();
    let mut outcome = Ok(());
    let mut panic = None;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_sender = done_sender.clone();
            let (taking, room, map) = (&taking, &room, &map);
            scope.spawn(move || {
                while let Some((k, item)) = take(taking, room, ahead) {
                    let result = item.and_then(|item| catch_unwind(AssertUnwindSafe(|| map(item))));
                    if done_sender.send((k, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_sender);
        // Ends when every thread has stopped: after the last item, or soon after `stop`.
        let mut waiting = BTreeMap::new();
        let mut wanted = 0;
        for (k, result) in &done {
            if outcome.is_err() || panic.is_some() {
                continue;
            }
            waiting.insert(k, result);
            while let Some(result) = waiting.remove(&wanted) {
                wanted += 1;
                match result.map(&mut sink) {
                    Ok(Ok(())) => {
                        lock(&taking).sunk += 1;
                        room.notify_one();
                    }
                    Ok(Err(e)) => {
                        outcome = Err(e);
                        stop();
                        break;
                    }
                    Err(payload) => {
                        panic = Some(payload);
                        stop();
                        break;
                    }
                }
            }
        }
    });
    if let Some(payload) = panic {
        resume_unwind(payload);
    }
    outcome
}

/// The items of [`map_in_order`] and how far its threads and its sink have come.
struct Taking<T> {
    items: T,
    taken: usize,
    sunk: usize,
    /// No item is to be taken any more: the items ran out, or the sink stopped the work.
    stopped: bool,
}

fn lock<T>(taking: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    taking.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until fewer than `ahead` items are taken and not sunk, then takes the next item with
/// its place in the order; `None` once no item is to be taken. A panic in the iterator is
/// taken as the item, to be resumed in its place.
fn take<I: Iterator>(
    taking: &Mutex<Taking<I>>,
    room: &Condvar,
    ahead: usize,
) -> Option<(usize, std::thread::Result<I::Item>)> {
    let mut state = lock(taking);
    while !state.stopped && state.taken - state.sunk >= ahead {
        state = room.wait(state).unwrap_or_else(PoisonError::into_inner);
    }
    if state.stopped {
        return None;
    }
    let next = catch_unwind(AssertUnwindSafe(|| state.items.next()));
    let item = match next {
        Ok(Some(item)) => Ok(item),
        Ok(None) => {
            state.stopped = true;
            room.notify_all();
            return None;
        }
        Err(payload) => {
            state.stopped = true;
            room.notify_all();
            Err(payload)
        }
    };
    state.taken += 1;
    Some((state.taken - 1, item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order() {
        let squares = map_all(0..1000u64, |n| n * n);
        assert_eq!(squares, (0..1000u64).map(|n| n * n).collect::<Vec<_>>());
    }

    #[test]
    fn no_more_than_ahead_items_are_taken_and_not_sunk() {
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let items = (0..200).inspect(|_| {
            taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let mut sunk = 0;
        let result = map_in_order(
            items,
            3,
            |n| n,
            |n| {
                assert_eq!(n, sunk);
                sunk += 1;
                let taken = taken.load(std::sync::atomic::Ordering::SeqCst);
                assert!(taken <= sunk + 3, "{taken} taken, {sunk} sunk");
                Ok::<(), ()>(())
            },
        );
        assert_eq!(result, Ok(()));
        assert_eq!(sunk, 200);
    }

    #[test]
    fn a_sink_error_stops_the_work() {
        let taken = std::sync::atomic::AtomicUsize::new(0);
        let items = (0..100_000).inspect(|_| {
            taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        let result = map_in_order(items, 4, |n| n, |n| if n == 10 { Err(n) } else { Ok(()) });
        assert_eq!(result, Err(10));
        assert!(taken.load(std::sync::atomic::Ordering::SeqCst) < 100);
    }

    #[test]
    fn a_panic_while_mapping_reaches_the_caller() {
        let caught = catch_unwind(|| map_all(0..100, |n| assert_ne!(n, 42, "the planted panic")));
        assert!(caught.is_err());
    }
}
