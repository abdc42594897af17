//! docs/protocol.md says what `classify` does, and the two cannot drift.
//!
//! The failure-classification table (§5.2) is read from the document and
//! every cell is checked against `classify`, for every operation, every
//! HTTP status from 300 to 599 and every problem code (none, each code of
//! `ErrorCode`, and one the client has never heard of), with and without a
//! `Retry-After`. Every such failure must fall under exactly one row, so a
//! distinction the code makes and the table does not (or the reverse) fails
//! here. The error-code table (§6) is checked against `ErrorCode` the same
//! way: the same codes, statuses and retryability.
//!
//! The checker is also run on a document with one cell changed, and with a
//! `classify` that decides one case differently, to show that it notices.

use std::collections::BTreeSet;

use upload_once_core::error::ErrorCode;
use upload_once_core::retry::{Disposition, Failure, Operation, classify};

const PROTOCOL_MD: &str = include_str!("../../docs/protocol.md");

/// A code no version of the protocol defines: an answer from a proxy, or a
/// server newer than the client.
const UNKNOWN_CODE: &str = "a_code_this_client_has_never_seen";

/// The Retry-After every HTTP failure is also classified with.
const RETRY_AFTER_MS: u64 = 1500;

/// Which statuses a row of the table covers.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Statuses {
    /// One status: `409`.
    One(u16),
    /// A class: `5xx` is 500..=599.
    Class(u16),
}

/// Which problem codes a row covers, for its statuses.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Codes {
    /// The codes it names, and whether it also covers an answer without a
    /// problem body.
    Named { codes: BTreeSet<String>, none: bool },
    /// Every answer of its statuses no row naming codes covers.
    Rest,
}

/// What a row of the table is about.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Selector {
    /// "No answer".
    NoAnswer,
    /// "2xx, unreadable".
    Unreadable,
    /// "The file changed on the device".
    FileChanged,
    /// "The browser cannot read the file".
    FileUnreadable,
    /// A status (or class) and codes.
    Http(Statuses, Codes),
    /// "Anything else": every failure no other row covers.
    Else,
}

/// One cell: the disposition, and whether a Retry ignores `Retry-After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    kind: &'static str,
    at_once: bool,
}

struct Row {
    label: String,
    selector: Selector,
    cells: Vec<(Operation, Cell)>,
}

fn kind(d: Disposition) -> &'static str {
    match d {
        Disposition::Retry { .. } => "Retry",
        Disposition::Check => "Check",
        Disposition::Renew => "Renew",
        Disposition::Confirm => "Confirm",
        Disposition::Expired => "Expired",
        Disposition::Rejected => "Rejected",
        Disposition::Fail => "Fail",
    }
}

const KINDS: [&str; 7] = ["Retry", "Check", "Renew", "Confirm", "Expired", "Rejected", "Fail"];

const OPERATIONS: [Operation; 5] =
    [Operation::Authorize, Operation::Upload, Operation::Renew, Operation::Confirm, Operation::Status];

/// The lines of the first table after `heading` whose header starts with
/// `first_column`.
fn table_after(doc: &str, heading: &str, first_column: &str) -> Result<Vec<Vec<String>>, String> {
    let start = doc.find(heading).ok_or_else(|| format!("docs/protocol.md has no heading `{heading}`"))?;
    let section = &doc[start + heading.len()..];
    // The section ends at the next heading of the same or a higher level.
    let level = heading.chars().take_while(|&c| c == '#').count();
    let end = section
        .lines()
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len() + 1;
            Some((at, line))
        })
        .find(|(_, line)| {
            let hashes = line.chars().take_while(|&c| c == '#').count();
            hashes > 0 && hashes <= level && line[hashes..].starts_with(' ')
        })
        .map_or(section.len(), |(at, _)| at);
    let section = &section[..end];
    let mut lines = section.lines().skip_while(|l| !l.starts_with(&format!("| {first_column} |")));
    let header = lines.next().ok_or_else(|| format!("`{heading}` has no table starting with `| {first_column} |`"))?;
    let separator = lines.next().unwrap_or_default();
    if !separator.starts_with("|---") {
        return Err(format!("the table under `{heading}` has no separator line"));
    }
    let split = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|c| c.trim().to_owned()).collect()
    };
    let mut rows = vec![split(header)];
    rows.extend(lines.take_while(|l| l.starts_with('|')).map(split));
    Ok(rows)
}

