//! dlsim's file system rules in one place, shared by every crate that reads inputs or
//! writes outputs:
//!
//! * **Atomic writes.** [`write_atomic`], [`write_atomic_with`] and [`write_atomic_via`]
//!   (for a writer that opens its own file) write a sibling
//!   temporary file and rename it over the target, so a reader never sees half a file; on
//!   any error the temporary file is removed.
//! * **Only over regular files.** A target that exists and is not a regular file (a
//!   folder, a device node such as `/dev/null`, a FIFO, a socket) is refused
//!   ([`check_target`]): renaming over it would replace it.
//! * **Whole folders at once.** [`stage_dir`] gives a temporary sibling folder to write a
//!   run into, and [`commit_dir`] renames it into place, so `dlsim check` and `dlsim report`
//!   never see a half-written run.
//! * **Bounded reads.** [`read_to_string_limited`] refuses an input over a size limit
//!   (`/dev/zero` as a scenario is an error, not an out-of-memory abort).
//!
//! Errors are `std::io::Error`s whose message names the path; callers add the context.

use std::fs::File;
use std::io::{BufRead, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Inputs read whole (scenarios, sweep files, baselines, node lists, calibration files)
/// are refused above this size: the largest bundled one is under 1 MB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// One line of a line-based input (a trace record, a CSV row) is refused above this size.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

fn err(kind: std::io::ErrorKind, msg: String) -> std::io::Error {
    std::io::Error::new(kind, msg)
}

/// Refuses a target that exists and is not a regular file (a missing path is fine).
/// Symbolic links are followed: a link to a regular file is written through the rename
/// (the link itself is replaced, as any atomic writer does).
pub fn check_target(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(err(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} is {}, not a regular file: refusing to write over it",
                path.display(),
                kind_of(&m)
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(err(e.kind(), format!("{}: {e}", path.display()))),
    }
}

fn kind_of(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if m.is_dir() {
        "a folder"
    } else if m.is_file() {
        "a regular file"
    } else {
        "neither a regular file nor a folder"
    }
}

/// The temporary sibling of `path` (same folder, so the rename stays on one file system).
fn temp_sibling(path: &Path, what: &str) -> std::io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        err(
            std::io::ErrorKind::InvalidInput,
            format!("{} has no file name", path.display()),
        )
    })?;
    let name = name.to_string_lossy();
    Ok(path.with_file_name(format!(".{name}.{what}-{}", std::process::id())))
}

/// Writes `bytes` to `path` atomically (see the module comment); creates the parent folder.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |out| out.write_all(bytes))
}

/// Writes `path` atomically through a buffered writer that `write` fills.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    write_atomic_via(path, |tmp| {
        let mut out = BufWriter::new(File::create(tmp)?);
        write(&mut out)?;
        out.flush()
    })
}

/// Writes `path` atomically through a writer that opens its file itself (plotters' PNG
/// encoder): `write` fills the temporary sibling it is given, which keeps `path`'s
/// extension, since such writers pick the format by it. Same rules as [`write_atomic`].
pub fn write_atomic_via(
    path: &Path,
    write: impl FnOnce(&Path) -> std::io::Result<()>,
) -> std::io::Result<()> {
    check_target(path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(e.kind(), format!("creating {}: {e}", dir.display())))?;
    }
    let mut tmp = temp_sibling(path, "tmp")?.into_os_string();
    if let Some(ext) = path.extension() {
        tmp.push(".");
        tmp.push(ext);
    }
    let tmp = PathBuf::from(tmp);
    let result = write(&tmp).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e.kind(), format!("writing {}: {e}", path.display())));
    }
    Ok(())
}

/// A fresh temporary folder beside `dest` to write a whole output folder into, then
/// [`commit_dir`] it. Refuses a `dest` that exists and is not a folder, or is a folder
/// holding files other than `expected` (it would be replaced whole).
pub fn stage_dir(dest: &Path, expected: &[&str]) -> std::io::Result<PathBuf> {
    check_dir_target(dest, expected)?;
    staging_dir(dest)
}

