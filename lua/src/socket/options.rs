//! `setoption`/`getoption` of TCP and UDP objects: one table of options per
//! protocol, one decoder of Lua values into the bytes `setsockopt` takes, and
//! one encoder back. Options set before a lazily made descriptor exists wait
//! in `Tcp::pending`. One option is ours, not the system's: `maxline`, kept
//! in the object.

use std::ffi::{CStr, c_int};
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::object::{MAX_VALUE, PendingOpt, Tcp, ok};
use crate::raw::{self, L, ffi};
use crate::sys;

/// What an option's value is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OptType {
    Bool,
    Int,
    /// `{on = boolean, timeout = seconds}`: a `linger`.
    Linger,
    /// An IPv4 address as a string (`"*"`: any): an `in_addr`.
    Ip4,
    /// `{multiaddr = ip, interface = ip}`: an `ip_mreq` (set only).
    Mreq4,
    /// `{multiaddr = ip6, interface = index}`: an `ipv6_mreq` (set only).
    Mreq6,
    /// A network interface's name (`SO_BINDTODEVICE`).
    Device,
    /// The pending error (`SO_ERROR`), as LuaSocket's message or nil (get only).
    Error,
    /// `Tcp::maxline`: an integer >= 0 (0: no limit), no system call.
    MaxLine,
}

/// The longest interface name, with its NUL (`IFNAMSIZ`).
const IFNAMSIZ: usize = 16;

