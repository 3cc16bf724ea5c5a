//! Every connection the receiver holds, and the limits that keep slow or idle clients from
//! starving the others: a cap on connections with fair admission (when the cap is reached, the
//! connection idle the longest makes room; one that is mid-request never does), a deadline for
//! request headers, an idle keep-alive timeout, and a way for a handler to drop its own
//! connection (the feed does this to a reader that stopped reading).
//!
//! Deadlines are enforced by one reaper task per listener that looks at every connection once
//! a second, rather than a timer per connection; the IO wrapper notices the verdict on its
//! next poll (it holds the wakers, so a connection parked on a read or write is woken).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::Limits;

/// How often deadlines are checked; a deadline is therefore enforced within this much.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// Which protocol a listener speaks decides what "idle" means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// HTTP/1.1: idle between requests, reading headers, or busy with a request.
    Http1,
    /// HTTP/2 (gRPC): idle when no byte has arrived for a while.
    Http2,
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for the first byte of a request (a new connection or a kept-alive one).
    Idle { since: Instant },
    /// Some bytes of a request head have arrived, not yet all of it.
    Head { since: Instant },
    /// A request is being handled or its response is being sent.
    Busy,
}

/// One accepted connection, shared by its IO wrapper, the registry and request handlers.
pub(crate) struct Connection {
    id: u64,
    pub peer: SocketAddr,
    protocol: Protocol,
    phase: Mutex<Phase>,
    killed: AtomicBool,
    reason: Mutex<String>,
    read_waker: AtomicWaker,
    write_waker: AtomicWaker,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Connection {
    /// Closes the connection at its next read or write (waking it if it is parked).
    pub fn kill(&self, reason: String) {
        *lock(&self.reason) = reason;
        self.killed.store(true, Ordering::Release);
        self.read_waker.wake();
        self.write_waker.wake();
    }

    fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    fn on_bytes_read(&self) {
        let mut phase = lock(&self.phase);
        match (self.protocol, *phase) {
            (Protocol::Http1, Phase::Idle { .. }) => {
                *phase = Phase::Head {
                    since: Instant::now(),
                }
            }
            (Protocol::Http2, _) => {
                *phase = Phase::Idle {
                    since: Instant::now(),
                }
            }
            _ => {}
        }
    }

    /// Marks the connection busy until the returned guard is dropped (with the response).
    pub fn begin_request(self: &Arc<Self>) -> BusyGuard {
        *lock(&self.phase) = Phase::Busy;
        BusyGuard(self.clone())
    }

    /// Why the connection should be closed now, if it should.
    fn overdue(&self, now: Instant, limits: &Limits) -> Option<String> {
        match *lock(&self.phase) {
            Phase::Idle { since } if now.duration_since(since) >= limits.idle_timeout => {
                Some(format!(
                    "idle for {} s (--idle-timeout)",
                    limits.idle_timeout.as_secs()
                ))
            }
            Phase::Head { since } if now.duration_since(since) >= limits.header_timeout => {
                Some(format!(
                    "request headers not complete after {} s (--header-timeout)",
                    limits.header_timeout.as_secs()
                ))
            }
            _ => None,
        }
    }

    /// When the connection became evictable, or `None` while it is busy with a request.
    fn evictable_since(&self) -> Option<Instant> {
        match *lock(&self.phase) {
            Phase::Idle { since } | Phase::Head { since } => Some(since),
            Phase::Busy => None,
        }
    }
}

/// Returns the connection to idle when the request (and its response body) is done.
pub(crate) struct BusyGuard(Arc<Connection>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        *lock(&self.0.phase) = Phase::Idle {
            since: Instant::now(),
        };
    }
}

/// What a request handler can do with its own connection.
#[derive(Clone)]
pub(crate) struct ConnectionHandle(pub Arc<Connection>);

/// Counters a test or the health endpoint can read.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    pub evicted: AtomicU64,
    pub timed_out: AtomicU64,
    pub refused: AtomicU64,
}

/// All open connections of one listener.
pub(crate) struct Registry {
    protocol: Protocol,
    limits: Limits,
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next_id: AtomicU64,
    pub stats: Arc<ConnectionStats>,
}

impl Registry {
    pub fn new(protocol: Protocol, limits: Limits, stats: Arc<ConnectionStats>) -> Arc<Self> {
        Arc::new(Self {
            protocol,
            limits,
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            stats,
        })
    }

