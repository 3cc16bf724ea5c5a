//! Calls into the operating system and the C allocator, each behind a safe function. The rest
//! of the program asks this module instead of calling `libc` itself, so every `unsafe` block
//! that reaches the system sits here, with the reason it is sound beside it.
//!
//! glibc's allocator calls exist only under one `cfg`; elsewhere their functions do nothing
//! and say so in their return values. [`CountingAllocator`], a global allocator that counts
//! blocks, is here too: implementing `GlobalAlloc` is `unsafe`.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
#[cfg(any(target_os = "linux", test))]
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// Options for a file the product writes (reports, exports, spool, token, lock, log): created
/// readable by its owner only, and never opened through a symbolic link, so a link planted at
/// the name cannot redirect the write onto another file. The caller adds how it opens
/// (`create_new`, `append`, …).
pub fn owner_only_file() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// Options to read a file a program left (a token it kept) with the care of
/// [`owner_only_file`]: never through a symbolic link (the open fails, see
/// [`is_refused_link`]), and without waiting when the name is a FIFO.
pub fn read_without_following() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options
}

/// Whether an open with [`owner_only_file`] or [`read_without_following`] failed because the
/// name is a symbolic link.
pub fn is_refused_link(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        err.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// Bytes of the heap in use, and held from the system, as glibc's allocator counts them;
/// `None` where the allocator is not glibc's.
pub fn allocator_bytes() -> Option<(u64, u64)> {
    allocator::bytes()
}

/// Hands the heap's free pages back to the system: the allocator otherwise keeps what a
/// program freed for its next allocations. Does nothing where the allocator is not glibc's.
pub fn release_free_heap_pages() {
    allocator::release_free_pages();
}

/// Makes every allocation of `bytes` or more a mapping of its own, returned to the system when
/// freed, instead of letting glibc raise that threshold to the largest block freed so far.
/// Returns whether the allocator took the setting (never where it is not glibc's).
pub fn fix_mmap_threshold(bytes: usize) -> bool {
    allocator::fix_mmap_threshold(bytes)
}

/// The system allocator, counting the blocks alive and their bytes by size: a program that
/// wants to see how many blocks its data takes (the allocator's own words are paid per block)
/// installs it as its `#[global_allocator]`. Sizes up to [`CountingAllocator::SIZES`] are
/// counted one by one; bigger blocks share the last count.
pub struct CountingAllocator {
    alive: [AtomicI64; CountingAllocator::SIZES + 1],
    bytes: [AtomicI64; CountingAllocator::SIZES + 1],
}

impl CountingAllocator {
    pub const SIZES: usize = 1024;

    pub const fn new() -> CountingAllocator {
        CountingAllocator {
            alive: [const { AtomicI64::new(0) }; CountingAllocator::SIZES + 1],
            bytes: [const { AtomicI64::new(0) }; CountingAllocator::SIZES + 1],
        }
    }

    fn count(&self, size: usize, by: i64) {
        let slot = size.min(CountingAllocator::SIZES);
        self.alive[slot].fetch_add(by, Relaxed);
        self.bytes[slot].fetch_add(by * size as i64, Relaxed);
    }

    /// For each size with blocks alive: the size (`SIZES` for every bigger one), how many
    /// blocks, and their bytes as asked.
    pub fn blocks_alive(&self) -> Vec<(usize, i64, i64)> {
        (0..=CountingAllocator::SIZES)
            .map(|size| {
                let alive = self.alive[size].load(Relaxed);
                (size, alive, self.bytes[size].load(Relaxed))
            })
            .filter(|&(_, alive, _)| alive > 0)
            .collect()
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        CountingAllocator::new()
    }
}

// SAFETY: every call is passed on to the system allocator unchanged, with the caller's own
// guarantees, and its answer returned unchanged; only the counters move, and they allocate
// nothing.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count(layout.size(), 1);
        // SAFETY: the caller's (a layout of non-zero size).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.count(layout.size(), 1);
        // SAFETY: the caller's (a layout of non-zero size).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        self.count(layout.size(), -1);
        // SAFETY: the caller's: `block` came from this allocator, so from `System`, with
        // `layout`.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        self.count(layout.size(), -1);
        self.count(size, 1);
        // SAFETY: the caller's: `block` came from this allocator, so from `System`, with
        // `layout`, and `size` is a valid size for it.
        unsafe { System.realloc(block, layout, size) }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod allocator {
    pub(super) fn bytes() -> Option<(u64, u64)> {
        // SAFETY: mallinfo2 takes no arguments and returns a struct by value; it only reads
        // the allocator's own counters, under the allocator's own locks.
        let info = unsafe { libc::mallinfo2() };
        let in_use = info.uordblks as u64 + info.hblkhd as u64;
        let held = info.arena as u64 + info.hblkhd as u64;
        Some((in_use, held))
    }

    pub(super) fn release_free_pages() {
        // SAFETY: malloc_trim takes a plain integer (how much free space to keep at the top of
        // the heap) and only walks glibc's own free lists under its locks; no memory the
        // program holds is touched.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    pub(super) fn fix_mmap_threshold(bytes: usize) -> bool {
        let Ok(bytes) = libc::c_int::try_from(bytes) else {
            return false;
        };
        // SAFETY: mallopt takes two integers and sets one of glibc's tunables; a value it does
        // not accept is refused (return 0), not used.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod allocator {
    pub(super) fn bytes() -> Option<(u64, u64)> {
        None
    }

    pub(super) fn release_free_pages() {}

    pub(super) fn fix_mmap_threshold(_bytes: usize) -> bool {
        false
    }
}

/// Whether this process runs as root (permissions then do not stop it reading a file).
#[cfg(unix)]
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The buffer size of the pipe `fd` belongs to; `None` when `fd` is no pipe.
#[cfg(target_os = "linux")]
pub fn pipe_size(fd: std::os::fd::BorrowedFd<'_>) -> Option<usize> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: F_GETPIPE_SZ takes no argument and only reads the state of the descriptor, which
    // the borrow keeps open for the call; a descriptor that is no pipe makes it return -1.
    let size = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPIPE_SZ) };
    usize::try_from(size).ok()
}