/// An option: its name, level, number and type.
pub(super) type Opt = (&'static [u8], c_int, c_int, OptType);

/// The options of TCP objects.
pub(super) const TCP: &[Opt] = &[
    (b"bindtodevice", libc::SOL_SOCKET, libc::SO_BINDTODEVICE, OptType::Device),
    (b"error", libc::SOL_SOCKET, libc::SO_ERROR, OptType::Error),
    (b"keepalive", libc::SOL_SOCKET, libc::SO_KEEPALIVE, OptType::Bool),
    (b"reuseaddr", libc::SOL_SOCKET, libc::SO_REUSEADDR, OptType::Bool),
    (b"reuseport", libc::SOL_SOCKET, libc::SO_REUSEPORT, OptType::Bool),
    (b"linger", libc::SOL_SOCKET, libc::SO_LINGER, OptType::Linger),
    (b"tcp-nodelay", libc::IPPROTO_TCP, libc::TCP_NODELAY, OptType::Bool),
    (b"tcp-keepidle", libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, OptType::Int),
    (b"tcp-keepcnt", libc::IPPROTO_TCP, libc::TCP_KEEPCNT, OptType::Int),
    (b"tcp-keepintvl", libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, OptType::Int),
    (b"tcp-defer-accept", libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, OptType::Int),
    (b"tcp-fastopen", libc::IPPROTO_TCP, libc::TCP_FASTOPEN, OptType::Int),
    (b"tcp-fastopen-connect", libc::IPPROTO_TCP, libc::TCP_FASTOPEN_CONNECT, OptType::Int),
    (b"ipv6-v6only", libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, OptType::Bool),
    (b"recv-buffer-size", libc::SOL_SOCKET, libc::SO_RCVBUF, OptType::Int),
    (b"send-buffer-size", libc::SOL_SOCKET, libc::SO_SNDBUF, OptType::Int),
    (b"maxline", 0, 0, OptType::MaxLine),
];

/// The options of UDP objects (LuaSocket's list).
pub(super) const UDP: &[Opt] = &[
    (b"dontroute", libc::SOL_SOCKET, libc::SO_DONTROUTE, OptType::Bool),
    (b"error", libc::SOL_SOCKET, libc::SO_ERROR, OptType::Error),
    (b"broadcast", libc::SOL_SOCKET, libc::SO_BROADCAST, OptType::Bool),
    (b"reuseaddr", libc::SOL_SOCKET, libc::SO_REUSEADDR, OptType::Bool),
    (b"reuseport", libc::SOL_SOCKET, libc::SO_REUSEPORT, OptType::Bool),
    (b"ip-multicast-if", libc::IPPROTO_IP, libc::IP_MULTICAST_IF, OptType::Ip4),
    (b"ip-multicast-ttl", libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, OptType::Int),
    (b"ip-multicast-loop", libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, OptType::Bool),
    (b"ip-add-membership", libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, OptType::Mreq4),
    (b"ip-drop-membership", libc::IPPROTO_IP, libc::IP_DROP_MEMBERSHIP, OptType::Mreq4),
    (b"ipv6-unicast-hops", libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, OptType::Int),
    (b"ipv6-multicast-hops", libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, OptType::Int),
    (b"ipv6-multicast-loop", libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, OptType::Bool),
    (b"ipv6-add-membership", libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP, OptType::Mreq6),
    (b"ipv6-drop-membership", libc::IPPROTO_IPV6, libc::IPV6_DROP_MEMBERSHIP, OptType::Mreq6),
    (b"ipv6-v6only", libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, OptType::Bool),
    (b"recv-buffer-size", libc::SOL_SOCKET, libc::SO_RCVBUF, OptType::Int),
    (b"send-buffer-size", libc::SOL_SOCKET, libc::SO_SNDBUF, OptType::Int),
];

/// `[-0, +0, e]` The option of `list` named at index 2, raising for an
/// unknown one (or one that cannot be read, for `getoption`).
unsafe fn check_option(l: L, list: &[Opt], get: bool) -> Opt {
    // SAFETY: valid state in a C function.
    unsafe {
        let name = CStr::from_ptr(ffi::luaL_checklstring(l, 2, std::ptr::null_mut()));
        let settable_only = |ty| matches!(ty, OptType::Mreq4 | OptType::Mreq6);
        let readable_only = |ty| ty == OptType::Error;
        let usable = |ty| if get { !settable_only(ty) } else { !readable_only(ty) };
        match list.iter().find(|o| o.0 == name.to_bytes() && usable(o.3)) {
            Some(&o) => o,
            None => {
                let msg = ffi::lua_pushfstring(l, c"unsupported option '%s'".as_ptr(), name.as_ptr());
                ffi::luaL_argerror(l, 2, msg);
                unreachable!()
            }
        }
    }
}

/// `[-0, +0, e]` The IPv4 address in the string at `idx` (`"*"`: any),
/// raising with `what` if it is not one.
unsafe fn check_ip4(l: L, idx: c_int, what: &CStr) -> Ipv4Addr {
    // SAFETY: valid state; the string stays on the stack while parsed.
    unsafe {
        let s = raw::to_str(l, idx).map(|p| CStr::from_ptr(p).to_bytes());
        match s {
            Some(b"*") => Ipv4Addr::UNSPECIFIED,
            Some(s) => {
                std::str::from_utf8(s).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| raw::arg_error(l, 3, what))
            }
            None => raw::arg_error(l, 3, what),
        }
    }
}

