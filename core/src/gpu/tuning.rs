//! Launch tunings: the per-launch QMD choices that trade safety margins for latency
//! (`nvbare bench --tune`, `NVBARE_TUNE`), parsed from their text form and applied to each
//! freshly built QMD by the launch path (`launch.rs`) and recorded sequences (`finish.rs`).

/// Per-launch QMD choices that trade safety margins for latency; the defaults are the
/// conservative ones. Measurement tools set them (`nvbare bench --tune`, `--study` compares
/// them in one process, see BENCHMARKS.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchTuning {
    /// `CWD_MEMBAR_TYPE`: 0 none, 1 L1 + sysmembar (default), 3 L1 + GPU membar.
    pub membar: u64,
    /// Invalidate the SM's texture/data caches at every grid start (default).
    pub invalidate: bool,
    /// Store only the arena lines that differ from what was last written there (default);
    /// off stores every byte of every launch.
    pub mirror: bool,
    /// The completion release also waits for a front-end sysmembar; off by default, since the
    /// per-CTA `CWD_MEMBAR_TYPE` already makes the grid's writes visible (see
    /// `Qmd::set_release`).
    pub release_membar: bool,
    /// `CWD_MEMBAR_TYPE` of a recorded sequence's grids that have a next grid chained to them
    /// (`None`, the default: 3, the GPU-scope `L1_MEMBAR`, when `membar` is the sysmembar,
    /// else `membar`; see `finish.rs`); the last grid of a chain always has `membar`.
    /// A measuring knob: 3 (GPU membar) makes a grid's stores visible to the next grid but
    /// proves nothing for the host.
    pub chain_membar: Option<u64>,
    /// `CONSTANT_BUFFER_PREFETCH(0)` `PREFETCH_PRE`: bank 0 (the parameters) fetched before
    /// the grid starts, where the QMD has the field (V04_00 and later; default on).
    pub cbuf_prefetch: bool,
    /// How many latch IDs a recorded sequence's programmatic launches cycle through
    /// (`latchcycle=N`; `None`, the default: a new ID for every programmatic edge, see
    /// `finish.rs`). A measuring knob for how the GPU reuses latches.
    pub latch_cycle: Option<u32>,
    /// Raw QMD bit ranges `(hi, lo, value)` written last into every launch's QMD (knob
    /// `bHI_LO=V` (either order) or `bN=V`, up to [`RAW_FIELDS`]): a measuring knob for fields nvbare does
    /// not name, so one device run can try several; never set by default.
    pub raw: [Option<(u16, u16, u32)>; RAW_FIELDS],
}

/// How many raw QMD fields one tuning can override.
pub const RAW_FIELDS: usize = 6;

/// A tuning override that is not `membar=N`, `inval=0|1`, `mirror=0|1`, `relmembar=0|1`,
/// `chainmembar=N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "launch tuning: {0:?} is not membar=N, inval=0|1, mirror=0|1, relmembar=0|1, chainmembar=N, cbpre=0|1, latchcycle=N or bHI_LO=V"
)]
pub struct BadTuning<'a>(pub &'a str);

impl LaunchTuning {
    /// The conservative choices.
    pub const DEFAULT: Self = Self {
        membar: 1,
        invalidate: true,
        mirror: true,
        release_membar: false,
        chain_membar: None,
        cbuf_prefetch: true,
        latch_cycle: None,
        raw: [None; RAW_FIELDS],
    };

    /// The defaults with `spec`'s overrides applied (`membar=N,inval=0|1,mirror=0|1,
    /// relmembar=0|1,chainmembar=N,cbpre=0|1,latchcycle=N,bHI_LO=V`; a key alone means `=1`).
    pub fn parse(spec: &str) -> Result<Self, BadTuning<'_>> {
        let mut t = Self::DEFAULT;
        for kv in spec.split(',').filter(|kv| !kv.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, "1"));
            let n: u64 = v.parse().map_err(|_| BadTuning(kv))?;
            match k {
                "membar" => t.membar = n,
                "inval" => t.invalidate = n != 0,
                "mirror" => t.mirror = n != 0,
                "relmembar" => t.release_membar = n != 0,
                "chainmembar" => t.chain_membar = Some(n),
                "cbpre" => t.cbuf_prefetch = n != 0,
                "latchcycle" => {
                    t.latch_cycle = Some(
                        u32::try_from(n)
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or(BadTuning(kv))?,
                    )
                }
                _ => {
                    let (hi, lo) = k
                        .strip_prefix('b')
                        .and_then(|r| match r.split_once('_') {
                            Some((a, b)) => {
                                let (a, b) = (a.parse::<u16>().ok()?, b.parse::<u16>().ok()?);
                                Some((a.max(b), a.min(b)))
                            }
                            None => r.parse::<u16>().ok().map(|b| (b, b)),
                        })
                        .filter(|&(h, l)| {
                            h >= l && h - l < 32 && u32::from(h) <= nvbare_bits::BitRange::MAX_BIT
                        })
                        .ok_or(BadTuning(kv))?;
                    let value = u32::try_from(n).map_err(|_| BadTuning(kv))?;
                    let free = t
                        .raw
                        .iter_mut()
                        .find(|r| r.is_none())
                        .ok_or(BadTuning(kv))?;
                    *free = Some((hi, lo, value));
                }
            }
        }
        Ok(t)
    }
}

