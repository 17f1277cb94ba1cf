//! `cothread.dns` (also `cothread.socket.dns`): LuaSocket's name resolution.
//!
//! Each lookup is a job on the thread pool (`work::call`): in a cothread,
//! only that cothread waits for it; elsewhere it blocks the caller, as
//! LuaSocket does. Results have LuaSocket's shapes; failures are `nil,
//! message`.

use std::ffi::{CStr, CString, c_int};

use crate::engine::{Frame, Job, Payload};
use crate::raw::{self, L, ffi};
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

/// The name in frame slot 1 (a string: checked by the function).
unsafe fn name_arg(f: &Frame) -> &CStr {
    // SAFETY: slot 1 holds a string (checked), which stays there.
    unsafe { CStr::from_ptr(ffi::lua_tolstring(f.l, f.at(1), std::ptr::null_mut())) }
}

/// The job looking up `name`: numeric addresses as they are; `reverse`
/// also asks the host name of a numeric address.
fn lookup_job(name: &CStr, reverse: bool) -> Job {
    let name = name.to_owned();
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

/// `[-0, +1, m]` Pushes the numeric host of `a`.
unsafe fn push_ip(l: L, a: &Addr) {
    let (host, _) = a.host_port();
    // SAFETY: valid state; `host` is dropped right after (a memory error
    // here would leak it, as in `socket::push_addr`).
    unsafe { ffi::lua_pushlstring(l, host.as_ptr().cast(), host.len()) };
}

/// `[-0, +1, m]` Pushes LuaSocket's resolved table `{name, alias = {}, ip =
/// {...}}`, IPv4 addresses first, without repeats.
unsafe fn push_resolved(l: L, a: &Answer) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 4);
        ffi::lua_createtable(l, 0, 3);
        match &a.name {
            Some(n) => drop(ffi::lua_pushstring(l, n.as_ptr())),
            None => ffi::lua_pushliteral(l, c""),
        }
        ffi::lua_setfield(l, -2, c"name".as_ptr());
        ffi::lua_newtable(l);
        ffi::lua_setfield(l, -2, c"alias".as_ptr());
        ffi::lua_newtable(l); // resolved ips
        let mut n = 0;
        for fam in [libc::AF_INET, libc::AF_INET6] {
            for (i, addr) in a.addrs.iter().enumerate() {
                let repeated = a.addrs[..i].iter().any(|b| b.host_port().0 == addr.host_port().0);
                if addr.family() == fam && !repeated {
                    push_ip(l, addr);
                    n += 1;
                    ffi::lua_rawseti(l, -2, n);
                }
            }
        }
        ffi::lua_setfield(l, -2, c"ip".as_ptr());
    }
}

unsafe fn toip_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call`: a step's slots on `f.l`.
    unsafe {
        let l = f.l;
        match answer(r) {
            Ok(a) => {
                push_resolved(l, a); // resolved
                ffi::lua_getfield(l, -1, c"ip".as_ptr()); // resolved ips
                ffi::lua_rawgeti(l, -1, 1); // resolved ips ip
                ffi::lua_replace(l, -2); // resolved ip
                ffi::lua_rotate(l, -2, 1); // ip resolved
                2
            }
            Err(m) => raw::push_fail(l, m),
        }
    }
}

/// `dns.toip(name)`: the first address of `name` (IPv4 if it has one) and
/// the resolved table `{name = canonical, alias = {}, ip = {...}}`.
unsafe extern "C-unwind" fn toip(l: L) -> c_int {
    // SAFETY: a function of the module; the name stays at index 1.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        ffi::lua_settop(l, 1);
        work::call(l, |f| lookup_job(name_arg(f), false), toip_done)
    }
}

unsafe fn tohostname_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call`: a step's slots on `f.l`.
    unsafe {
        let l = f.l;
        match answer(r) {
            Ok(a) => {
                push_resolved(l, a);
                ffi::lua_getfield(l, -1, c"name".as_ptr());
                ffi::lua_rotate(l, -2, 1); // name resolved
                2
            }
            Err(m) => raw::push_fail(l, m),
        }
    }
}

/// `dns.tohostname(address)`: the host name of an address (or the canonical
/// name of a name) and the resolved table.
unsafe extern "C-unwind" fn tohostname(l: L) -> c_int {
    // SAFETY: a function of the module; the address stays at index 1.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        ffi::lua_settop(l, 1);
        work::call(l, |f| lookup_job(name_arg(f), true), tohostname_done)
    }
}