/// The codes written in backticks in `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn parse_selector(label: &str) -> Result<Selector, String> {
    let label = label.replace("**", "");
    let label = label.trim();
    if label.eq_ignore_ascii_case("no answer") {
        return Ok(Selector::NoAnswer);
    }
    if label.eq_ignore_ascii_case("2xx, unreadable") {
        return Ok(Selector::Unreadable);
    }
    if label.eq_ignore_ascii_case("the file changed on the device") {
        return Ok(Selector::FileChanged);
    }
    if label.eq_ignore_ascii_case("the browser cannot read the file") {
        return Ok(Selector::FileUnreadable);
    }
    if label.starts_with("Anything else") {
        return Ok(Selector::Else);
    }
    let head: String = label.chars().take(3).collect();
    let statuses = if let Some(class) = head.strip_suffix("xx").and_then(|d| d.parse::<u16>().ok()) {
        Statuses::Class(class)
    } else if let Ok(status) = head.parse::<u16>() {
        Statuses::One(status)
    } else {
        return Err(format!(
            "row `{label}`: a row starts with a status (`409`), a class (`5xx`), `No answer`, `2xx, unreadable` or `Anything else`"
        ));
    };
    let rest = &label[3..];
    let codes: BTreeSet<String> = backticked(rest).into_iter().collect();
    let none = rest.contains("without a problem body");
    for code in &codes {
        if ErrorCode::parse(code).is_none() {
            return Err(format!("row `{label}`: `{code}` is not an error code of core/src/error.rs"));
        }
    }
    let codes = if codes.is_empty() && !none { Codes::Rest } else { Codes::Named { codes, none } };
    Ok(Selector::Http(statuses, codes))
}

fn parse_cell(text: &str) -> Result<Cell, String> {
    let plain = text.replace("**", "");
    let word = plain.split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or_default();
    let kind = KINDS
        .iter()
        .copied()
        .find(|k| *k == word)
        .ok_or_else(|| format!("cell `{text}` does not start with a disposition ({})", KINDS.join(", ")))?;
    Ok(Cell { kind, at_once: plain.contains("at once") })
}

fn operation_of(header: &str) -> Result<Operation, String> {
    let word = header.split_whitespace().next().unwrap_or_default();
    OPERATIONS
        .iter()
        .copied()
        .find(|op| format!("{op:?}") == word)
        .ok_or_else(|| format!("column `{header}` is not an operation of core/src/retry.rs"))
}

/// The §5.2 table.
fn classification_table(doc: &str) -> Result<Vec<Row>, String> {
    let table = table_after(doc, "### 5.2 Failure classification", "Failure")?;
    let (header, body) = table.split_first().ok_or("empty table")?;
    let ops: Vec<Operation> = header[1..].iter().map(|h| operation_of(h)).collect::<Result<_, _>>()?;
    for op in OPERATIONS {
        if ops.iter().filter(|o| **o == op).count() != 1 {
            return Err(format!("the table needs exactly one column for {op:?}"));
        }
    }
    body.iter()
        .map(|line| {
            if line.len() != header.len() {
                return Err(format!("row `{}` has {} cells, the header {}", line[0], line.len(), header.len()));
            }
            let cells = ops
                .iter()
                .copied()
                .zip(line[1..].iter())
                .map(|(op, c)| parse_cell(c).map(|cell| (op, cell)))
                .collect::<Result<_, _>>()?;
            Ok(Row { label: line[0].clone(), selector: parse_selector(&line[0])?, cells })
        })
        .collect()
}

/// Every failure the client can meet, as far as `classify` can tell them
/// apart: no answer, an unreadable success, and every status from 300 to
/// 599 with no code, each code, and an unknown one.
fn failures() -> Vec<Failure> {
    let mut codes: Vec<Option<String>> = vec![None, Some(UNKNOWN_CODE.to_owned())];
    codes.extend(ErrorCode::ALL.iter().map(|c| Some(c.as_str().to_owned())));
    let mut all = vec![Failure::Network, Failure::Unexpected("not the JSON it should be".into()), Failure::FileChanged];
    all.push(Failure::FileUnreadable);
    for status in 300..=599u16 {
        for code in &codes {
            all.push(Failure::Http { status, code: code.clone(), message: String::new(), retry_after_ms: None });
        }
    }
    all
}

