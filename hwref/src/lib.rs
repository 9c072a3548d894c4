//! nvbare-hwref: the one C-header reader that nvbare's checks against NVIDIA's headers share
//! (core's register and method checks, gsp's RM constant checks, mmu's page-table field
//! checks): `#define` collection from files or directories, and an evaluator for the integer
//! expressions the headers write (`(0x10U)`, `(1*32+20+11)`, `(A << 4) | BIT(3)`,
//! `NV_PFB(i)` calls, `hi:lo` ranges).
//!
//! It is a test-only (dev-dependency) crate, std, depending on nothing: the checks must not
//! share code with what they check, and `gsp` and `mmu` depend on nothing of ours.
//!
//! Where a name is defined more than once, [`Repeats`] says what counts: the first definition
//! (the way the C preprocessor would see one include order), or all of them, which must
//! agree (for headers of different chips or files loaded together).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One `#define`: object-like (`param` None) or function-like with one parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Define {
    /// The parameter of a function-like macro.
    pub param: Option<String>,
    /// The body, comments and line continuations removed, trimmed.
    pub body: String,
    /// The file it came from (its name), for messages.
    pub file: String,
}

/// What a name defined more than once means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Repeats {
    /// Every definition of a name (of the kind asked for) must have the same body.
    #[default]
    MustAgree,
    /// The first definition loaded wins.
    FirstWins,
}

/// The defines of a set of headers.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    map: HashMap<String, Vec<Define>>,
    repeats: Repeats,
}

/// Removes `/* */` comments (keeping the line structure, so a comment never joins two
/// lines) and `//` comments.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            match after.find("*/") {
                Some(end) => {
                    out.push(' ');
                    out.extend(after[..end].matches('\n').map(|_| '\n'));
                    rest = &after[end + 2..];
                }
                None => rest = "",
            }
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

impl Headers {
    /// No defines yet; repeated names must agree.
    pub fn new() -> Self {
        Self::default()
    }

    /// No defines yet; the first definition of a name wins.
    pub fn first_wins() -> Self {
        Self {
            repeats: Repeats::FirstWins,
            ..Self::default()
        }
    }

