//! What every output that prints a record shares: the lines each form
//! makes once.

use super::spec::Form;
use crate::record::Record;
use crate::sys;
use crate::text::json::{render_json, JSON_LINE_MAX};
use crate::text::line::{render_line, LINE_MAX};
use crate::text::time::Clock;

/// What every output that prints a record shares: the text and JSON lines,
/// each made at most once per record, and a buffer for the forms made per
/// output. Reserved once, so printing never allocates.
#[derive(Debug, Default)]
pub struct Lines {
    pub(super) clock: Clock,
    pub(super) text: Vec<u8>,
    pub(super) json: Vec<u8>,
    pub(super) entry: Vec<u8>,
    pub(super) text_made: bool,
    pub(super) json_made: bool,
}

impl Lines {
    /// Reserves the buffers once, so that printing never allocates.
    pub(super) fn reserve(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.text.try_reserve(LINE_MAX)?;
        self.json.try_reserve(JSON_LINE_MAX)?;
        self.entry.try_reserve(LINE_MAX)
    }

    /// The next record's lines are made anew (one of vlog's own came
    /// between).
    pub(super) fn forget(&mut self) {
        self.text_made = false;
        self.json_made = false;
    }

    pub(super) fn line(&mut self, form: Form, rec: &Record) -> &[u8] {
        if form == Form::Json {
            if !self.json_made {
                self.json.clear();
                render_json(
                    rec,
                    Some(sys::process_id()),
                    &mut self.clock,
                    &mut self.json,
                );
                self.json_made = true;
            }
            &self.json
        } else {
            if !self.text_made {
                self.text.clear();
                render_line(rec, &mut self.clock, &mut self.text);
                self.text_made = true;
            }
            &self.text
        }
    }
}