/// `[-0, +0, e]` Encodes the value at index 3 as option type `ty` into
/// `value`; returns its length.
unsafe fn encode(l: L, ty: OptType, value: &mut [u8; MAX_VALUE]) -> usize {
    // SAFETY: valid state in a C function; fields are read onto the stack
    // and popped.
    unsafe {
        match ty {
            OptType::Bool => {
                if ffi::lua_type(l, 3) != ffi::LUA_TBOOLEAN {
                    raw::arg_error(l, 3, c"boolean expected");
                }
                value[..4].copy_from_slice(&(ffi::lua_toboolean(l, 3)).to_ne_bytes());
                4
            }
            OptType::Int => {
                let v = ffi::luaL_checkinteger(l, 3);
                let v = i32::try_from(v).unwrap_or_else(|_| raw::arg_error(l, 3, c"value out of range"));
                value[..4].copy_from_slice(&v.to_ne_bytes());
                4
            }
            OptType::Linger => {
                ffi::luaL_checktype(l, 3, ffi::LUA_TTABLE);
                ffi::lua_getfield(l, 3, c"on".as_ptr());
                if ffi::lua_type(l, -1) != ffi::LUA_TBOOLEAN {
                    raw::arg_error(l, 3, c"boolean 'on' field expected");
                }
                let on = ffi::lua_toboolean(l, -1);
                ffi::lua_getfield(l, 3, c"timeout".as_ptr());
                if ffi::lua_isinteger(l, -1) == 0 {
                    raw::arg_error(l, 3, c"integer 'timeout' field expected");
                }
                let secs = i32::try_from(ffi::lua_tointegerx(l, -1, std::ptr::null_mut()))
                    .unwrap_or_else(|_| raw::arg_error(l, 3, c"'timeout' out of range"));
                ffi::lua_pop(l, 2);
                value[..4].copy_from_slice(&on.to_ne_bytes());
                value[4..8].copy_from_slice(&secs.to_ne_bytes());
                8
            }
            OptType::Ip4 => {
                value[..4].copy_from_slice(&check_ip4(l, 3, c"invalid IPv4 address").octets());
                4
            }
            OptType::Mreq4 => {
                ffi::luaL_checktype(l, 3, ffi::LUA_TTABLE);
                ffi::lua_getfield(l, 3, c"multiaddr".as_ptr());
                let group = check_ip4(l, -1, c"invalid 'multiaddr' ip address");
                ffi::lua_getfield(l, 3, c"interface".as_ptr());
                let iface = if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                    Ipv4Addr::UNSPECIFIED
                } else {
                    check_ip4(l, -1, c"invalid 'interface' ip address")
                };
                ffi::lua_pop(l, 2);
                value[..4].copy_from_slice(&group.octets());
                value[4..8].copy_from_slice(&iface.octets());
                8
            }
            OptType::Mreq6 => {
                ffi::luaL_checktype(l, 3, ffi::LUA_TTABLE);
                ffi::lua_getfield(l, 3, c"multiaddr".as_ptr());
                let group = raw::to_str(l, -1)
                    .and_then(|p| CStr::from_ptr(p).to_str().ok())
                    .and_then(|s| s.parse::<Ipv6Addr>().ok())
                    .unwrap_or_else(|| raw::arg_error(l, 3, c"invalid 'multiaddr' ip address"));
                ffi::lua_getfield(l, 3, c"interface".as_ptr());
                let iface = if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
                    0
                } else if ffi::lua_isinteger(l, -1) != 0 {
                    u32::try_from(ffi::lua_tointegerx(l, -1, std::ptr::null_mut()))
                        .unwrap_or_else(|_| raw::arg_error(l, 3, c"'interface' out of range"))
                } else {
                    raw::arg_error(l, 3, c"integer 'interface' field expected")
                };
                ffi::lua_pop(l, 2);
                value[..16].copy_from_slice(&group.octets());
                value[16..20].copy_from_slice(&iface.to_ne_bytes());
                20
            }
            OptType::Device => {
                let mut len = 0;
                let name = ffi::luaL_checklstring(l, 3, &mut len);
                if len >= IFNAMSIZ {
                    raw::arg_error(l, 3, c"interface name too long");
                }
                value[..len].copy_from_slice(std::slice::from_raw_parts(name.cast(), len));
                value[len] = 0;
                len + 1
            }
            OptType::Error => unreachable!("get only"),
            OptType::MaxLine => unreachable!("not a system option"),
        }
    }
}

/// `[-0, +0, e]` The `maxline` value at index 3: an integer >= 0.
unsafe fn check_maxline(l: L) -> usize {
    // SAFETY: valid state in a C function.
    unsafe {
        let v = ffi::luaL_checkinteger(l, 3);
        usize::try_from(v).unwrap_or_else(|_| raw::arg_error(l, 3, c"non-negative integer expected"))
    }
}