/// The one row that covers `failure`: the row naming its status and code,
/// else the row of its status alone, else of its class, else "Anything
/// else". Two rows at the same level are an ambiguous table.
fn row_for<'a>(rows: &'a [Row], failure: &Failure) -> Result<&'a Row, String> {
    let (status, code) = match failure {
        Failure::Network => {
            return single(rows.iter().filter(|r| r.selector == Selector::NoAnswer), "no answer");
        }
        Failure::Unexpected(_) => {
            return single(rows.iter().filter(|r| r.selector == Selector::Unreadable), "an unreadable 2xx");
        }
        Failure::FileChanged => {
            return single(
                rows.iter().filter(|r| r.selector == Selector::FileChanged),
                "a file changed since the pick",
            );
        }
        Failure::FileUnreadable => {
            return single(
                rows.iter().filter(|r| r.selector == Selector::FileUnreadable),
                "a file the browser cannot read",
            );
        }
        Failure::Http { status, code, .. } => (*status, code.as_deref()),
    };
    let what = format!("{status} {}", code.unwrap_or("without a problem body"));
    let covers_status = |s: &Statuses, exact: bool| match s {
        Statuses::One(one) => exact && *one == status,
        Statuses::Class(class) => !exact && *class == status / 100,
    };
    let names_code = |c: &Codes| match (c, code) {
        (Codes::Named { none, .. }, None) => *none,
        (Codes::Named { codes, .. }, Some(code)) => codes.contains(code),
        (Codes::Rest, _) => false,
    };
    for exact in [true, false] {
        let at_status: Vec<&Row> =
            rows.iter().filter(|r| matches!(&r.selector, Selector::Http(s, _) if covers_status(s, exact))).collect();
        let named: Vec<&Row> = at_status
            .iter()
            .copied()
            .filter(|r| matches!(&r.selector, Selector::Http(_, c) if names_code(c)))
            .collect();
        if !named.is_empty() {
            return single(named.into_iter(), &what);
        }
        let rest: Vec<&Row> =
            at_status.iter().copied().filter(|r| matches!(&r.selector, Selector::Http(_, Codes::Rest))).collect();
        if !rest.is_empty() {
            return single(rest.into_iter(), &what);
        }
    }
    single(rows.iter().filter(|r| r.selector == Selector::Else), &what)
}

fn single<'a>(mut rows: impl Iterator<Item = &'a Row>, what: &str) -> Result<&'a Row, String> {
    match (rows.next(), rows.next()) {
        (Some(row), None) => Ok(row),
        (None, _) => Err(format!("no row of the table covers {what}")),
        (Some(a), Some(b)) => Err(format!("{what} falls under two rows: `{}` and `{}`", a.label, b.label)),
    }
}

/// A failure as the table would name it.
fn describe(failure: &Failure) -> String {
    match failure {
        Failure::Network => "no answer".into(),
        Failure::Unexpected(_) => "an unreadable 2xx".into(),
        Failure::FileChanged => "a file changed since the pick".into(),
        Failure::FileUnreadable => "a file the browser cannot read".into(),
        Failure::Http { status, code, retry_after_ms, .. } => format!(
            "{status} {}{}",
            code.as_deref().map_or("without a problem body".to_owned(), |c| format!("`{c}`")),
            if retry_after_ms.is_some() { " with Retry-After" } else { "" }
        ),
    }
}

/// Checks the §5.2 table of `doc` against `classify_fn`; answers every
/// disagreement, one line per operation and row (with how many failures
/// it concerns and one of them).
fn disagreements(doc: &str, classify_fn: impl Fn(Operation, &Failure) -> Disposition) -> Vec<String> {
    let rows = match classification_table(doc) {
        Ok(rows) => rows,
        Err(e) => return vec![e],
    };
    // (operation, row, what the table says, what classify does) → (count, an example)
    let mut found: std::collections::BTreeMap<(String, String, String, String), (usize, String)> = Default::default();
    let mut note = |op: Operation, row: &Row, want: String, got: String, failure: &Failure| {
        let entry = found.entry((format!("{op:?}"), row.label.clone(), want, got)).or_insert((0, describe(failure)));
        entry.0 += 1;
    };
    let mut unplaced = BTreeSet::new();
    let mut used = vec![false; rows.len()];
    for failure in failures() {
        let row = match row_for(&rows, &failure) {
            Ok(row) => row,
            Err(e) => {
                unplaced.insert(e);
                continue;
            }
        };
        used[rows.iter().position(|r| std::ptr::eq(r, row)).expect("a row of the table")] = true;
        for &(op, cell) in &row.cells {
            let got = classify_fn(op, &failure);
            if kind(got) != cell.kind {
                note(op, row, cell.kind.to_owned(), format!("{got:?}"), &failure);
                continue;
            }
            // The same answer with a Retry-After: the same disposition, and a
            // Retry waits at least that long unless the table says "at once".
            if let Failure::Http { status, code, message, .. } = &failure {
                let with_header = Failure::Http {
                    status: *status,
                    code: code.clone(),
                    message: message.clone(),
                    retry_after_ms: Some(RETRY_AFTER_MS),
                };
                let got = classify_fn(op, &with_header);
                let want_delay = if cell.at_once { 0 } else { RETRY_AFTER_MS };
                match got {
                    Disposition::Retry { min_delay_ms } if cell.kind == "Retry" && min_delay_ms != want_delay => {
                        let want = if cell.at_once { "Retry at once" } else { "Retry after Retry-After" };
                        note(op, row, want.to_owned(), format!("{got:?}"), &with_header);
                    }
                    _ if kind(got) != cell.kind => {
                        note(op, row, cell.kind.to_owned(), format!("{got:?}"), &with_header)
                    }
                    _ => {}
                }
            }
        }
    }
    let mut problems: Vec<String> = unplaced.into_iter().collect();
    for ((op, label, want, got), (count, example)) in found {
        problems.push(format!(
            "{op} × `{label}`: the table says {want}, classify answers {got} ({count} failure(s), e.g. {example})"
        ));
    }
    for (row, used) in rows.iter().zip(used) {
        if !used {
            problems.push(format!("row `{}` covers no failure (another row always wins)", row.label));
        }
    }
    problems
}

