//! What the machine offers the process, asked once.

use std::sync::OnceLock;

/// The cores this process may use (at least one). Asked of the system once: each asking reads
/// the process's CPU affinity and its cgroup's quota files, and a load asks for every piece
/// parsed and every settle.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}
