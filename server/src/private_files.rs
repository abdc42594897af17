//! Files and folders that only the server's own user can read, from the
//! moment they exist: the data directory (0700), the signing key, the
//! originals, their parts and metadata (0600), whatever the process's
//! umask (Debian's is 022, which would make every original world-readable).
//! A mode set after creating (`chmod`) leaves a moment in which another
//! user of the machine could open the file; a mode given to `open` does not.

use std::io;
use std::path::Path;

/// The mode of every folder the server makes.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file the server makes.
pub const FILE_MODE: u32 = 0o600;

/// `create_dir_all`, each folder it makes private.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// [`create_dir_all`], asynchronously.
pub async fn create_dir_all_async(path: &Path) -> io::Result<()> {
    let mut builder = tokio::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(DIR_MODE);
    builder.create(path).await
}

/// One private folder (its parent must exist).
pub async fn create_dir(path: &Path) -> io::Result<()> {
    let mut builder = tokio::fs::DirBuilder::new();
    #[cfg(unix)]
    builder.mode(DIR_MODE);
    builder.create(path).await
}

/// Creates (or truncates) a private file for writing.
pub async fn create_file(path: &Path) -> io::Result<tokio::fs::File> {
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(FILE_MODE);
    options.open(path).await
}

/// Writes a new private file that must not exist yet (`create_new`).
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes an existing folder private (the data directory a release before
/// this one made with the umask's mode).
pub fn make_private(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}