    /// Takes a newly accepted stream in, making room by closing the connection idle the longest
    /// when the cap is reached. `None` when every connection is busy with a request: the caller
    /// refuses the new one (a retryable answer), nobody mid-request is cut off.
    pub fn admit(
        self: &Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<TrackedIo, TcpStream> {
        let mut open = lock(&self.open);
        if open.len() >= self.limits.max_connections {
            let oldest = open
                .values()
                .filter_map(|conn| conn.evictable_since().map(|since| (since, conn.id)))
                .min();
            let Some((_, id)) = oldest else {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                return Err(stream);
            };
            if let Some(conn) = open.remove(&id) {
                self.stats.evicted.fetch_add(1, Ordering::Relaxed);
                conn.kill("closed to make room: connection limit reached".into());
            }
        }
        let conn = Arc::new(Connection {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            peer,
            protocol: self.protocol,
            phase: Mutex::new(Phase::Idle {
                since: Instant::now(),
            }),
            killed: AtomicBool::new(false),
            reason: Mutex::new(String::new()),
            read_waker: AtomicWaker::new(),
            write_waker: AtomicWaker::new(),
        });
        open.insert(conn.id, conn.clone());
        Ok(TrackedIo {
            inner: stream,
            conn,
            registry: self.clone(),
        })
    }

    /// Closes every connection past its header or idle deadline.
    pub fn reap(&self) {
        let now = Instant::now();
        let mut open = lock(&self.open);
        open.retain(|_, conn| match conn.overdue(now, &self.limits) {
            Some(reason) => {
                self.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                conn.kill(reason);
                false
            }
            None => true,
        });
    }

    /// Runs [`Registry::reap`] every second until `stopped`.
    pub async fn reap_until(self: Arc<Self>, stopped: tokio::sync::watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(REAP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let stop = super::wait_for_stop(stopped);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = tick.tick() => self.reap(),
                () = &mut stop => return,
            }
        }
    }

    /// Closes every connection still open (the end of a graceful shutdown's grace).
    pub fn kill_all(&self, reason: &str) {
        for (_, conn) in lock(&self.open).drain() {
            conn.kill(reason.to_string());
        }
    }

    fn forget(&self, id: u64) {
        lock(&self.open).remove(&id);
    }
}

/// A TCP stream that reports reads to its [`Connection`] and fails every read and write once the
/// connection is killed, which makes hyper drop it.
pub(crate) struct TrackedIo {
    inner: TcpStream,
    pub conn: Arc<Connection>,
    registry: Arc<Registry>,
}

impl Drop for TrackedIo {
    fn drop(&mut self) {
        self.registry.forget(self.conn.id);
    }
}

impl TrackedIo {
    fn killed_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            lock(&self.conn.reason).clone(),
        )
    }
}

impl AsyncRead for TrackedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.conn.read_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.on_bytes_read();
        }
        polled
    }
}

impl AsyncWrite for TrackedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.conn.write_waker.register(cx.waker());
        if self.conn.is_killed() {
            return Poll::Ready(Err(self.killed_error()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for TrackedIo {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// Raises this process's open-file limit to its hard limit, so the connection cap, not the
/// fd limit, decides when clients are turned away. Returns the soft limit now in force.
pub(crate) fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
                return None;
            }
            if limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: limit.rlim_max,
                    rlim_max: limit.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    limit = raised;
                }
            }
        }
        #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
        Some(limit.rlim_cur as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connected_pair(listener: &tokio::net::TcpListener) -> (TcpStream, SocketAddr) {
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, peer) = listener.accept().await.unwrap();
        std::mem::forget(client); // keep the client end open for the test's life
        (server, peer)
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_connection_makes_room_and_busy_ones_never_do() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            max_connections: 2,
            ..Limits::default()
        };
        let stats = Arc::new(ConnectionStats::default());
        let registry = Registry::new(Protocol::Http1, limits, stats.clone());
        let (stream, peer) = connected_pair(&listener).await;
        let oldest = registry.admit(stream, peer).ok().unwrap();
        let (stream, peer) = connected_pair(&listener).await;
        let busy = registry.admit(stream, peer).ok().unwrap();
        let _request = busy.conn.begin_request();

        let (stream, peer) = connected_pair(&listener).await;
        let newest = registry.admit(stream, peer).ok().unwrap();
        assert!(oldest.conn.is_killed(), "the idle one made room");
        assert!(!busy.conn.is_killed() && !newest.conn.is_killed());
        assert_eq!(stats.evicted.load(Ordering::Relaxed), 1);

        let _second_request = newest.conn.begin_request();
        let (stream, peer) = connected_pair(&listener).await;
        assert!(
            registry.admit(stream, peer).is_err(),
            "everyone is mid-request: the newcomer is refused"
        );
        assert_eq!(stats.refused.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn the_reaper_closes_idle_and_half_sent_connections_only() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let limits = Limits {
            idle_timeout: Duration::ZERO,
            header_timeout: Duration::ZERO,
            ..Limits::default()
        };
        let registry = Registry::new(Protocol::Http1, limits, Arc::default());
        let (stream, peer) = connected_pair(&listener).await;
        let idle = registry.admit(stream, peer).ok().unwrap();
        let (stream, peer) = connected_pair(&listener).await;
        let half_sent = registry.admit(stream, peer).ok().unwrap();
        half_sent.conn.on_bytes_read();
        let (stream, peer) = connected_pair(&listener).await;
        let busy = registry.admit(stream, peer).ok().unwrap();
        let _request = busy.conn.begin_request();
        registry.reap();
        assert!(idle.conn.is_killed());
        assert!(half_sent.conn.is_killed());
        assert!(lock(&half_sent.conn.reason).contains("--header-timeout"));
        assert!(!busy.conn.is_killed(), "a request in progress is not idle");
    }
}
