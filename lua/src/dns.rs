//! `cothread.dns` (also `cothread.socket.dns`): LuaSocket's name resolution.
//!
//! Each lookup is a job on the thread pool (`work::call`): in a cothread,
//! only that cothread waits for it; elsewhere it blocks the caller, as
//! LuaSocket does. Results have LuaSocket's shapes; failures are `nil,
//! message`.

use std::ffi::{CStr, CString, c_int};

use crate::cfn;
use crate::engine::{Frame, Job, Payload};
use crate::lua::{Error, Lua, Reg, Ret, lua_Integer};
use crate::sys::{self, Addr, Query, ResolveError};
use crate::work;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.dns";

/// What a lookup found: a name (canonical, or the host of an address) and
/// addresses.
struct Answer {
    name: Option<CString>,
    addrs: Vec<Addr>,
}

type Lookup = Result<Answer, ResolveError>;

/// The string in frame slot `i`, if it is one, copied for a job.
fn string_arg(f: &Frame, i: c_int) -> Option<CString> {
    f.lua.to_cstr(f.at(i)).map(CStr::to_owned)
}

/// The job looking up `name`: numeric addresses as they are; `reverse`
/// also asks the host name of a numeric address.
fn lookup_job(name: CString, reverse: bool) -> Job {
    Box::new(move || -> Payload {
        let numeric = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: libc::AI_NUMERICHOST };
        let r: Lookup = match sys::lookup(Some(&name), None, numeric) {
            Ok(f) if reverse => match f.addrs.first().map(sys::reverse) {
                Some(Ok(host)) => Ok(Answer { name: Some(host), addrs: f.addrs }),
                Some(Err(e)) => Err(e),
                None => Err(ResolveError::Gai(libc::EAI_NONAME)),
            },
            Ok(f) => Ok(Answer { name: Some(name), addrs: f.addrs }),
            Err(_) => {
                let q = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: libc::AI_CANONNAME };
                sys::lookup(Some(&name), None, q).map(|f| Answer { name: f.canon.or(Some(name)), addrs: f.addrs })
            }
        };
        Box::new(r)
    })
}

/// The lookup in a job's payload.
fn answer<'a>(r: Result<&'a mut Payload, &'static CStr>) -> Result<&'a Answer, &'static CStr> {
    match r?.downcast_ref::<Lookup>() {
        Some(Ok(a)) if !a.addrs.is_empty() => Ok(a),
        Some(Ok(_)) | Some(Err(ResolveError::Gai(libc::EAI_NONAME | libc::EAI_NODATA))) => Err(c"host not found"),
        Some(Err(e)) => Err(sys::resolve_strerror(*e)),
        None => Err(c"cancelled"),
    }
}

/// What a resolver job of type `Result<T, ResolveError>` found, or the
/// message a call answers instead.
fn found<'a, T: 'static>(r: Result<&'a mut Payload, &'static CStr>) -> Result<&'a T, &'static CStr> {
    match r?.downcast_ref::<Result<T, ResolveError>>() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(sys::resolve_strerror(*e)),
        None => Err(c"cancelled"),
    }
}

/// `[-0, +1, m]` Pushes the numeric host of `a`.
fn push_ip(lua: &Lua, a: &Addr) {
    lua.push_owned(a.host_port().0);
}

/// `[-0, +1, m]` Pushes LuaSocket's resolved table `{name, alias = {}, ip =
/// {...}}`, IPv4 addresses first, without repeats.
fn push_resolved(lua: &mut Lua, a: &Answer) {
    lua.new_table(0, 3);
    lua.push_bytes(a.name.as_deref().map_or(&b""[..], CStr::to_bytes));
    lua.set_field(-2, c"name");
    lua.new_table(0, 0);
    lua.set_field(-2, c"alias");
    lua.new_table(0, 0); // resolved ips
    let mut n = 0;
    for fam in [libc::AF_INET, libc::AF_INET6] {
        for (i, addr) in a.addrs.iter().enumerate() {
            let repeated = a.addrs[..i].iter().any(|b| b.host_port().0 == addr.host_port().0);
            if addr.family() == fam && !repeated {
                push_ip(lua, addr);
                n += 1;
                lua.set_index(-2, n);
            }
        }
    }
    lua.set_field(-2, c"ip");
}

/// Pushes `resolved[field], resolved` for a finished lookup; its failure
/// else.
fn push_found(lua: &mut Lua, r: Result<&mut Payload, &'static CStr>, field: &CStr) -> c_int {
    match answer(r) {
        Ok(a) => {
            push_resolved(lua, a); // resolved
            lua.get_field(-1, field); // resolved value
            if field == c"ip" {
                lua.get_index(-1, 1); // resolved ips ip
                lua.replace(-2); // resolved ip
            }
            lua.insert(-2); // value resolved
            2
        }
        Err(m) => lua.fail(m),
    }
}

fn resolve_done<const REVERSE: bool>(lua: &mut Lua, _base: c_int, r: Result<&mut Payload, &'static CStr>) -> c_int {
    push_found(lua, r, if REVERSE { c"name" } else { c"ip" })
}