    /// Adds the `#define`s of `text` (from `file`).
    pub fn add_text(&mut self, text: &str, file: &str) {
        let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
        for line in strip_comments(&joined).lines() {
            let Some(rest) = line.trim_start().strip_prefix('#').map(str::trim_start) else {
                continue;
            };
            let Some(rest) = rest.strip_prefix("define") else {
                continue;
            };
            if !rest.starts_with([' ', '\t']) {
                continue;
            }
            let rest = rest.trim_start();
            let name_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, after) = rest.split_at(name_end);
            let (param, body) = match after.strip_prefix('(') {
                Some(args) => match args.find(')') {
                    Some(close) => (Some(args[..close].trim().to_string()), &args[close + 1..]),
                    None => continue,
                },
                None => (None, after),
            };
            self.map.entry(name.to_string()).or_default().push(Define {
                param,
                body: body.trim().to_string(),
                file: file.to_string(),
            });
        }
    }

    /// Adds the defines of the header at `path`.
    pub fn add_file(&mut self, path: &Path) -> io::Result<()> {
        let text = fs::read_to_string(path)?;
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into(),
        );
        self.add_text(&text, &file);
        Ok(())
    }

    /// Adds every `*.h` under `dir` (in name order; into subdirectories when `recursive`).
    pub fn add_dir(&mut self, dir: &Path, recursive: bool) -> io::Result<()> {
        let mut files = Vec::new();
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d)? {
                let path = e?.path();
                if path.is_dir() {
                    if recursive {
                        dirs.push(path);
                    }
                } else if path.extension().is_some_and(|x| x == "h") {
                    files.push(path);
                }
            }
        }
        files.sort();
        for f in files {
            self.add_file(&f)?;
        }
        Ok(())
    }

    /// Every definition of `name`, in load order.
    pub fn definitions(&self, name: &str) -> &[Define] {
        self.map.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether `name` is defined (either kind).
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// Every defined name (in no particular order).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

/// Where an evaluation looks names up: one set of headers, or a chip's own headers in front of
/// common ones ([`Layered`]).
pub trait Lookup {
    /// The definition of `name` of the kind asked for (function-like or object-like).
    fn define(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String>;

    /// Evaluates a C integer expression, `bindings` naming parameters.
    fn eval(&self, expr: &str, bindings: &[(&str, u64)]) -> Result<u64, String>
    where
        Self: Sized,
    {
        eval_at(self, expr, bindings, 0)
    }

    /// The value of object-like define `name`.
    fn value(&self, name: &str) -> Result<u64, String>
    where
        Self: Sized,
    {
        value_at(self, name, 0)
    }

    /// The value of function-like define `name` at `arg`.
    fn call(&self, name: &str, arg: u64) -> Result<u64, String>
    where
        Self: Sized,
    {
        call_at(self, name, arg, 0)
    }

    /// A field define `hi:lo` (each side an expression); `None` when `name` is not defined.
    fn field(&self, name: &str) -> Result<Option<(u64, u64)>, String>
    where
        Self: Sized,
    {
        let Some(d) = self.define(name, false)? else {
            return Ok(None);
        };
        range(self, &d.body, &[])
            .map(Some)
            .map_err(|e| format!("{name}: {e}"))
    }
}

impl Lookup for Headers {
    fn define(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String> {
        let mut matching = self
            .definitions(name)
            .iter()
            .filter(|d| d.param.is_some() == function_like);
        let Some(first) = matching.next() else {
            return Ok(None);
        };
        if self.repeats == Repeats::MustAgree
            && let Some(other) = matching.find(|d| d.body != first.body)
        {
            return Err(format!(
                "{name} defined differently in {} ({}) and {} ({})",
                first.file, first.body, other.file, other.body
            ));
        }
        Ok(Some(first))
    }
}

/// A chip's own headers in front of common ones (`nv_ref.h`).
#[derive(Clone, Copy, Debug)]
pub struct Layered<'a> {
    /// Looked in first.
    pub own: &'a Headers,
    /// Looked in when `own` lacks the name.
    pub common: &'a Headers,
}

impl Lookup for Layered<'_> {
    fn define(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String> {
        match self.own.define(name, function_like)? {
            Some(d) => Ok(Some(d)),
            None => self.common.define(name, function_like),
        }
    }
}

/// Splits `hi:lo` at its top-level colon.
pub fn split_range(body: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (at, c) in body.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ':' if depth == 0 => return Some((&body[..at], &body[at + 1..])),
            _ => {}
        }
    }
    None
}

/// The `(hi, lo)` of a range body `hi:lo`, each side an expression over `bindings`.
pub fn range(l: &impl Lookup, body: &str, bindings: &[(&str, u64)]) -> Result<(u64, u64), String> {
    let (hi, lo) = split_range(body).ok_or_else(|| format!("{body:?} is not hi:lo"))?;
    Ok((eval_at(l, hi, bindings, 0)?, eval_at(l, lo, bindings, 0)?))
}

/// Where the reference headers are: `$NVBARE_REFERENCE`, else `shared/reference` beside the
/// checkout (two levels above a crate's manifest directory).
pub fn reference_root(manifest_dir: &str) -> PathBuf {
    match std::env::var_os("NVBARE_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(manifest_dir).join("../../shared/reference"),
    }
}

const MAX_DEPTH: u32 = 32;

fn value_at(l: &impl Lookup, name: &str, depth: u32) -> Result<u64, String> {
    let d = l
        .define(name, false)?
        .ok_or_else(|| format!("{name} is not defined"))?;
    eval_at(l, &d.body, &[], depth + 1)
}

fn call_at(l: &impl Lookup, name: &str, arg: u64, depth: u32) -> Result<u64, String> {
    let d = l
        .define(name, true)?
        .ok_or_else(|| format!("{name}(i) is not defined"))?;
    let param = d.param.as_deref().unwrap_or("i");
    eval_at(l, &d.body, &[(param, arg)], depth + 1)
}