fn report(problems: &[String]) -> String {
    format!(
        "{} disagreement(s) between docs/protocol.md §5.2 and classify:\n  {}",
        problems.len(),
        problems.join("\n  ")
    )
}

#[test]
fn the_classification_table_is_what_classify_does() {
    let problems = disagreements(PROTOCOL_MD, classify);
    assert!(problems.is_empty(), "{}", report(&problems));
}

#[test]
fn the_table_covers_the_cases_classify_tells_apart() {
    // Each row decides for many failures; these are the cases classify
    // singles out, named so that a lost row is seen by name.
    let rows = classification_table(PROTOCOL_MD).expect("the table parses");
    let http = |status: u16, code: Option<&str>| Failure::http(status, code, "");
    let cases = [
        (Operation::Upload, http(410, Some("expired")), "Check"),
        (Operation::Renew, http(422, Some("checksum_mismatch")), "Check"),
        (Operation::Authorize, http(401, Some("invalid_session")), "Retry"),
        (Operation::Renew, http(401, Some("invalid_session")), "Fail"),
        (Operation::Confirm, http(401, Some("invalid_session")), "Fail"),
        (Operation::Status, http(401, Some("invalid_session")), "Fail"),
        (Operation::Upload, http(401, Some("invalid_session")), "Fail"),
        (Operation::Confirm, http(401, Some("unauthorized")), "Fail"),
        (Operation::Upload, http(403, None), "Renew"),
        (Operation::Upload, http(403, Some("forbidden")), "Fail"),
        (Operation::Confirm, http(409, Some("object_missing")), "Check"),
        (Operation::Renew, http(409, Some("already_confirmed")), "Confirm"),
        (Operation::Upload, http(412, None), "Confirm"),
        (Operation::Confirm, http(422, Some("size_mismatch")), "Rejected"),
        (Operation::Upload, Failure::Network, "Check"),
        (Operation::Status, Failure::Unexpected(String::new()), "Retry"),
    ];
    for (op, failure, want) in cases {
        let row = row_for(&rows, &failure).unwrap_or_else(|e| panic!("{e}"));
        let cell = row.cells.iter().find(|(o, _)| *o == op).expect("a column per operation").1;
        assert_eq!(cell.kind, want, "{op:?} × {failure:?} in row `{}`", row.label);
        assert_eq!(kind(classify(op, &failure)), want, "{op:?} × {failure:?} in classify");
    }
}

#[test]
fn a_table_changed_alone_is_caught() {
    // The PUT's 410 row said Fail before the table was checked; saying it
    // again must fail.
    let row = "| 410 | **Expired** | **Check** | **Expired** | **Expired** | Fail |";
    assert!(PROTOCOL_MD.contains(row), "the 410 row is as this test expects");
    let changed = PROTOCOL_MD.replace(row, "| 410 | **Expired** | Fail | **Expired** | **Expired** | Fail |");
    let problems = disagreements(&changed, classify);
    assert!(!problems.is_empty(), "a changed cell must be reported");
    assert_eq!(problems.len(), 1, "{}", report(&problems));
    assert!(
        problems[0].starts_with("Upload × `410`: the table says Fail, classify answers Check"),
        "{}",
        report(&problems)
    );

    // A row that stops naming a code leaves its answers to a wider row.
    let changed = PROTOCOL_MD.replace("| 401 `invalid_session` |", "| 401 |");
    let problems = disagreements(&changed, classify);
    assert!(
        problems.iter().any(|p| p.starts_with("Authorize × `401`: the table says Retry, classify answers Fail")),
        "{}",
        report(&problems)
    );

    // Two rows for the same answers are ambiguous.
    let changed = PROTOCOL_MD.replace("| 409, any other code or none |", "| 409 `object_missing` or none |");
    let problems = disagreements(&changed, classify);
    assert!(problems.iter().any(|p| p.contains("falls under two rows")), "{}", report(&problems));
}

