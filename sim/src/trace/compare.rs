//! The differences between two drivers' traces of the same simulated GPU (GPU 0 of each), as
//! stable keys that a list of explained differences can name:
//!
//! - `bar0-write-only WHO 0xOFFSET`: WHO wrote a BAR0 register the other never wrote;
//! - `bar0-read-only WHO 0xOFFSET`: WHO read a BAR0 register the other never read (it may
//!   write it: a wait for a write's completion is a read only one driver does);
//! - `bar0-poll-only WHO 0xOFFSET`: both read it, only WHO polled it (read it again with
//!   nothing but reads in between: a collapsed event of count ≥ 2);
//! - `cfg-write-only WHO 0xOFFSET/SIZE`, `cfg-read-only WHO 0xOFFSET/SIZE`: config space;
//! - `reset-only WHO`: WHO reset the function;
//! - `order NAME A=RESULT B=RESULT`: an [`OrderRule`] held in one trace and not in the other.
//!
//! Values are not part of any key: the addresses, tokens and message words two drivers write
//! legitimately differ. Offsets are; names (from [`RegisterNames`]) go into the detail text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::names::RegisterNames;
use super::{Event, Kind};

/// One side of an order rule: the first event of `kind` at `offset` whose value, masked with
/// `mask`, equals `value` (mask 0: any value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// What kind of access.
    pub kind: Kind,
    /// Its offset.
    pub offset: u32,
    /// Bits of the value that must match.
    pub mask: u32,
    /// What they must be.
    pub value: u32,
}

impl Marker {
    /// The first `kind` access of `offset`, whatever its value.
    pub const fn any(kind: Kind, offset: u32) -> Marker {
        Marker {
            kind,
            offset,
            mask: 0,
            value: 0,
        }
    }

    /// The first `kind` access of `offset` whose value has `value` in the bits of `mask`.
    pub const fn with(kind: Kind, offset: u32, mask: u32, value: u32) -> Marker {
        Marker {
            kind,
            offset,
            mask,
            value,
        }
    }

    fn matches(&self, e: &Event) -> bool {
        e.kind == self.kind && e.offset == self.offset && e.value & self.mask == self.value
    }
}

/// "`first` happens before `then`" (an ordering a boot must keep, with where it comes from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderRule {
    /// Short name (part of the key: no spaces).
    pub name: &'static str,
    /// What must come first.
    pub first: Marker,
    /// What must come after it.
    pub then: Marker,
}

/// How an order rule came out in one trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Both happened, in the rule's order.
    Held,
    /// Both happened, the other way round.
    Broken,
    /// `then` happened and `first` never did.
    Skipped,
    /// `then` never happened (nothing to order).
    NotApplicable,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Held => "held",
            Outcome::Broken => "broken",
            Outcome::Skipped => "skipped",
            Outcome::NotApplicable => "n/a",
        })
    }
}

impl OrderRule {
    /// How the rule came out in `events`.
    pub fn check(&self, events: &[Event]) -> Outcome {
        let first = events.iter().position(|e| self.first.matches(e));
        let then = events.iter().position(|e| self.then.matches(e));
        match (first, then) {
            (_, None) => Outcome::NotApplicable,
            (None, Some(_)) => Outcome::Skipped,
            (Some(a), Some(b)) if a < b => Outcome::Held,
            _ => Outcome::Broken,
        }
    }
}

/// One difference: its key and a line saying what it is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Difference {
    /// The stable key.
    pub key: String,
    /// The register's name, counts, values seen.
    pub detail: String,
}

/// What one trace (GPU 0) did to each offset.
#[derive(Default)]
struct Summary {
    /// BAR0 offset → values written (in order, distinct), count.
    writes: BTreeMap<u32, (Vec<u32>, u64)>,
    /// BAR0 offset → reads, and whether any was a poll.
    reads: BTreeMap<u32, (u64, bool)>,
    cfg_writes: BTreeMap<(u32, u32), u64>,
    cfg_reads: BTreeMap<(u32, u32), u64>,
    resets: u64,
}

fn summarize(events: &[Event]) -> Summary {
    let mut s = Summary::default();
    for e in events.iter().filter(|e| e.gpu == 0) {
        match e.kind {
            Kind::Bar0Write => {
                let w = s.writes.entry(e.offset).or_default();
                if !w.0.contains(&e.value) && w.0.len() < 4 {
                    w.0.push(e.value);
                }
                w.1 += e.count;
            }
            Kind::Bar0Read => {
                let r = s.reads.entry(e.offset).or_default();
                r.0 += e.count;
                r.1 |= e.count > 1;
            }
            Kind::CfgWrite => *s.cfg_writes.entry((e.offset, e.size)).or_default() += e.count,
            Kind::CfgRead => *s.cfg_reads.entry((e.offset, e.size)).or_default() += e.count,
            Kind::Reset => s.resets += e.count,
        }
    }
    s
}

