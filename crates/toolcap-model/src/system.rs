//! Calls into the operating system and the C allocator, each behind a safe function. The rest
//! of the program asks this module instead of calling `libc` itself, so every `unsafe` block
//! that reaches the system sits here, with the reason it is sound beside it.
//!
//! glibc's allocator calls exist only under one `cfg`; elsewhere their functions do nothing
//! and say so in their return values.

#[cfg(any(target_os = "linux", test))]
use std::path::Path;

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
