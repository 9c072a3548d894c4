//! Which command a reply answers.
//!
//! GSP-RM reads its command queue in order and answers each command in turn, so replies
//! come in the order the commands were sent; a reply names its function and echoes the
//! start of its command's payload ([`Command::reply_echo`]: the handles and class or control
//! command of an RM call). A reply is matched against, in this order:
//!
//! 1. the commands whose wait was abandoned (timed out, or ended by another error) and whose
//!    reply has not come: the oldest that it answers takes it as late;
//! 2. the commands sent without waiting ([`super::Rpc::send`]): their failure surfaces from
//!    the wait that sees it;
//! 3. the command being waited for.
//!
//! Anything else is a reply nobody asked for. Once a command is answered, every command sent
//! before it that is still unanswered never will be (its reply was lost or dropped by the
//! queue's checks): those entries are forgotten, so a lost reply cannot make a later call
//! with the same handles take the wrong answer. Abandoned entries are also forgotten after
//! a bound of time and beyond a count.

use alloc::vec::Vec;

use nvbare_gsp::abi::RpcFunction;
use nvbare_gsp::rpc::commands::{Command, REPLY_ECHO_MAX};

/// Abandoned commands remembered at most; older ones are forgotten first.
pub const STALE_CAPACITY: usize = 64;

/// What identifies the reply to one command sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Awaited {
    /// The command's function.
    pub function: RpcFunction,
    echo: [u8; REPLY_ECHO_MAX],
    echo_len: u8,
    /// Commands sent before this one (GSP-RM answers in this order).
    seq: u64,
}

impl Awaited {
    /// Whether a reply of function `f` with `payload` answers this command.
    pub fn answered_by(&self, f: RpcFunction, payload: &[u8]) -> bool {
        let echo = &self.echo[..usize::from(self.echo_len)];
        self.function == f && payload.get(..echo.len()) == Some(echo)
    }
}

/// A command whose wait was abandoned before its reply came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stale {
    awaited: Awaited,
    /// When the wait was abandoned (the platform clock's ns).
    since_ns: u64,
}

/// Who a reply goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A command whose wait was abandoned: the reply is late.
    Late,
    /// A command sent without waiting.
    Async,
    /// The command being waited for.
    Wanted,
    /// Nobody.
    Unasked,
}

/// The commands sent whose replies have not come.
#[derive(Debug, Default)]
pub struct Outstanding {
    sent: u64,
    async_pending: Vec<Awaited>,
    stale: Vec<Stale>,
}

impl Outstanding {
    /// Records that `cmd` is being sent; the result names its reply.
    pub fn sent(&mut self, cmd: &Command) -> Awaited {
        let e = cmd.reply_echo();
        let mut echo = [0; REPLY_ECHO_MAX];
        let n = e.len().min(REPLY_ECHO_MAX);
        echo[..n].copy_from_slice(&e[..n]);
        self.sent += 1;
        Awaited {
            function: cmd.function,
            echo,
            // CAST: at most REPLY_ECHO_MAX (16).
            echo_len: n as u8,
            seq: self.sent,
        }
    }

    /// `a` was sent without waiting.
    pub fn push_async(&mut self, a: Awaited) {
        self.async_pending.push(a);
    }

    /// The wait for `a` ended at `now_ns` without its reply: it is late when it comes.
    pub fn abandon(&mut self, a: Awaited, now_ns: u64) {
        if self.stale.len() >= STALE_CAPACITY {
            self.stale.remove(0);
        }
        self.stale.push(Stale {
            awaited: a,
            since_ns: now_ns,
        });
    }

    /// Forgets abandoned commands abandoned more than `age_ns` before `now_ns`.
    pub fn expire(&mut self, now_ns: u64, age_ns: u64) {
        self.stale
            .retain(|s| now_ns.saturating_sub(s.since_ns) <= age_ns);
    }

    /// Who the reply of function `f` with `payload` goes to, `want` being waited for.
    pub fn claim(&mut self, f: RpcFunction, payload: &[u8], want: Option<Awaited>) -> Claim {
        if let Some(i) = self
            .stale
            .iter()
            .position(|s| s.awaited.answered_by(f, payload))
        {
            let s = self.stale.remove(i);
            self.answered(s.awaited.seq);
            return Claim::Late;
        }
        if let Some(i) = self
            .async_pending
            .iter()
            .position(|a| a.answered_by(f, payload))
        {
            let a = self.async_pending.remove(i);
            self.answered(a.seq);
            return Claim::Async;
        }
        match want {
            Some(w) if w.answered_by(f, payload) => {
                self.answered(w.seq);
                Claim::Wanted
            }
            _ => Claim::Unasked,
        }
    }