fn only<K: Ord + Copy, V>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> Vec<K> {
    a.keys().filter(|k| !b.contains_key(k)).copied().collect()
}

/// The differences between trace `a` (called `names.0`) and trace `b` (`names.1`), with the
/// order `rules` checked in both.
pub fn differences(
    a: (&str, &[Event]),
    b: (&str, &[Event]),
    rules: &[OrderRule],
    regs: &RegisterNames,
) -> Vec<Difference> {
    let sides = [(a.0, summarize(a.1)), (b.0, summarize(b.1))];
    let name = |o: u32| regs.name(o).unwrap_or("(no hwref name)").to_string();
    let marker = |m: &Marker| {
        let n = match m.kind {
            Kind::CfgRead | Kind::CfgWrite => regs.config_name(m.offset),
            _ => regs.name(m.offset),
        };
        format!(
            "{} {:#x} ({})",
            m.kind.word(),
            m.offset,
            n.unwrap_or("no hwref name")
        )
    };
    let cfg_name = |o: u32| regs.config_name(o).unwrap_or("(no hwref name)").to_string();
    let mut out = Vec::new();
    for (i, (who, s)) in sides.iter().enumerate() {
        let other = &sides[1 - i].1;
        for o in only(&s.writes, &other.writes) {
            let (values, n) = &s.writes[&o];
            let vs: Vec<String> = values.iter().map(|v| format!("{v:#x}")).collect();
            out.push(Difference {
                key: format!("bar0-write-only {who} {o:#010x}"),
                detail: format!("{} written {n}× (values {})", name(o), vs.join(", ")),
            });
        }
        for (&o, &(n, polled)) in &s.reads {
            if !other.reads.contains_key(&o) {
                let written = if other.writes.contains_key(&o) {
                    " (the other only writes it)"
                } else {
                    ""
                };
                out.push(Difference {
                    key: format!("bar0-read-only {who} {o:#010x}"),
                    detail: format!(
                        "{} read {n}×{}{written}",
                        name(o),
                        if polled { ", polled" } else { "" }
                    ),
                });
            } else if polled && other.reads.get(&o).is_none_or(|&(_, p)| !p) {
                out.push(Difference {
                    key: format!("bar0-poll-only {who} {o:#010x}"),
                    detail: format!("{} read {n}× (polled)", name(o)),
                });
            }
        }
        for (o, size) in only(&s.cfg_writes, &other.cfg_writes) {
            out.push(Difference {
                key: format!("cfg-write-only {who} {o:#05x}/{size}"),
                detail: format!("{} written {}×", cfg_name(o), s.cfg_writes[&(o, size)]),
            });
        }
        for (o, size) in only(&s.cfg_reads, &other.cfg_reads) {
            out.push(Difference {
                key: format!("cfg-read-only {who} {o:#05x}/{size}"),
                detail: format!("{} read {}×", cfg_name(o), s.cfg_reads[&(o, size)]),
            });
        }
        if s.resets > 0 && other.resets == 0 {
            out.push(Difference {
                key: format!("reset-only {who}"),
                detail: format!("function-level reset {}×", s.resets),
            });
        }
    }
    let gpu0 = |ev: &[Event]| -> Vec<Event> { ev.iter().filter(|e| e.gpu == 0).cloned().collect() };
    let (ea, eb) = (gpu0(a.1), gpu0(b.1));
    for r in rules {
        let (oa, ob) = (r.check(&ea), r.check(&eb));
        if oa != ob {
            out.push(Difference {
                key: format!("order {} {}={oa} {}={ob}", r.name, a.0, b.0),
                detail: format!("{} before {}", marker(&r.first), marker(&r.then)),
            });
        }
    }
    out.sort();
    out
}

/// A list of explained differences: `KEY | reason` per line, `#` comments and blank lines
/// ignored.
#[derive(Clone, Debug, Default)]
pub struct Explained {
    reasons: BTreeMap<String, String>,
}

/// What checking differences against the explained list found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Differences no line explains (a failure).
    pub unexplained: Vec<Difference>,
    /// Explained keys that no longer occur (the difference went away: drop the line).
    pub stale: Vec<String>,
}

