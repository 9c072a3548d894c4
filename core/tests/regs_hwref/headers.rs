//! Reading NVIDIA's hwref headers: `#define` collection and a small evaluator for the
//! expressions they use (numbers, `+ - *`, parentheses, other defines, one-argument calls).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One `#define`: object-like (`param` None) or function-like with one parameter.
#[derive(Clone, Debug)]
pub struct Define {
    pub param: Option<String>,
    pub body: String,
    pub file: String,
}

/// The defines of a set of headers, first definition of a name winning.
#[derive(Default)]
pub struct Defines {
    pub map: HashMap<String, Vec<Define>>,
}

impl Defines {
    pub fn add_file(&mut self, path: &Path) {
        let text = fs::read_to_string(path)
            .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        // A define continued over lines (`\` at the end) is one line.
        let text = text.replace("\\\r\n", " ").replace("\\\n", " ");
        for line in strip_comments(&text).lines() {
            let Some(rest) = line.trim_start().strip_prefix("#define") else {
                continue;
            };
            let rest = rest.trim_start();
            let name_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..name_end];
            let after = &rest[name_end..];
            let (param, body) = if let Some(args) = after.strip_prefix('(') {
                let close = args.find(')').expect("function-like define without ')'");
                (
                    Some(args[..close].trim().to_string()),
                    args[close + 1..].trim(),
                )
            } else {
                (None, after.trim())
            };
            self.map.entry(name.to_string()).or_default().push(Define {
                param,
                body: body.to_string(),
                file: file.clone(),
            });
        }
    }

    pub fn load_dir(dir: &Path) -> Defines {
        let mut defines = Defines::default();
        let mut files: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|err| panic!("listing {}: {err}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "h"))
            .collect();
        files.sort();
        for file in files {
            defines.add_file(&file);
        }
        defines
    }

    /// The define `name` of the wanted kind (object-like or function-like), checking that
    /// repeated definitions agree.
    pub fn get(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String> {
        let Some(all) = self.map.get(name) else {
            return Ok(None);
        };
        let matching: Vec<&Define> = all
            .iter()
            .filter(|d| d.param.is_some() == function_like)
            .collect();
        if let Some(first) = matching.first()
            && let Some(other) = matching.iter().find(|d| d.body != first.body)
        {
            return Err(format!(
                "{name} defined differently in {} ({}) and {} ({})",
                first.file, first.body, other.file, other.body
            ));
        }
        Ok(matching.first().copied())
    }
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
            out.push(' ');
        } else if rest.starts_with("//") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The headers of one chip: its own directory first, then the chip-independent `nv_ref.h`.
pub struct ChipHeaders<'a> {
    pub own: Defines,
    pub common: &'a Defines,
}

impl ChipHeaders<'_> {
    pub fn get(&self, name: &str, function_like: bool) -> Result<Option<&Define>, String> {
        match self.own.get(name, function_like)? {
            Some(define) => Ok(Some(define)),
            None => self.common.get(name, function_like),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.own.map.contains_key(name) || self.common.map.contains_key(name)
    }

    /// Evaluates a C expression of numbers, `+ - *`, parentheses, defines and one-argument
    /// define calls.
    pub fn eval(&self, expr: &str, bindings: &[(&str, u64)], depth: u32) -> Result<u64, String> {
        if depth > 16 {
            return Err(format!("define nesting too deep at {expr:?}"));
        }
        let tokens = tokenize(expr)?;
        let mut parser = Parser {
            tokens,
            pos: 0,
            headers: self,
            bindings,
            depth,
        };
        let value = parser.sum()?;
        if parser.pos != parser.tokens.len() {
            return Err(format!("trailing tokens in {expr:?}"));
        }
        Ok(value)
    }

    /// The value of object-like define `name`.
    pub fn value_of(&self, name: &str, depth: u32) -> Result<u64, String> {
        let define = self
            .get(name, false)?
            .ok_or_else(|| format!("{name} is not defined"))?;
        self.eval(&define.body, &[], depth + 1)
    }

    /// The value of function-like define `name` at `arg`.
    pub fn call(&self, name: &str, arg: u64, depth: u32) -> Result<u64, String> {
        let define = self
            .get(name, true)?
            .ok_or_else(|| format!("{name}(i) is not defined"))?;
        let param = define.param.as_deref().unwrap_or("i");
        self.eval(&define.body, &[(param, arg)], depth + 1)
    }

    /// A field define `hi:lo` (each side an expression).
    pub fn field(&self, name: &str) -> Result<Option<(u64, u64)>, String> {
        let Some(define) = self.get(name, false)? else {
            return Ok(None);
        };
        let (hi, lo) = split_range(&define.body)
            .ok_or_else(|| format!("{name} = {:?} is not a hi:lo field", define.body))?;
        Ok(Some((self.eval(hi, &[], 1)?, self.eval(lo, &[], 1)?)))
    }
}

/// Splits `hi:lo` at a top-level colon.
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

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Number(u64),
    Ident(String),
    Punct(char),
}

fn tokenize(expr: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
            let value = if let Some(hex) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                u64::from_str_radix(hex, 16)
            } else {
                digits.parse()
            }
            .map_err(|_| format!("bad number {text:?} in {expr:?}"))?;
            tokens.push(Token::Number(value));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(Token::Ident(chars[start..i].iter().collect()));
        } else if "+-*()".contains(c) {
            tokens.push(Token::Punct(c));
            i += 1;
        } else {
            return Err(format!("unsupported character {c:?} in {expr:?}"));
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    headers: &'a ChipHeaders<'a>,
    bindings: &'a [(&'a str, u64)],
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Result<u64, String> {
        let mut value = self.product()?;
        loop {
            if self.eat('+') {
                value = value.wrapping_add(self.product()?);
            } else if self.eat('-') {
                value = value.wrapping_sub(self.product()?);
            } else {
                return Ok(value);
            }
        }
    }

    fn product(&mut self) -> Result<u64, String> {
        let mut value = self.atom()?;
        while self.eat('*') {
            value = value.wrapping_mul(self.atom()?);
        }
        Ok(value)
    }

    fn atom(&mut self) -> Result<u64, String> {
        match self.tokens.get(self.pos).cloned() {
            Some(Token::Number(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Token::Punct('(')) => {
                self.pos += 1;
                let value = self.sum()?;
                if !self.eat(')') {
                    return Err("missing ')'".into());
                }
                Ok(value)
            }
            Some(Token::Ident(name)) => {
                self.pos += 1;
                if let Some((_, value)) = self.bindings.iter().find(|(n, _)| *n == name) {
                    return Ok(*value);
                }
                if self.eat('(') {
                    let arg = self.sum()?;
                    if !self.eat(')') {
                        return Err(format!("missing ')' after {name}(..."));
                    }
                    self.headers.call(&name, arg, self.depth)
                } else {
                    self.headers.value_of(&name, self.depth)
                }
            }
            other => Err(format!("unexpected token {other:?}")),
        }
    }
}
