//! The control socket's `sites` and `sources`: every call site the loaded
//! objects hold (whether or not it ever ran) and every source, with what
//! the configuration makes of each. Copied under the logger's lock,
//! rendered after it.

use crate::logger::{enter, State};
use crate::priority::Priority;
use crate::site::{
    vlog__site, VLOG__LIMIT_EVERY_N, VLOG__LIMIT_NONE, VLOG__LIMIT_ONCE, VLOG__LIMIT_RATE,
};
use crate::text::json::put_json_string;
use crate::text::num::id_hex;

/// One site, as listed.
struct Row {
    id: u32,
    source: String,
    file: String,
    line: u32,
    func: String,
    /// The macro's priority (None: chosen at run time).
    prio: Option<Priority>,
    level: i32,
    limit: Option<String>,
    recorded: u64,
    suppressed: u64,
    format: Option<String>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn row(site: &vlog__site, level: i32) -> Row {
    use std::sync::atomic::Ordering::Relaxed;
    let d = site.described();
    let limit = match site.limit {
        VLOG__LIMIT_NONE => None,
        VLOG__LIMIT_ONCE => Some("once".to_owned()),
        VLOG__LIMIT_EVERY_N => Some(format!("every {}", site.limit_count.max(1))),
        VLOG__LIMIT_RATE => Some(format!("{}/{}s", site.limit_count, site.limit_seconds)),
        other => Some(format!("unknown ({other})")),
    };
    Row {
        id: match site.id.load(Relaxed) {
            0 => site.compute_id(),
            id => id,
        },
        source: text(d.source),
        file: text(d.file),
        line: d.line,
        func: text(d.func),
        prio: u64::try_from(site.prio)
            .ok()
            .and_then(Priority::from_number),
        level,
        limit,
        recorded: site.recorded.load(Relaxed),
        suppressed: site.suppressed.load(Relaxed),
        format: d.format.map(text),
    }
}

/// Whether a site records anything: its priority (or, chosen at run time,
/// any) at or above its level.
fn on(r: &Row) -> bool {
    match r.prio {
        Some(p) => p as i32 >= r.level,
        None => r.level <= Priority::Error as i32,
    }
}

fn level_name(level: i32) -> &'static str {
    u64::try_from(level)
        .ok()
        .and_then(Priority::from_number)
        .map_or("off", Priority::name)
}

/// The sites, sorted by file and line; None when this thread is inside vlog.
fn rows() -> Option<Vec<Row>> {
    let mut rows = enter(|s: &mut State| {
        s.sites()
            .map(|(site, level)| row(site, level))
            .collect::<Vec<_>>()
    })?;
    rows.sort_by(|a, b| (&a.file, a.line, &a.func).cmp(&(&b.file, b.line, &b.func)));
    Some(rows)
}

/// `sites` as text: a header, then one line per site.
pub fn sites_text() -> Option<String> {
    let rows = rows()?;
    let mut out = String::from(
        "ID        ON  PRIO     LEVEL    RECORDED  LIMIT       SOURCE  WHERE  FUNCTION  FORMAT\n",
    );
    for r in &rows {
        let mut format = Vec::new();
        match &r.format {
            Some(f) => put_json_string(f.as_bytes(), &mut format),
            None => format.extend_from_slice(b"(chosen at run time)"),
        }
        out.push_str(&format!(
            "{}  {:<3} {:<8} {:<8} {:>8}  {:<10}  {}  {}:{}  {}  {}\n",
            String::from_utf8_lossy(&id_hex(r.id)),
            if on(r) { "yes" } else { "no" },
            r.prio.map_or("(any)", Priority::name),
            level_name(r.level),
            r.recorded,
            r.limit.as_deref().unwrap_or("-"),
            r.source,
            r.file,
            r.line,
            r.func,
            String::from_utf8_lossy(&format),
        ));
    }
    Some(out)
}

/// `sites` as the members of a JSON reply: `"sites":[{...},...]`.
pub fn sites_json() -> Option<Vec<u8>> {
    let rows = rows()?;
    let mut out = b"\"sites\":[".to_vec();
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":\"");
        out.extend_from_slice(&id_hex(r.id));
        out.extend_from_slice(b"\",\"source\":");
        put_json_string(r.source.as_bytes(), &mut out);
        out.extend_from_slice(b",\"file\":");
        put_json_string(r.file.as_bytes(), &mut out);
        out.extend_from_slice(format!(",\"line\":{},\"func\":", r.line).as_bytes());
        put_json_string(r.func.as_bytes(), &mut out);
        out.extend_from_slice(b",\"priority\":");
        match r.prio {
            Some(p) => put_json_string(p.name().as_bytes(), &mut out),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"level\":");
        put_json_string(level_name(r.level).as_bytes(), &mut out);
        out.extend_from_slice(
            format!(
                ",\"on\":{},\"recorded\":{},\"suppressed\":{},\"limit\":",
                on(r),
                r.recorded,
                r.suppressed
            )
            .as_bytes(),
        );
        match &r.limit {
            Some(l) => put_json_string(l.as_bytes(), &mut out),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"format\":");
        match &r.format {
            Some(f) => put_json_string(f.as_bytes(), &mut out),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.push(b']');
    Some(out)
}

/// The sources with their levels and how many sites each has.
fn source_rows() -> Option<Vec<(String, i32, usize)>> {
    enter(|s: &mut State| {
        let mut count = std::collections::BTreeMap::<&[u8], usize>::new();
        for (site, _) in s.sites() {
            *count.entry(site.described().source).or_default() += 1;
        }
        s.sources_known()
            .into_iter()
            .map(|(name, level)| {
                let n = count.get(&name[..]).copied().unwrap_or(0);
                (text(&name), level, n)
            })
            .collect()
    })
}

pub fn sources_text() -> Option<String> {
    let mut out = String::from("SOURCE  LEVEL  SITES\n");
    for (name, level, n) in source_rows()? {
        out.push_str(&format!("{name}  {}  {n}\n", level_name(level)));
    }
    Some(out)
}

pub fn sources_json() -> Option<Vec<u8>> {
    let mut out = b"\"sources\":[".to_vec();
    for (i, (name, level, n)) in source_rows()?.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        put_json_string(name.as_bytes(), &mut out);
        out.extend_from_slice(b",\"level\":");
        put_json_string(level_name(level).as_bytes(), &mut out);
        out.extend_from_slice(format!(",\"sites\":{n}}}").as_bytes());
    }
    out.push(b']');
    Some(out)
}
