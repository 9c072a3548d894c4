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
//! Anything else is a reply nobody asked for.

use alloc::vec::Vec;

use nvbare_gsp::abi::RpcFunction;
use nvbare_gsp::rpc::commands::{Command, REPLY_ECHO_MAX};

/// What identifies the reply to one command sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Awaited {
    /// The command's function.
    pub function: RpcFunction,
    echo: [u8; REPLY_ECHO_MAX],
    echo_len: u8,
}

impl Awaited {
    /// Whether a reply of function `f` with `payload` answers this command.
    pub fn answered_by(&self, f: RpcFunction, payload: &[u8]) -> bool {
        let echo = &self.echo[..usize::from(self.echo_len)];
        self.function == f && payload.get(..echo.len()) == Some(echo)
    }
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
    async_pending: Vec<Awaited>,
    stale: Vec<Awaited>,
}

impl Outstanding {
    /// Records that `cmd` is being sent; the result names its reply.
    pub fn sent(&mut self, cmd: &Command) -> Awaited {
        let e = cmd.reply_echo();
        let mut echo = [0; REPLY_ECHO_MAX];
        let n = e.len().min(REPLY_ECHO_MAX);
        echo[..n].copy_from_slice(&e[..n]);
        Awaited {
            function: cmd.function,
            echo,
            // CAST: at most REPLY_ECHO_MAX (16).
            echo_len: n as u8,
        }
    }

    /// `a` was sent without waiting.
    pub fn push_async(&mut self, a: Awaited) {
        self.async_pending.push(a);
    }

    /// The wait for `a` ended without its reply: it is late when it comes.
    pub fn abandon(&mut self, a: Awaited) {
        self.stale.push(a);
    }

    /// Who the reply of function `f` with `payload` goes to, `want` being waited for.
    pub fn claim(&mut self, f: RpcFunction, payload: &[u8], want: Option<Awaited>) -> Claim {
        if let Some(i) = self.stale.iter().position(|s| s.answered_by(f, payload)) {
            self.stale.remove(i);
            return Claim::Late;
        }
        if let Some(i) = self
            .async_pending
            .iter()
            .position(|a| a.answered_by(f, payload))
        {
            self.async_pending.remove(i);
            return Claim::Async;
        }
        match want {
            Some(w) if w.answered_by(f, payload) => Claim::Wanted,
            _ => Claim::Unasked,
        }
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
}