cfn!(toip = resolve_body::<false>);
cfn!(tohostname = resolve_body::<true>);

/// `dns.toip(name)`: the first address of `name` (IPv4 if it has one) and
/// the resolved table `{name = canonical, alias = {}, ip = {...}}`.
/// `dns.tohostname(address)` (`REVERSE`): the host name of an address (or
/// the canonical name of a name) and the resolved table.
fn resolve_body<const REVERSE: bool>(lua: &mut Lua) -> Ret {
    lua.check_bytes(1)?;
    lua.set_top(1);
    work::call(lua, |f| lookup_job(string_arg(f, 1).unwrap_or_default(), REVERSE), resolve_done::<REVERSE>)
}

fn getaddrinfo_done(lua: &mut Lua, _base: c_int, r: Result<&mut Payload, &'static CStr>) -> c_int {
    let a = match found::<sys::Found>(r) {
        Ok(a) => a,
        Err(m) => return lua.fail(m),
    };
    lua.new_table(a.addrs.len() as c_int, 0);
    for (i, addr) in a.addrs.iter().enumerate() {
        lua.new_table(0, 2);
        lua.push_bytes(if addr.family() == libc::AF_INET6 { b"inet6" } else { b"inet" });
        lua.set_field(-2, c"family");
        push_ip(lua, addr);
        lua.set_field(-2, c"addr");
        lua.set_index(-2, i as lua_Integer + 1);
    }
    1
}

cfn!(getaddrinfo = getaddrinfo_body);

/// `dns.getaddrinfo(name)`: the addresses of `name`, a list of `{family =
/// "inet" | "inet6", addr = ip}`.
fn getaddrinfo_body(lua: &mut Lua) -> Ret {
    lua.check_bytes(1)?;
    lua.set_top(1);
    let make = |f: &Frame| -> Job {
        let name = string_arg(f, 1).unwrap_or_default();
        Box::new(move || -> Payload {
            let q = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: 0 };
            Box::new(sys::lookup(Some(&name), None, q))
        })
    };
    work::call(lua, make, getaddrinfo_done)
}

/// What `getnameinfo` found: a host name per address, and the service.
type NameInfo = (Vec<CString>, CString);

fn getnameinfo_done(lua: &mut Lua, base: c_int, r: Result<&mut Payload, &'static CStr>) -> c_int {
    let (at1, at2) = (base + 1, base + 2);
    let (hosts, serv) = match found::<NameInfo>(r) {
        Ok(v) => v,
        Err(m) => return lua.fail(m),
    };
    let want_host = !lua.is_nil(at1);
    lua.new_table(if want_host { hosts.len() as c_int } else { 0 }, 0);
    if want_host {
        for (i, h) in hosts.iter().enumerate() {
            lua.push_bytes(h.to_bytes());
            lua.set_index(-2, i as lua_Integer + 1);
        }
    }
    if lua.is_nil(at2) {
        return 1;
    }
    lua.push_bytes(serv.to_bytes());
    2
}

cfn!(getnameinfo = getnameinfo_body);

/// `dns.getnameinfo([host [, service]])`: for each address of `host` (with
/// `service`), its host name as `getnameinfo` gives it (a list), and the
/// name of `service` (when given). Both nil raises.
fn getnameinfo_body(lua: &mut Lua) -> Ret {
    let given = |arg| if lua.is_nil(arg) { Ok(false) } else { lua.check_bytes(arg).map(|_| true) };
    if !given(1)? && !given(2)? {
        return Err(Error::msg(c"host and serv cannot be both nil"));
    }
    lua.set_top(2);
    let make = |f: &Frame| -> Job {
        let (host, serv) = (string_arg(f, 1), string_arg(f, 2));
        Box::new(move || -> Payload {
            let q = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: 0 };
            let r: Result<NameInfo, ResolveError> = sys::lookup(host.as_deref(), serv.as_deref(), q).map(|f| {
                let mut hosts = Vec::new();
                let mut service = CString::default();
                for a in &f.addrs {
                    let (h, s) = sys::name_info(a, host.is_some(), serv.is_some());
                    hosts.push(h);
                    service = s;
                }
                (hosts, service)
            });
            Box::new(r)
        })
    };
    work::call(lua, make, getnameinfo_done)
}

cfn!(gethostname = gethostname_body);

/// `dns.gethostname()`: this machine's host name.
fn gethostname_body(lua: &mut Lua) -> Ret {
    match sys::hostname() {
        Ok(name) => {
            lua.push_bytes(name.to_bytes());
            Ok(1)
        }
        Err(e) => Ok(lua.fail(sys::strerror(e))),
    }
}

const FUNCTIONS: &[Reg] = &[
    (c"toip", toip),
    (c"tohostname", tohostname),
    (c"getaddrinfo", getaddrinfo),
    (c"getnameinfo", getnameinfo),
    (c"gethostname", gethostname),
];

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
pub fn push(lua: &mut Lua) {
    lua.push_functions_once(MODULE, FUNCTIONS);
}