fn eval_at(
    l: &impl Lookup,
    expr: &str,
    bindings: &[(&str, u64)],
    depth: u32,
) -> Result<u64, String> {
    if depth > MAX_DEPTH {
        return Err(format!("macro nesting too deep at {expr:?}"));
    }
    let tokens = tokenize(expr)?;
    let mut p = Parser {
        tokens: &tokens,
        pos: 0,
        lookup: l,
        bindings,
        depth,
    };
    let v = p.or()?;
    if p.pos != tokens.len() {
        return Err(format!("trailing tokens in {expr:?}"));
    }
    Ok(v)
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(u64),
    Ident(String),
    Op(&'static str),
}

fn tokenize(s: &str) -> Result<Vec<Token>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let lit = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let v = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => lit.parse(),
            };
            out.push(Token::Num(
                v.map_err(|e| format!("bad number {lit:?} in {s:?}: {e}"))?,
            ));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token::Ident(s[start..i].to_string()));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let op = match two {
                "<<" => "<<",
                ">>" => ">>",
                _ => match c {
                    '(' => "(",
                    ')' => ")",
                    '+' => "+",
                    '-' => "-",
                    '*' => "*",
                    '/' => "/",
                    '|' => "|",
                    '&' => "&",
                    '^' => "^",
                    '~' => "~",
                    _ => return Err(format!("unsupported character {c:?} in {s:?}")),
                },
            };
            i += op.len();
            out.push(Token::Op(op));
        }
    }
    Ok(out)
}

struct Parser<'a, L> {
    tokens: &'a [Token],
    pos: usize,
    lookup: &'a L,
    bindings: &'a [(&'a str, u64)],
    depth: u32,
}