#[test]
fn a_classify_changed_alone_is_caught() {
    // Renew's 422 goes back to Fail (as the table once said): caught.
    let changed = |op: Operation, failure: &Failure| match (op, failure) {
        (Operation::Renew, Failure::Http { status: 422, .. }) => Disposition::Fail,
        _ => classify(op, failure),
    };
    let problems = disagreements(PROTOCOL_MD, changed);
    assert!(!problems.is_empty(), "a changed decision must be reported");
    assert_eq!(problems.len(), 1, "{}", report(&problems));
    assert!(
        problems[0].starts_with("Renew × `422`: the table says Check, classify answers Fail"),
        "{}",
        report(&problems)
    );

    // A new distinction the table does not make: one code of one status.
    let changed = |op: Operation, failure: &Failure| match (op, failure) {
        (Operation::Status, Failure::Http { status: 404, code: Some(c), .. }) if c == "not_found" => {
            Disposition::Expired
        }
        _ => classify(op, failure),
    };
    let problems = disagreements(PROTOCOL_MD, changed);
    assert_eq!(problems.len(), 1, "{}", report(&problems));
    assert!(
        problems[0].starts_with("Status × `Anything else")
            && problems[0].ends_with("(1 failure(s), e.g. 404 `not_found`)"),
        "{}",
        report(&problems)
    );

    // Retry-After ignored where the table promises it is honoured.
    let changed = |op: Operation, failure: &Failure| match classify(op, failure) {
        Disposition::Retry { .. } if matches!(failure, Failure::Http { status: 429, .. }) => {
            Disposition::Retry { min_delay_ms: 0 }
        }
        d => d,
    };
    let problems = disagreements(PROTOCOL_MD, changed);
    assert_eq!(problems.len(), 5, "one per operation: {}", report(&problems));
    assert!(
        problems.iter().all(|p| p
            .contains("× `429`: the table says Retry after Retry-After, classify answers Retry { min_delay_ms: 0 }")),
        "{}",
        report(&problems)
    );
}

/// The §6 table: every code with its HTTP status ("—": client only) and
/// whether it is retryable.
fn error_code_table(doc: &str) -> Result<Vec<(String, u16, bool)>, String> {
    let table = table_after(doc, "## 6. Error codes", "Code")?;
    let (header, body) = table.split_first().ok_or("empty table")?;
    let column = |name: &str| header.iter().position(|h| h == name).ok_or_else(|| format!("§6 has no `{name}` column"));
    let (http, retryable) = (column("HTTP")?, column("Retryable")?);
    body.iter()
        .map(|row| {
            let code =
                backticked(&row[0]).into_iter().next().ok_or_else(|| format!("row `{}` names no code", row[0]))?;
            let status = match row[http].as_str() {
                "—" => 0,
                s => s.parse().map_err(|_| format!("`{code}`: HTTP `{s}` is not a status"))?,
            };
            let retry = match row[retryable].replace("**", "").as_str() {
                "yes" => true,
                "no" => false,
                other => {
                    return Err(format!("`{code}`: retryable `{other}` is neither yes nor no"));
                }
            };
            Ok((code, status, retry))
        })
        .collect()
}

#[test]
fn the_error_code_table_is_the_error_codes() {
    let table = error_code_table(PROTOCOL_MD).unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    for (code, status, retryable) in &table {
        match ErrorCode::parse(code) {
            None => problems.push(format!("§6 lists `{code}`, which core/src/error.rs does not have")),
            Some(c) => {
                if c.http_status() != *status {
                    problems.push(format!("`{code}`: §6 says HTTP {status}, the code {}", c.http_status()));
                }
                if c.is_retryable() != *retryable {
                    problems.push(format!("`{code}`: §6 says retryable {retryable}, the code {}", c.is_retryable()));
                }
            }
        }
    }
    for code in ErrorCode::ALL {
        if !table.iter().any(|(c, ..)| c == code.as_str()) {
            problems.push(format!("`{code}` is missing from §6"));
        }
    }
    assert!(problems.is_empty(), "docs/protocol.md §6 and core/src/error.rs disagree:\n  {}", problems.join("\n  "));
}