impl LaunchTuning {
    /// Sets what these choices decide in a freshly built QMD: the CTAs' membar, the cache
    /// invalidates at grid start, bank 0's prefetch (plain launches and recorded sequences
    /// alike; a sequence then changes what chaining needs, `finish.rs`).
    pub fn apply(&self, qmd: &mut crate::qmd::Qmd) -> Result<(), crate::qmd::QmdError> {
        let l = qmd.layout();
        qmd.set(l.cwd_membar_type, self.membar)?;
        if !self.invalidate {
            for f in l.invalidate_caches {
                qmd.set(f, 0)?;
            }
        }
        if self.cbuf_prefetch {
            qmd.prefetch_constant_buffer(0)?;
        }
        for &(hi, lo, value) in self.raw.iter().flatten() {
            qmd.set(
                crate::qmd::QmdField::new("raw tuning bits", u32::from(hi), u32::from(lo)),
                u64::from(value),
            )?;
        }
        Ok(())
    }
}

impl Default for LaunchTuning {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::{BadTuning, LaunchTuning};

    #[test]
    fn tunings_parse_from_the_cli_form_and_unknown_keys_are_errors() {
        assert_eq!(LaunchTuning::parse(""), Ok(LaunchTuning::DEFAULT));
        let t = LaunchTuning::parse("membar=3,inval=0,mirror=0,relmembar").unwrap();
        assert_eq!(
            (t.membar, t.invalidate, t.mirror, t.release_membar),
            (3, false, false, true)
        );
        assert_eq!(
            LaunchTuning::parse("chainmembar=3").map(|t| (t.membar, t.chain_membar)),
            Ok((1, Some(3)))
        );
        assert_eq!(LaunchTuning::parse("chain=1"), Err(BadTuning("chain=1")));
        assert_eq!(
            LaunchTuning::parse("cbpre=0").map(|t| t.cbuf_prefetch),
            Ok(false)
        );
        const { assert!(LaunchTuning::DEFAULT.cbuf_prefetch) };
        assert_eq!(LaunchTuning::parse("membar=x"), Err(BadTuning("membar=x")));
        assert_eq!(
            LaunchTuning::parse("b380=1,b602_603=0,b2432_2463=4294967294").map(|t| t.raw),
            Ok([
                Some((380, 380, 1)),
                Some((603, 602, 0)),
                Some((2463, 2432, 0xffff_fffe)),
                None,
                None,
                None
            ])
        );
        for bad in ["b1_40=0", "b4096=1", "bx=1", "b5=4294967296"] {
            assert_eq!(LaunchTuning::parse(bad), Err(BadTuning(bad)));
        }
        assert!(LaunchTuning::parse("b1,b2,b3,b4,b5,b6,b7").is_err());
    }

    /// A raw knob lands in the QMD's bits, after the named choices.
    #[test]
    fn raw_tuning_bits_are_written_into_the_qmd() {
        let mut q = crate::qmd::Qmd::new(crate::qmd::QmdVersion::V4);
        LaunchTuning::parse("b380=1,b2432_2463=4294967294")
            .unwrap()
            .apply(&mut q)
            .unwrap();
        assert_eq!(q.words()[380 / 32] >> (380 % 32) & 1, 1);
        assert_eq!(q.words()[2432 / 32], 0xffff_fffe);
        let mut small = crate::qmd::Qmd::new(crate::qmd::QmdVersion::V2);
        assert!(
            LaunchTuning::parse("b3000=1")
                .unwrap()
                .apply(&mut small)
                .is_err()
        );
    }
}