    /// The command numbered `seq` was answered: those sent before it that are still
    /// unanswered never will be.
    fn answered(&mut self, seq: u64) {
        self.stale.retain(|s| {
            let keep = s.awaited.seq > seq;
            if !keep {
                log::debug!(
                    "GSP-RM answered a later command: the reply to {} abandoned earlier never \
                     came",
                    s.awaited.function
                );
            }
            keep
        });
        self.async_pending.retain(|a| {
            let keep = a.seq > seq;
            if !keep {
                // Not a warning: a command sent without waiting may get no reply at all.
                // OpenRM sends GSP_SET_SYSTEM_INFO and SET_REGISTRY through `_issueRpcAsync`
                // (vgpu/rpc.c) and never reads a reply to them; a reply that did come would
                // be logged as an "Unexpected RPC event" (kernel_gsp.c, _kgspProcessRpcEvent).
                log::debug!(
                    "GSP-RM answered a later command: the reply to {} sent without waiting \
                     never came",
                    a.function
                );
            }
            keep
        });
    }

    /// Abandoned commands remembered.
    #[cfg(test)]
    pub fn stale_len(&self) -> usize {
        self.stale.len()
    }

    /// Commands sent without waiting whose reply has not come.
    #[cfg(test)]
    pub fn async_len(&self) -> usize {
        self.async_pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(object: u32) -> Command {
        Command::rm_control(0xc1d0_0000, object, 0x2080_0a2a, &[0; 8]).unwrap()
    }

    fn reply(c: &Command) -> (RpcFunction, &[u8]) {
        (c.function, &c.payload)
    }

    #[test]
    fn a_reply_goes_to_the_call_whose_handles_it_echoes() {
        let mut o = Outstanding::default();
        let (a, b) = (control(0x10), control(0x11));
        let want = o.sent(&b);
        let (f, p) = reply(&a);
        assert_eq!(
            o.claim(f, p, Some(want)),
            Claim::Unasked,
            "another object's"
        );
        let (f, p) = reply(&b);
        assert_eq!(o.claim(f, p, Some(want)), Claim::Wanted);
    }

    #[test]
    fn a_reply_to_a_command_sent_without_waiting_comes_first() {
        let mut o = Outstanding::default();
        let c = control(0x10);
        let first = o.sent(&c);
        o.push_async(first);
        let want = o.sent(&c);
        let (f, p) = reply(&c);
        assert_eq!(o.claim(f, p, Some(want)), Claim::Async);
        assert_eq!(o.claim(f, p, Some(want)), Claim::Wanted);
        assert_eq!(o.async_len(), 0);
    }

    #[test]
    fn abandoned_commands_are_forgotten_once_a_later_one_is_answered_or_they_age() {
        let mut o = Outstanding::default();
        let (a, b) = (control(0x10), control(0x11));
        let lost = o.sent(&a);
        o.abandon(lost, 0);
        // B is answered: A's reply, which GSP-RM would have sent first, is lost.
        let want = o.sent(&b);
        let (f, p) = reply(&b);
        assert_eq!(o.claim(f, p, Some(want)), Claim::Wanted);
        assert_eq!(o.stale_len(), 0);
        // A again: its own reply is its answer, not a late one.
        let want = o.sent(&a);
        let (f, p) = reply(&a);
        assert_eq!(o.claim(f, p, Some(want)), Claim::Wanted);

        let late = o.sent(&a);
        o.abandon(late, 1_000);
        o.expire(2_000, 5_000);
        assert_eq!(o.stale_len(), 1, "still young");
        o.expire(10_000, 5_000);
        assert_eq!(o.stale_len(), 0, "aged out");
        for _ in 0..STALE_CAPACITY + 3 {
            let s = o.sent(&b);
            o.abandon(s, 0);
        }
        assert_eq!(o.stale_len(), STALE_CAPACITY, "bounded");
    }
}