/// Raises this process's open-file limit to its hard limit. Returns the soft limit now in
/// force; `None` where the limit cannot be read.
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one `rlimit` through the pointer, which points at a live,
        // writable `rlimit` owned by this frame.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: setrlimit only reads one `rlimit` through the pointer, which points at a
            // live `rlimit` owned by this frame.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit = raised;
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

/// Whether a process with id `pid` exists (also when it is someone else's); `None` when that
/// cannot be asked here.
pub fn process_exists(pid: u32) -> Option<bool> {
    #[cfg(unix)]
    {
        let pid = libc::pid_t::try_from(pid).ok()?;
        // Signal 0 only asks whether the process exists; EPERM means it does, as someone
        // else's.
        // SAFETY: kill takes two integers; with signal 0 it delivers nothing and touches no
        // memory of this process.
        let answer = unsafe { libc::kill(pid, 0) };
        Some(answer == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        None
    }
}

/// The magic number (`f_type`) of the file system `path` lies on; `None` where the call fails
/// or, off Linux, does not exist.
#[cfg(target_os = "linux")]
pub fn file_system_magic(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `name` is a NUL-terminated string that outlives the call, and `stat` points at
    // writable room for one `statfs`, which the call fills when it returns 0.
    if unsafe { libc::statfs(name.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statfs returned 0, so it filled `stat`.
    let stat = unsafe { stat.assume_init() };
    #[allow(clippy::unnecessary_cast)] // f_type's integer type differs between targets
    Some(stat.f_type as u64)
}

#[cfg(not(target_os = "linux"))]
pub fn file_system_magic(_path: &std::path::Path) -> Option<u64> {
    None
}

/// Asks for the buffer of the pipe `fd` to hold `bytes`. Returns the size the pipe now has;
/// `None` when `fd` is not a pipe, the size is refused (over the system's ceiling for a
/// process without privileges), or, off Linux, always.
#[cfg(target_os = "linux")]
pub fn widen_pipe(fd: std::os::fd::BorrowedFd<'_>, bytes: usize) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let bytes = libc::c_int::try_from(bytes).ok()?;
    // SAFETY: `fd` is borrowed, so it stays open for the call; F_SETPIPE_SZ takes an integer
    // and only resizes a pipe's kernel buffer. On anything else it fails and changes nothing.
    let answer = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) };
    usize::try_from(answer).ok()
}

#[cfg(all(unix, not(target_os = "linux")))]
pub fn widen_pipe(_fd: std::os::fd::BorrowedFd<'_>, _bytes: usize) -> Option<usize> {
    None
}

/// Makes the process `command` starts unable to grow a file past `bytes`, as on a full disk:
/// a write past it fails (`EFBIG`) instead of the signal that would kill the process. Tests
/// use it to see how a program bears failing writes.
#[cfg(target_os = "linux")]
pub fn limit_file_size(command: &mut std::process::Command, bytes: u64) {
    use std::os::unix::process::CommandExt as _;
    let limit = libc::rlimit {
        rlim_cur: bytes,
        rlim_max: libc::RLIM_INFINITY,
    };
    let child_setup = move || {
        // SAFETY: runs in the child between fork and exec, where only async-signal-safe calls
        // are sound: setrlimit and signal are, and the closure allocates nothing. setrlimit
        // only reads the `rlimit` the closure owns.
        if unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above; ignoring SIGXFSZ installs no handler of this program.
        if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the closure keeps to async-signal-safe calls, as said in it.
    unsafe {
        command.pre_exec(child_setup);
    }
}

/// Lifts the file size limit of process `pid` (one of this user's, such as a child
/// [`limit_file_size`] limited), as when a full disk recovers.
#[cfg(target_os = "linux")]
pub fn lift_file_size_limit(pid: u32) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: prlimit only reads the `rlimit` this frame owns, and is given no old limit to
    // write (a null pointer, which it accepts).
    let answer =
        unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &unlimited, std::ptr::null_mut()) };
    if answer == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Creates a FIFO at `path`, readable and writable by its owner only: tests plant one where a
