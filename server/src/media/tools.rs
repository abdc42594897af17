//! Running the field's media tools (ffmpeg, ffprobe, heif-convert) as
//! child processes: no shell, the arguments as a list, at a lower CPU
//! priority, under an address-space limit, killed when their time is up or
//! when the job that runs them is dropped (a shutdown); and the scratch
//! directory of a job, removed with everything in it however the job ends.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::renditions::Unrenderable;

/// Prefix of the scratch directories (so that a start can remove those an
/// earlier process left).
const SCRATCH_PREFIX: &str = "upload-once-media-";
/// How long a scratch directory goes unmodified before a start takes it
/// for one a killed process left.
const SCRATCH_ABANDONED_AFTER: Duration = Duration::from_secs(6 * 3600);
/// The most of a tool's standard output that is kept (a poster's PNG, at
/// most 1600 px a side, is far smaller); the rest fails the run.
const MAX_TOOL_STDOUT: u64 = 64 << 20;
/// The most a tool's error output is read (the rest is dropped).
const MAX_TOOL_OUTPUT: usize = 64 << 10;

/// Removes scratch directories a killed process left (unmodified for
/// [`SCRATCH_ABANDONED_AFTER`]: another instance on this machine may be
/// using newer ones).
pub fn remove_abandoned_scratch(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > SCRATCH_ABANDONED_AFTER);
        if name.to_string_lossy().starts_with(SCRATCH_PREFIX) && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A job's own directory, removed with everything in it when dropped.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A new directory under `parent`.
    pub fn new(parent: &Path) -> std::io::Result<Scratch> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = parent.join(format!("{SCRATCH_PREFIX}{}", uuid::Uuid::new_v4()));
        // The guest's original, GPS and all, is no other local user's.
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Scratch { dir })
    }

    /// A path inside it.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why a run of a tool gave nothing.
#[derive(Debug)]
pub enum RunError {
    /// It ran past [`VideoTools::timeout`] and was killed.
    TimedOut(Duration),
    /// It could not start, or it failed: what it said.
    Failed(String),
}

impl RunError {
    /// The fixed sentence for the wall (`failed` when the tool failed), and
    /// the detail for the log.
    pub fn unrenderable(self, failed: &str) -> Unrenderable {
        match self {
            RunError::TimedOut(limit) => Unrenderable {
                reason: "this video takes longer to process than the server allows".into(),
                detail: format!("killed after {} s", limit.as_secs_f64()),
            },
            RunError::Failed(detail) => Unrenderable { reason: failed.into(), detail },
        }
    }
}

/// The only environment a tool gets: none of the server's (its S3 secret
/// key, admin token or database URL never reach a decoder).
pub const TOOL_ENVIRONMENT: [(&str, &str); 3] = [
    ("PATH", "/usr/local/bin:/usr/bin:/bin"),
    // glibc reserves an arena of 64 MiB of address space per thread: on a
    // machine of many cores a threaded encoder would hit the address-space
    // limit on reservations alone.
    ("MALLOC_ARENA_MAX", "2"),
    ("LC_ALL", "C"),
];

/// The CPU seconds a tool may use: its wall-clock `timeout` on every core
/// (a threaded encoder uses several at once), and one more. A backstop
/// beside the timeout, which kills it first unless its clock is cheated.
pub fn cpu_seconds(timeout: Duration) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    timeout.as_secs().max(1) * cores + 1
}

/// What a run of a tool left: its standard output, or why it failed.
///
/// The tool runs as a decoder of hostile input must: no shell, at a lower
/// CPU priority, in `dir` (its job's scratch directory), with an empty
/// environment but [`TOOL_ENVIRONMENT`], under limits on its address space
/// (`memory`), on the size of any file it writes (`max_file`), on its CPU time
/// ([`cpu_seconds`]) and on core dumps (none), and, where the kernel lets
/// the server make one (Linux, as root or with unprivileged user
/// namespaces), in a network namespace of its own with no interface but a
/// loopback that is down: it reaches nothing. What it cannot be kept from
/// is what the server's user may read and write (docs/security.md: run the
/// server as a user of its own).
pub async fn run(
    program: &Path,
    args: &[&str],
    dir: &Path,
    timeout: Duration,
    memory: u64,
    max_file: u64,
) -> Result<Vec<u8>, RunError> {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    command.env_clear().envs(TOOL_ENVIRONMENT).current_dir(dir);
    #[cfg(target_os = "linux")]
    {
        let cpu = cpu_seconds(timeout);
        // SAFETY: between fork and exec, only async-signal-safe calls
        // (setpriority, setrlimit, unshare), on values copied before the
        // fork.
        unsafe {
            command.pre_exec(move || {
                libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                let limit =
                    |value: u64| libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: value as libc::rlim_t };
                libc::setrlimit(libc::RLIMIT_AS, &limit(memory));
                libc::setrlimit(libc::RLIMIT_FSIZE, &limit(max_file));
                libc::setrlimit(libc::RLIMIT_CPU, &limit(cpu));
                libc::setrlimit(libc::RLIMIT_CORE, &limit(0));
                // A network of its own: as root directly, else inside a user
                // namespace of its own (the file checks still use the
                // server's user). Neither possible: it runs as before.
                if libc::unshare(libc::CLONE_NEWNET) != 0 {
                    libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET);
                }
                Ok(())
            });
        }
    }
    let mut child =
        command.spawn().map_err(|e| RunError::Failed(format!("{} cannot be run: {e}", program.display())))?;
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let work = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        // All of the error output is read (a tool whose pipe is full would
        // stop), its first [`MAX_TOOL_OUTPUT`] bytes kept.
        let drain = async {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let room = MAX_TOOL_OUTPUT.saturating_sub(err.len());
                err.extend_from_slice(&chunk[..n.min(room)]);
            }
        };
        // What a tool pipes back (a poster) is bounded too.
        let mut limited = (&mut stdout).take(MAX_TOOL_STDOUT);
        let (read_out, ()) = tokio::join!(limited.read_to_end(&mut out), drain);
        read_out.map_err(|e| e.to_string())?;
        if out.len() as u64 >= MAX_TOOL_STDOUT {
            // Killed when the child is dropped.
            return Err(format!("its output passed {MAX_TOOL_STDOUT} bytes"));
        }
        let status = child.wait().await.map_err(|e| e.to_string())?;
        if status.success() { Ok(out) } else { Err(format!("{status}: {}", String::from_utf8_lossy(&err).trim())) }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(done) => done.map_err(RunError::Failed),
        // Dropping the future drops the child, which kills it.
        Err(_) => Err(RunError::TimedOut(timeout)),
    }
}