/// Refuses a `dest` that exists and is not a folder, whatever a folder holds: the check
/// of a command that adds to a folder (a sweep resumed) or learns late what it writes.
pub fn check_folder_target(dest: &Path) -> std::io::Result<()> {
    match check_dir_target(dest, &[]) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// A fresh, empty temporary folder beside `dest`.
fn staging_dir(dest: &Path) -> std::io::Result<PathBuf> {
    let tmp = temp_sibling(dest, "staging")?;
    if let Some(dir) = tmp.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| err(e.kind(), format!("creating {}: {e}", dir.display())))?;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp)
        .map_err(|e| err(e.kind(), format!("creating {}: {e}", tmp.display())))?;
    Ok(tmp)
}

/// What [`stage_dir`] checks, without creating anything: call it before a long run so a
/// bad `--out` fails first.
pub fn check_dir_target(dest: &Path, expected: &[&str]) -> std::io::Result<()> {
    match std::fs::metadata(dest) {
        Ok(m) if m.is_dir() => {
            for entry in std::fs::read_dir(dest)? {
                let name = entry?.file_name();
                let name = name.to_string_lossy();
                if !expected.contains(&name.as_ref()) {
                    return Err(err(
                        std::io::ErrorKind::AlreadyExists,
                        format!(
                            "{} holds {name}, which this command does not write: refusing to replace the folder",
                            dest.display()
                        ),
                    ));
                }
            }
        }
        Ok(m) => {
            return Err(err(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} is {}, not a folder: refusing to write over it",
                    dest.display(),
                    kind_of(&m)
                ),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e.kind(), format!("{}: {e}", dest.display()))),
    }
    Ok(())
}