unsafe fn getaddrinfo_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call`: a step's slots on `f.l`; the answer
    // is borrowed from the payload, which outlives the pushes.
    unsafe {
        let l = f.l;
        let a = match r.map(|r| r.downcast_ref::<Result<sys::Found, ResolveError>>()) {
            Ok(Some(Ok(f))) => f,
            Ok(Some(Err(e))) => return raw::push_fail(l, sys::resolve_strerror(*e)),
            Ok(None) => return raw::push_fail(l, c"cancelled"),
            Err(m) => return raw::push_fail(l, m),
        };
        raw::check_stack(l, 4);
        ffi::lua_createtable(l, a.addrs.len() as c_int, 0);
        for (i, addr) in a.addrs.iter().enumerate() {
            ffi::lua_createtable(l, 0, 2);
            let fam = if addr.family() == libc::AF_INET6 { c"inet6" } else { c"inet" };
            ffi::lua_pushstring(l, fam.as_ptr());
            ffi::lua_setfield(l, -2, c"family".as_ptr());
            push_ip(l, addr);
            ffi::lua_setfield(l, -2, c"addr".as_ptr());
            ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
        }
        1
    }
}

/// `dns.getaddrinfo(name)`: the addresses of `name`, a list of `{family =
/// "inet" | "inet6", addr = ip}`.
unsafe extern "C-unwind" fn getaddrinfo(l: L) -> c_int {
    // SAFETY: a function of the module; the name stays at index 1.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        ffi::lua_settop(l, 1);
        let make = |f: &Frame| -> Job {
            let name = name_arg(f).to_owned();
            Box::new(move || -> Payload {
                let q = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: 0 };
                Box::new(sys::lookup(Some(&name), None, q))
            })
        };
        work::call(l, make, getaddrinfo_done)
    }
}

/// What `getnameinfo` found: a host name per address, and the service.
type NameInfo = Result<(Vec<CString>, CString), ResolveError>;

unsafe fn getnameinfo_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call` (frame: host at 1, service at 2).
    unsafe {
        let l = f.l;
        let (hosts, serv) = match r.map(|r| r.downcast_ref::<NameInfo>()) {
            Ok(Some(Ok(f))) => f,
            Ok(Some(Err(e))) => return raw::push_fail(l, sys::resolve_strerror(*e)),
            Ok(None) => return raw::push_fail(l, c"cancelled"),
            Err(m) => return raw::push_fail(l, m),
        };
        raw::check_stack(l, 3);
        let want_host = ffi::lua_isnoneornil(l, f.at(1)) == 0;
        ffi::lua_createtable(l, if want_host { hosts.len() as c_int } else { 0 }, 0);
        if want_host {
            for (i, h) in hosts.iter().enumerate() {
                ffi::lua_pushstring(l, h.as_ptr());
                ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
            }
        }
        if ffi::lua_isnoneornil(l, f.at(2)) != 0 {
            return 1;
        }
        ffi::lua_pushstring(l, serv.as_ptr());
        2
    }
}

/// `dns.getnameinfo([host [, service]])`: for each address of `host` (with
/// `service`), its host name as `getnameinfo` gives it (a list), and the
/// name of `service` (when given). Both nil raises.
unsafe extern "C-unwind" fn getnameinfo(l: L) -> c_int {
    // SAFETY: a function of the module; the strings stay at indices 1 and 2.
    unsafe {
        let host = ffi::luaL_optlstring(l, 1, std::ptr::null(), std::ptr::null_mut());
        let serv = ffi::luaL_optlstring(l, 2, std::ptr::null(), std::ptr::null_mut());
        if host.is_null() && serv.is_null() {
            raw::error(l, c"host and serv cannot be both nil");
        }
        ffi::lua_settop(l, 2);
        let make = |f: &Frame| -> Job {
            let arg = |i| {
                let s = ffi::lua_tolstring(f.l, f.at(i), std::ptr::null_mut());
                (!s.is_null()).then(|| CStr::from_ptr(s).to_owned())
            };
            let (host, serv) = (arg(1), arg(2));
            Box::new(move || -> Payload {
                let q = Query { family: libc::AF_UNSPEC, socktype: libc::SOCK_STREAM, flags: 0 };
                let r: NameInfo = sys::lookup(host.as_deref(), serv.as_deref(), q).map(|f| {
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
        work::call(l, make, getnameinfo_done)
    }
}

/// `dns.gethostname()`: this machine's host name.
unsafe extern "C-unwind" fn gethostname(l: L) -> c_int {
    // SAFETY: a function of the module; the name is copied by Lua, then dropped.
    unsafe {
        match sys::hostname() {
            Ok(name) => {
                ffi::lua_pushstring(l, name.as_ptr());
                1
            }
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"toip", toip),
    (c"tohostname", tohostname),
    (c"getaddrinfo", getaddrinfo),
    (c"getnameinfo", getnameinfo),
    (c"gethostname", gethostname),
];

/// `[-0, +1, m]` Pushes the module table, made once per Lua state.
///
/// # Safety
/// `l` is a valid state.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state.
    unsafe { raw::push_module_once(l, MODULE, |l| raw::push_functions(l, FUNCTIONS)) }
}