impl<L: Lookup> Parser<'_, L> {
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.tokens.get(self.pos), Some(Token::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("expected {op:?}"))
        }
    }

    /// C precedence, loosest first: `|`, `^`, `&`, shifts, `+ -`, `* /`, unary.
    fn or(&mut self) -> Result<u64, String> {
        let mut v = self.xor()?;
        while self.eat("|") {
            v |= self.xor()?;
        }
        Ok(v)
    }

    fn xor(&mut self) -> Result<u64, String> {
        let mut v = self.and()?;
        while self.eat("^") {
            v ^= self.and()?;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<u64, String> {
        let mut v = self.shift()?;
        while self.eat("&") {
            v &= self.shift()?;
        }
        Ok(v)
    }

    fn shift(&mut self) -> Result<u64, String> {
        let mut v = self.sum()?;
        loop {
            if self.eat("<<") {
                let n = self.sum()?;
                v = v
                    .checked_shl(u32::try_from(n).map_err(|_| "shift too wide")?)
                    .ok_or("shift too wide")?;
            } else if self.eat(">>") {
                let n = self.sum()?;
                v = v
                    .checked_shr(u32::try_from(n).map_err(|_| "shift too wide")?)
                    .ok_or("shift too wide")?;
            } else {
                return Ok(v);
            }
        }
    }

    fn sum(&mut self) -> Result<u64, String> {
        let mut v = self.product()?;
        loop {
            if self.eat("+") {
                v = v.wrapping_add(self.product()?);
            } else if self.eat("-") {
                v = v.wrapping_sub(self.product()?);
            } else {
                return Ok(v);
            }
        }
    }

    fn product(&mut self) -> Result<u64, String> {
        let mut v = self.unary()?;
        loop {
            if self.eat("*") {
                v = v.wrapping_mul(self.unary()?);
            } else if self.eat("/") {
                v = v.checked_div(self.unary()?).ok_or("division by zero")?;
            } else {
                return Ok(v);
            }
        }
    }

    fn unary(&mut self) -> Result<u64, String> {
        if self.eat("-") {
            Ok(self.unary()?.wrapping_neg())
        } else if self.eat("~") {
            Ok(!self.unary()?)
        } else if self.eat("+") {
            self.unary()
        } else {
            self.atom()
        }
    }

    fn atom(&mut self) -> Result<u64, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Token::Op("(")) => {
                self.pos += 1;
                let v = self.or()?;
                self.expect(")")?;
                Ok(v)
            }
            Some(Token::Ident(name)) => {
                self.pos += 1;
                if let Some((_, v)) = self.bindings.iter().find(|(n, _)| *n == name) {
                    return Ok(*v);
                }
                if self.eat("(") {
                    let arg = self.or()?;
                    self.expect(")")?;
                    if self.lookup.define(&name, true)?.is_none()
                        && (name == "BIT" || name == "NVBIT")
                    {
                        return 1u64
                            .checked_shl(u32::try_from(arg).map_err(|_| "BIT too wide")?)
                            .ok_or_else(|| format!("BIT({arg}) too wide"));
                    }
                    call_at(self.lookup, &name, arg, self.depth)
                } else {
                    value_at(self.lookup, &name, self.depth)
                }
            }
            other => Err(format!("unexpected {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(text: &str) -> Headers {
        let mut h = Headers::new();
        h.add_text(text, "t.h");
        h
    }

    #[test]
    fn evaluator_handles_the_header_idioms() {
        let h = headers(
            "#define A (0x10U)\n#define B A /* c */\n#define C (B << 4) | 0x1\n#define F 7:4\n\
             #define G BIT(3)\n#define H \\\n  (A + 2)\n#define M(x) ((x)*0x100+0x20)\n\
             #define R (1*32+20+11):(35-3)\n#define K (~0 & 0xff) ^ 0x0f\n",
        );
        assert_eq!(h.value("B"), Ok(0x10));
        assert_eq!(h.value("C"), Ok(0x101));
        assert_eq!(h.value("G"), Ok(8));
        assert_eq!(h.value("H"), Ok(0x12));
        assert_eq!(h.value("K"), Ok(0xf0));
        assert_eq!(h.field("F"), Ok(Some((7, 4))));
        assert_eq!(h.field("R"), Ok(Some((63, 32))));
        assert_eq!(h.call("M", 3), Ok(0x320));
        assert_eq!(h.eval("M(2) + A", &[]), Ok(0x230));
        assert_eq!(h.eval("i * 4 + 1", &[("i", 5)]), Ok(21));
        assert!(h.value("M").is_err(), "function-like macros are not values");
        assert!(h.value("NOPE").is_err());
        assert_eq!(h.field("NOPE"), Ok(None));
    }

    #[test]
    fn repeated_names_must_agree_unless_the_first_wins() {
        let text = "#define X 1\n#define X 2\n#define Y 3\n";
        let h = headers(text);
        assert!(h.value("X").unwrap_err().contains("defined differently"));
        assert_eq!(h.value("Y"), Ok(3));
        let mut f = Headers::first_wins();
        f.add_text(text, "t.h");
        assert_eq!(f.value("X"), Ok(1));
    }

    #[test]
    fn layered_lookup_prefers_the_chips_own_headers() {
        let own = headers("#define NV_A 5\n#define NV_B (NV_C + 1)\n");
        let common = headers("#define NV_A 9\n#define NV_C 10\n");
        let l = Layered {
            own: &own,
            common: &common,
        };
        assert_eq!(l.value("NV_A"), Ok(5));
        assert_eq!(l.value("NV_B"), Ok(11));
    }

    #[test]
    fn comments_never_join_lines_and_other_directives_are_ignored() {
        let h = headers(
            "#define A 1 /* a\n b */\n#define B 2 // x\n#if 0\n#  define  C   3\n#defineX 4\n",
        );
        assert_eq!(h.value("A"), Ok(1));
        assert_eq!(h.value("B"), Ok(2));
        assert_eq!(h.value("C"), Ok(3));
        assert!(!h.contains("X") && !h.contains("defineX"));
    }
}