/// Moves a folder filled by [`stage_dir`] into place: an earlier `dest` (checked by
/// `stage_dir`) is moved aside first and removed after, so `dest` is at every instant
/// either missing, the old folder or the new one, never a mix.
pub fn commit_dir(staged: &Path, dest: &Path) -> std::io::Result<()> {
    let old = temp_sibling(dest, "old")?;
    let had_old = dest.is_dir();
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(dest, &old)?;
    }
    if let Err(e) = std::fs::rename(staged, dest) {
        if had_old {
            let _ = std::fs::rename(&old, dest);
        }
        let _ = std::fs::remove_dir_all(staged);
        return Err(err(
            e.kind(),
            format!("renaming to {}: {e}", dest.display()),
        ));
    }
    if had_old {
        let _ = std::fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Reads `path` whole as UTF-8, refusing more than `limit` bytes (an endless or huge
/// input is an error, not an allocation abort).
pub fn read_to_string_limited(path: &Path, limit: u64) -> std::io::Result<String> {
    let f = File::open(path)?;
    let mut bytes = Vec::new();
    f.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(err(
            std::io::ErrorKind::InvalidData,
            format!("larger than the input limit of {limit} bytes"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        err(
            std::io::ErrorKind::InvalidData,
            format!("line {line}: not valid UTF-8"),
        )
    })
}

/// The lines of a reader, like `BufRead::lines`, but a line over `limit` bytes (an
/// endless input without a newline, such as `/dev/zero`) is an error instead of an
/// allocation that grows until memory runs out.
pub struct BoundedLines<R> {
    reader: R,
    limit: u64,
}

/// [`BoundedLines`] over `reader` with the [`MAX_LINE_BYTES`] limit.
pub fn bounded_lines<R: BufRead>(reader: R) -> BoundedLines<R> {
    BoundedLines {
        reader,
        limit: MAX_LINE_BYTES,
    }
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = std::io::Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut buf = Vec::new();
        let read = (&mut self.reader)
            .take(self.limit + 1)
            .read_until(b'\n', &mut buf);
        match read {
            Err(e) => return Some(Err(e)),
            Ok(0) => return None,
            Ok(_) => {}
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() as u64 > self.limit {
            return Some(Err(err(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than the limit of {} bytes", self.limit),
            )));
        }
        Some(
            String::from_utf8(buf)
                .map_err(|_| err(std::io::ErrorKind::InvalidData, "not valid UTF-8".into())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dlsim-fsio-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The refusals name what is in the way: a regular file where a folder goes is "a
    /// regular file" (it was called "not a regular file"), a folder where a file goes "a
    /// folder".
    #[test]
    fn a_refusal_names_what_is_in_the_way() {
        let dir = scratch("kinds");
        let file = dir.join("a.txt");
        std::fs::write(&file, b"x").unwrap();
        let e = check_folder_target(&file).unwrap_err().to_string();
        assert!(e.contains("is a regular file, not a folder"), "{e}");
        let e = write_atomic(&dir, b"x").unwrap_err().to_string();
        assert!(e.contains("is a folder, not a regular file"), "{e}");
    }

    #[test]
    fn writes_atomically_and_leaves_no_temporary_file() {
        let dir = scratch("write");
        let f = dir.join("sub").join("a.txt");
        write_atomic(&f, b"one").unwrap();
        write_atomic(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1, "only the file itself is left");
        // A failing writer leaves the old file and no temporary one.
        let e = write_atomic_with(&f, |_| Err(std::io::Error::other("boom"))).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.join("sub")).unwrap().count(), 1);
    }

    #[test]
    fn a_writer_with_its_own_file_keeps_the_extension_and_leaves_nothing_on_failure() {
        let dir = scratch("via");
        let f = dir.join("fig.png");
        write_atomic_via(&f, |tmp| {
            assert_eq!(tmp.extension().unwrap(), "png");
            std::fs::write(tmp, b"img")
        })
        .unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"img");
        let e = write_atomic_via(&f, |tmp| {
            std::fs::write(tmp, b"half")?;
            Err(std::io::Error::other("boom"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert_eq!(std::fs::read(&f).unwrap(), b"img");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }

    #[test]
    fn refuses_to_write_over_what_is_not_a_regular_file() {
        let dir = scratch("special");
        let e = write_atomic(&dir, b"x").unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        #[cfg(unix)]
        {
            let e = write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
            assert!(e.to_string().contains("/dev/null is a device"), "{e}");
            assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        }
    }

    #[test]
    fn a_staged_folder_appears_whole_and_never_replaces_foreign_files() {
        let dir = scratch("stage");
        let dest = dir.join("run");
        let tmp = stage_dir(&dest, &["a", "b"]).unwrap();
        std::fs::write(tmp.join("a"), "1").unwrap();
        assert!(!dest.exists(), "nothing is visible before the commit");
        commit_dir(&tmp, &dest).unwrap();
        assert_eq!(std::fs::read_to_string(dest.join("a")).unwrap(), "1");
        // A rerun replaces the run folder whole.
        let tmp = stage_dir(&dest, &["a", "b"]).unwrap();
        std::fs::write(tmp.join("b"), "2").unwrap();
        commit_dir(&tmp, &dest).unwrap();
        assert!(!dest.join("a").exists() && dest.join("b").exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no leftovers");
        // A folder holding anything else is refused, not replaced.
        std::fs::write(dest.join("notes.txt"), "mine").unwrap();
        let e = stage_dir(&dest, &["a", "b"]).unwrap_err();
        assert!(e.to_string().contains("notes.txt"), "{e}");
    }

    #[test]
    fn bounded_lines_split_like_lines_and_refuse_an_endless_line() {
        let text = "a\r\nbb\n\nccc";
        let lines: Vec<String> = bounded_lines(text.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(lines, ["a", "bb", "", "ccc"]);
        let long = "x".repeat(2000);
        let mut it = BoundedLines {
            reader: long.as_bytes(),
            limit: 1000,
        };
        let e = it.next().unwrap().unwrap_err();
        assert!(e.to_string().contains("limit of 1000 bytes"), "{e}");
        #[cfg(unix)]
        {
            let zero = std::io::BufReader::new(File::open("/dev/zero").unwrap());
            assert!(bounded_lines(zero).next().unwrap().is_err());
        }
    }

    #[test]
    fn bounded_reads_refuse_endless_and_non_utf8_input() {
        #[cfg(unix)]
        {
            let e = read_to_string_limited(Path::new("/dev/zero"), 1024).unwrap_err();
            assert!(e.to_string().contains("input limit of 1024 bytes"), "{e}");
        }
        let dir = scratch("read");
        let f = dir.join("bad.json");
        std::fs::write(&f, b"{\n\"a\": \"\xff\"}").unwrap();
        let e = read_to_string_limited(&f, 1024).unwrap_err();
        assert!(e.to_string().contains("line 2: not valid UTF-8"), "{e}");
        std::fs::write(&f, b"{}").unwrap();
        assert_eq!(read_to_string_limited(&f, 2).unwrap(), "{}");
    }
}