/// regular file is expected.
#[cfg(unix)]
pub fn make_fifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `name` is a NUL-terminated string that outlives the call; mkfifo only reads it.
    if unsafe { libc::mkfifo(name.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLIBC: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

    #[cfg(target_os = "linux")]
    #[test]
    fn is_root_agrees_with_the_owner_of_this_process() {
        use std::os::unix::fs::MetadataExt as _;
        let owner = std::fs::metadata("/proc/self").unwrap().uid();
        assert_eq!(is_root(), owner == 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_pipe_has_a_size_and_a_file_has_none() {
        use std::os::fd::AsFd as _;
        let (reader, _writer) = std::io::pipe().unwrap();
        assert!(pipe_size(reader.as_fd()).is_some_and(|size| size >= 4096));
        let file = tempfile::tempfile().unwrap();
        assert_eq!(pipe_size(file.as_fd()), None);
    }

    #[cfg(unix)]
    #[test]
    fn an_owner_only_file_is_0600_and_never_opened_through_a_link() {
        use std::io::Write as _;
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("written");
        owner_only_file()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A link planted at the name: opening it fails and its target is untouched, whether
        // the caller appends (log, spool) or creates (export, token).
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.path().join("planted");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(
            owner_only_file()
                .create(true)
                .append(true)
                .open(&link)
                .is_err()
        );
        assert!(
            owner_only_file()
                .write(true)
                .create_new(true)
                .open(&link)
                .is_err()
        );
        assert!(
            owner_only_file()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&link)
                .is_err()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    }

    #[test]
    fn allocator_bytes_count_a_live_allocation() {
        let block = vec![1u8; 8 << 20];
        let bytes = allocator_bytes();
        assert_eq!(bytes.is_some(), GLIBC);
        if let Some((in_use, held)) = bytes {
            assert!(in_use >= block.len() as u64, "{in_use} in use");
            assert!(held >= in_use, "{held} held, {in_use} in use");
        }
        drop(block);
    }

    #[test]
    fn releasing_free_pages_leaves_the_heap_usable() {
        let freed: Vec<Box<[u8; 256]>> = (0..4096).map(|_| Box::new([7u8; 256])).collect();
        drop(freed);
        release_free_heap_pages();
        let again = vec![3u8; 1 << 20];
        assert!(again.iter().all(|&b| b == 3));
        if let Some((in_use, held)) = allocator_bytes() {
            assert!(held >= in_use, "{held} held, {in_use} in use");
        }
    }

    #[test]
    fn the_mmap_threshold_is_taken_where_the_allocator_is_glibc() {
        assert_eq!(fix_mmap_threshold(1 << 20), GLIBC);
        assert!(
            !fix_mmap_threshold(usize::MAX),
            "too big for the allocator's integer"
        );
    }

    #[test]
    fn the_open_file_limit_is_raised_to_a_stable_value() {
        if cfg!(unix) {
            let soft = raise_open_file_limit().expect("the limit is readable");
            assert!(soft >= 1);
            assert_eq!(
                raise_open_file_limit(),
                Some(soft),
                "already at the hard limit"
            );
        } else {
            assert_eq!(raise_open_file_limit(), None);
        }
    }

    #[test]
    fn this_process_exists_and_an_impossible_one_does_not() {
        if cfg!(unix) {
            assert_eq!(process_exists(std::process::id()), Some(true));
            // Above every pid_max Linux allows (2^22).
            assert_eq!(process_exists(i32::MAX as u32), Some(false));
            assert_eq!(process_exists(u32::MAX), None, "not a pid_t");
        } else {
            assert_eq!(process_exists(std::process::id()), None);
        }
    }

    #[test]
    fn the_file_system_of_proc_is_procfs() {
        if cfg!(target_os = "linux") {
            assert_eq!(file_system_magic(Path::new("/proc")), Some(0x9fa0));
            assert_eq!(file_system_magic(Path::new("/no/such/path")), None);
            assert_eq!(file_system_magic(Path::new("nul\0inside")), None);
        } else {
            assert_eq!(file_system_magic(Path::new("/")), None);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_pipe_widens_and_a_file_does_not() {
        use std::os::fd::AsFd;
        let (_reader, writer) = std::io::pipe().expect("a pipe");
        let widened = widen_pipe(writer.as_fd(), 128 << 10);
        if cfg!(target_os = "linux") {
            assert!(widened.is_some_and(|size| size >= 128 << 10), "{widened:?}");
        } else {
            assert_eq!(widened, None);
        }
        let file = tempfile::tempfile().expect("a temporary file");
        assert_eq!(widen_pipe(file.as_fd(), 128 << 10), None);
    }

    #[test]
    fn the_counting_allocator_counts_blocks_alive_by_size() {
        let counting = CountingAllocator::new();
        let small = Layout::from_size_align(24, 8).unwrap();
        let big = Layout::from_size_align(4096, 16).unwrap();
        // SAFETY: both layouts have a non-zero size; each block is given back below with the
        // layout it was made with (the grown one with its new size).
        unsafe {
            let a = counting.alloc(small);
            let b = counting.alloc_zeroed(small);
            assert!(!a.is_null() && !b.is_null());
            assert!(
                std::slice::from_raw_parts(b, 24)
                    .iter()
                    .all(|&byte| byte == 0)
            );
            let c = counting.alloc(big);
            assert_eq!(
                counting.blocks_alive(),
                vec![(24, 2, 48), (CountingAllocator::SIZES, 1, 4096)]
            );
            a.write(7);
            let a = counting.realloc(a, small, 100);
            assert_eq!(a.read(), 7, "what a block held moves with it");
            assert_eq!(
                counting.blocks_alive(),
                vec![
                    (24, 1, 24),
                    (100, 1, 100),
                    (CountingAllocator::SIZES, 1, 4096)
                ]
            );
            counting.dealloc(a, Layout::from_size_align(100, 8).unwrap());
            counting.dealloc(b, small);
            counting.dealloc(c, big);
        }
        assert_eq!(counting.blocks_alive(), vec![]);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_is_read_without_following_a_link() {
        use std::io::Read as _;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let mut text = String::new();
        read_without_following()
            .open(&target)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "kept");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let refused = read_without_following().open(&link).unwrap_err();
        assert!(is_refused_link(&refused), "{refused}");
        let missing = read_without_following()
            .open(dir.path().join("none"))
            .unwrap_err();
        assert!(!is_refused_link(&missing));
        // A FIFO with no writer opens at once instead of waiting for one.
        let fifo = dir.path().join("fifo");
        make_fifo(&fifo).unwrap();
        assert!(read_without_following().open(&fifo).is_ok());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_limited_in_file_size_fails_its_writes_until_lifted() {
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("written");
        let mut writer = Command::new("sh");
        writer
            .arg("-c")
            .arg("head -c 1000 /dev/zero > \"$0\"")
            .arg(&file);
        limit_file_size(&mut writer, 200);
        let status = writer.status().unwrap();
        assert!(!status.success(), "the write past the limit fails");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 200);

        let mut waiting = Command::new("cat");
        waiting.stdin(Stdio::piped()).stdout(Stdio::null());
        limit_file_size(&mut waiting, 200);
        let mut child = waiting.spawn().unwrap();
        let limits = |pid: u32| {
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
            let line = limits
                .lines()
                .find(|line| line.starts_with("Max file size"))
                .unwrap()
                .to_owned();
            line.split_whitespace().nth(3).unwrap().to_owned()
        };
        assert_eq!(limits(child.id()), "200");
        lift_file_size_limit(child.id()).unwrap();
        assert_eq!(limits(child.id()), "unlimited");
        drop(child.stdin.take());
        assert!(child.wait().unwrap().success());
        assert!(lift_file_size_limit(u32::MAX).is_err(), "not a pid_t");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_made_once() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("fifo");
        make_fifo(&path).expect("mkfifo");
        let kind = std::fs::symlink_metadata(&path)
            .expect("it exists")
            .file_type();
        assert!(kind.is_fifo());
        assert!(make_fifo(&path).is_err(), "the name is taken");
    }
}