impl Explained {
    /// Parses the list; a line without ` | ` or with an empty key or reason is an error
    /// naming the line.
    pub fn parse(text: &str) -> Result<Explained, String> {
        let mut reasons = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once(" | ") {
                Some((k, r)) if !k.trim().is_empty() && !r.trim().is_empty() => {
                    if reasons
                        .insert(k.trim().to_string(), r.trim().to_string())
                        .is_some()
                    {
                        return Err(format!("line {}: {:?} is explained twice", n + 1, k.trim()));
                    }
                }
                _ => {
                    return Err(format!(
                        "line {}: expected `KEY | reason`, got {line:?}",
                        n + 1
                    ));
                }
            }
        }
        Ok(Explained { reasons })
    }

    /// The reason given for `key`.
    pub fn reason(&self, key: &str) -> Option<&str> {
        self.reasons.get(key).map(String::as_str)
    }

    /// Which of `diffs` nothing explains, and which explanations match nothing.
    pub fn check(&self, diffs: &[Difference]) -> Verdict {
        let present: BTreeSet<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        Verdict {
            unexplained: diffs
                .iter()
                .filter(|d| !self.reasons.contains_key(&d.key))
                .cloned()
                .collect(),
            stale: self
                .reasons
                .keys()
                .filter(|k| !present.contains(k.as_str()))
                .cloned()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, offset: u32, value: u32, count: u64) -> Event {
        Event {
            kind,
            gpu: 0,
            offset,
            size: 4,
            value,
            count,
            unit: "-",
        }
    }

    fn boot() -> Vec<Event> {
        vec![
            ev(Kind::CfgWrite, 4, 6, 1),
            ev(Kind::Bar0Read, 0xad00bc, 0, 40),
            ev(Kind::Bar0Read, 0xad00bc, 0xff, 1),
            ev(Kind::Bar0Read, 0xa00, 0x1b000000, 1),
            ev(Kind::Bar0Write, 0x8f2c00, 0, 1),
        ]
    }

    const RULES: &[OrderRule] = &[OrderRule {
        name: "fsp-ready-before-boot42",
        first: Marker::with(Kind::Bar0Read, 0xad00bc, 0xff, 0xff),
        then: Marker::any(Kind::Bar0Read, 0xa00),
    }];

    #[test]
    fn identical_boots_differ_in_nothing() {
        let regs = RegisterNames::none();
        assert_eq!(
            differences(("a", &boot()), ("b", &boot()), RULES, &regs),
            []
        );
    }

    #[test]
    fn a_planted_register_write_is_a_new_unexplained_difference() {
        let regs = RegisterNames::none();
        let explained = Explained::parse("# none yet\n").unwrap();
        let mut planted = boot();
        planted.push(ev(Kind::Bar0Write, 0x1704, 0x8000_0000, 1));
        let diffs = differences(("tinygrad", &boot()), ("nvbare", &planted), RULES, &regs);
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["bar0-write-only nvbare 0x00001704"]);
        let v = explained.check(&diffs);
        assert_eq!(v.unexplained, diffs);
        // Explained, it passes; the explanation goes stale once the write is gone.
        let explained =
            Explained::parse("bar0-write-only nvbare 0x00001704 | a planted write\n").unwrap();
        assert_eq!(explained.check(&diffs), Verdict::default());
        let none = differences(("tinygrad", &boot()), ("nvbare", &boot()), RULES, &regs);
        assert_eq!(
            explained.check(&none).stale,
            ["bar0-write-only nvbare 0x00001704"]
        );
    }

    #[test]
    fn polls_reads_config_and_order_are_told_apart() {
        let regs = RegisterNames::none();
        // The other driver reads BOOT_42 first, never waits for the FSP, reads config 0x2b8.
        let other = vec![
            ev(Kind::CfgRead, 0x2b8, 0, 1),
            ev(Kind::Bar0Read, 0xa00, 0x1b000000, 1),
            ev(Kind::Bar0Read, 0xad00bc, 0xff, 1),
            ev(Kind::CfgWrite, 4, 6, 1),
            ev(Kind::Bar0Write, 0x8f2c00, 0, 1),
        ];
        let diffs = differences(("a", &boot()), ("b", &other), RULES, &regs);
        let keys: Vec<&str> = diffs.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "bar0-poll-only a 0x00ad00bc",
                "cfg-read-only b 0x2b8/4",
                "order fsp-ready-before-boot42 a=held b=broken"
            ]
        );
    }

    #[test]
    fn malformed_explanations_are_refused_by_line() {
        assert!(
            Explained::parse("key without reason\n")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(
            Explained::parse("k | r\nk | again\n")
                .unwrap_err()
                .contains("twice")
        );
    }
}