/// `obj:setoption(name, value)` for an object `t` with the options `list`.
pub(super) unsafe fn set(l: L, t: *mut Tcp, list: &[Opt]) -> c_int {
    // SAFETY: a method of the module; `t` is live.
    unsafe {
        let (_, level, name, ty) = check_option(l, list, false);
        if ty == OptType::MaxLine {
            let max = check_maxline(l);
            if (*t).closed {
                return raw::push_fail(l, c"closed");
            }
            (*t).maxline = max;
            return ok(l);
        }
        let mut value = [0u8; MAX_VALUE];
        let len = encode(l, ty, &mut value);
        if (*t).closed {
            return raw::push_fail(l, c"closed");
        }
        if (*t).fd < 0 {
            (*t).pending.retain(|o| (o.level, o.name) != (level, name) || ty == OptType::Mreq4 || ty == OptType::Mreq6);
            (*t).pending.push(PendingOpt { level, name, value, len });
            return ok(l);
        }
        match sys::setsockopt((*t).fd, level, name, &value[..len]) {
            Ok(()) => ok(l),
            Err(e) => raw::push_fail(l, sys::strerror(e)),
        }
    }
}

/// `obj:getoption(name)` for an object `t` with the options `list`.
pub(super) unsafe fn get(l: L, t: *mut Tcp, list: &[Opt]) -> c_int {
    // SAFETY: a method of the module; `t` is live.
    unsafe {
        let (_, level, name, ty) = check_option(l, list, true);
        if ty == OptType::MaxLine && !(*t).closed {
            ffi::lua_pushinteger(l, (*t).maxline as ffi::lua_Integer);
            return 1;
        }
        if (*t).fd < 0 {
            return raw::push_fail(l, c"closed");
        }
        let mut value = [0u8; IFNAMSIZ];
        let want = match ty {
            OptType::Linger => 8,
            OptType::Device => IFNAMSIZ,
            _ => 4,
        };
        let got = match sys::getsockopt((*t).fd, level, name, &mut value[..want]) {
            Ok(n) => n,
            Err(e) => return raw::push_fail(l, sys::strerror(e)),
        };
        let a = i32::from_ne_bytes(value[..4].try_into().expect("4 bytes"));
        match ty {
            OptType::Bool => ffi::lua_pushboolean(l, (a != 0) as c_int),
            OptType::Int => ffi::lua_pushinteger(l, a as ffi::lua_Integer),
            OptType::Linger => {
                let b = i32::from_ne_bytes(value[4..8].try_into().expect("4 bytes"));
                ffi::lua_createtable(l, 0, 2);
                ffi::lua_pushboolean(l, (a != 0) as c_int);
                ffi::lua_setfield(l, -2, c"on".as_ptr());
                ffi::lua_pushinteger(l, b as ffi::lua_Integer);
                ffi::lua_setfield(l, -2, c"timeout".as_ptr());
            }
            OptType::Ip4 => {
                let ip = Ipv4Addr::new(value[0], value[1], value[2], value[3]);
                let mut text = [0u8; 16];
                let mut w = &mut text[..];
                let _ = write!(w, "{ip}");
                let n = 16 - w.len();
                ffi::lua_pushlstring(l, text.as_ptr().cast(), n);
            }
            OptType::Device => {
                let n = value[..got.min(IFNAMSIZ)].iter().position(|&b| b == 0).unwrap_or(got.min(IFNAMSIZ));
                ffi::lua_pushlstring(l, value.as_ptr().cast(), n);
            }
            OptType::Error => match a {
                0 => ffi::lua_pushnil(l),
                e => {
                    ffi::lua_pushstring(l, sys::strerror(e).as_ptr());
                }
            },
            OptType::Mreq4 | OptType::Mreq6 => unreachable!("set only"),
            OptType::MaxLine => unreachable!("answered above"),
        }
        1
    }
}
